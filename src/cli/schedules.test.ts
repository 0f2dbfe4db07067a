import assert from "node:assert/strict";
import { test } from "node:test";
import { UsageError } from "./command.js";
import { parseCli } from "./parse.js";

const params = (argv: string[]) => {
  const c = parseCli(argv, {}).command;
  assert.notEqual(c.kind, "help");
  return c.kind === "help" ? {} : (c.params as Record<string, unknown>);
};

test("schedules create reads the timing, the policies and the run", () => {
  assert.deepEqual(
    params([
      "schedules",
      "create",
      "agt_1",
      "--cron",
      "0 9 * * mon-fri",
      "--timezone",
      "Europe/Paris",
      "--overlap",
      "queue_one",
      "--catch-up",
      "none",
      "--",
      "echo",
      "hi",
    ]),
    {
      agentId: "agt_1",
      body: {
        kind: "command",
        argv: ["echo", "hi"],
        cron: "0 9 * * mon-fri",
        timezone: "Europe/Paris",
        overlap: "queue_one",
        catch_up: "none",
      },
    },
  );
  assert.deepEqual(
    params(["schedules", "create", "agt_1", "--every-s", "60", "--input", "report", "--paused"]),
    {
      agentId: "agt_1",
      body: { every_s: 60, input: "report", paused: true },
    },
  );
  assert.deepEqual(params(["schedules", "update", "sch_1", "--command", "true"]), {
    id: "sch_1",
    body: { kind: "command", command: "true" },
  });
});

test("schedules refuses what it cannot send", () => {
  for (const [argv, msg] of [
    [["schedules", "create", "agt_1", "--input", "x"], /exactly one of --cron or --every-s/],
    [["schedules", "create", "agt_1", "--cron", "* * * * *", "--every-s", "5"], /exactly one/],
    [["schedules", "create", "agt_1", "--every-s", "5", "--overlap", "never"], /--overlap must be one of/],
    [["schedules", "create", "agt_1", "--every-s", "x"], /--every-s/],
    [["schedules", "update", "sch_1"], /at least one field/],
  ] as const)
    assert.throws(
      () => parseCli([...argv], {}),
      (err: unknown) => err instanceof UsageError && msg.test(err.message),
      argv.join(" "),
    );
});
