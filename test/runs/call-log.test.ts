// The log of a run's gateway calls in its agent's runtime folder: on a real server with a real
// box, an agent's run (the scripted model through the model gateway, a command through the tool
// gateway) leaves /run/warren/<agent id>/logs/<run id>.log with one line per call, its uid's
// alone (0600 in a 0700 folder), holding no secret (a secret of the agent is echoed by the model
// and names its model); another agent of the isolated machine cannot read it. Beside it: the
// cap of a log (its last line says it is full) and a `logs` link of the agent's, refused.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import {
  mkdtempSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  mkdirSync,
  existsSync,
  lstatSync,
} from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { RunCallLog } from "../../src/runs/call-log.js";
import { boxSkipReason, testProvider } from "../box/fixture.js";
import { eventsOfType, putHomeFile, runAgent } from "../support/agent-runs.js";
import { builtins } from "../support/org.js";
import { readProbe } from "../support/probe.js";
import { startTestServer, type TestServer } from "../support/server.js";

const SEED = "seeded-secret-3f9a7c1e5b";
const ALLOW_ALL = `@id("all") permit(principal, action, resource);`;
const none = { redactText: (s: string) => s };

describe("a run's call log: its cap and its folder", () => {
  let dir = "";
  before(() => (dir = mkdtempSync(path.join(os.tmpdir(), "call-log-"))));
  after(() => rmSync(dir, { recursive: true, force: true }));
  const uid = process.getuid!();

  test("lines until the cap, then one last line that says it is full", async () => {
    const errors: unknown[] = [];
    const log = new RunCallLog({
      dir,
      runId: "run_cap",
      uid,
      redactor: none,
      cap: 1000,
      onError: (e) => errors.push(e),
    });
    for (let i = 0; i < 50; i++)
      await log.note("tool_call", {
        tool: `t${i}`,
        decision: "allow",
        duration_ms: i,
        arguments: { x: SEED },
      });
    await log.note("output", { data: SEED });
    await log.close();
    const file = path.join(dir, "logs", "run_cap.log");
    const text = readFileSync(file, "utf8");
    assert.ok(text.length <= 1000, String(text.length));
    const lines = text
      .trimEnd()
      .split("\n")
      .map((l) => JSON.parse(l));
    assert.ok(lines.length > 3 && lines.length < 50, String(lines.length));
    assert.deepEqual(lines[0], { at: lines[0].at, kind: "tool", name: "t0", status: "ok", duration_ms: 0 });
    assert.equal(lines.at(-1).status, "full");
    assert.equal(lines.at(-1).cap_bytes, 1000);
    assert.doesNotMatch(text, new RegExp(SEED), "arguments and other events are never logged");
    assert.equal(statSync(file).mode & 0o777, 0o600);
    assert.equal(statSync(path.dirname(file)).mode & 0o777, 0o700);
    assert.deepEqual(errors, []);
  });

  test("a `logs` that is a link is refused: nothing is written through it", async () => {
    const agentDir = path.join(dir, "agent");
    const elsewhere = path.join(dir, "elsewhere");
    mkdirSync(agentDir);
    mkdirSync(elsewhere);
    symlinkSync(elsewhere, path.join(agentDir, "logs"));
    const errors: unknown[] = [];
    const log = new RunCallLog({
      dir: agentDir,
      runId: "run_l",
      uid,
      redactor: none,
      onError: (e) => errors.push(e),
    });
    await log.note("model_call", {
      provider: "script",
      model: "m",
      status: "ok",
      latency_ms: 1,
      tokens_in: 1,
      tokens_out: 1,
    });
    await log.close();
    assert.equal(existsSync(path.join(elsewhere, "run_l.log")), false);
    assert.equal(errors.length, 1);
  });

  test(
    "a FIFO the agent left at the log's name is refused at once, nothing held open",
    { timeout: 20_000 },
    async () => {
      const agentDir = path.join(dir, "agent-fifo");
      mkdirSync(path.join(agentDir, "logs"), { recursive: true });
      execFileSync("mkfifo", [path.join(agentDir, "logs", "run_f.log")]);
      const errors: unknown[] = [];
      const log = new RunCallLog({
        dir: agentDir,
        runId: "run_f",
        uid,
        redactor: none,
        onError: (e) => errors.push(e),
      });
      await log.note("tool_call", { tool: "t", decision: "allow", duration_ms: 1 });
      await log.close();
      assert.equal(errors.length, 1, "the log was refused");
      assert.ok(lstatSync(path.join(agentDir, "logs", "run_f.log")).isFIFO(), "the FIFO is left as it was");
    },
  );
});

describe("a run's call log in the runtime folder of a real box", { skip: boxSkipReason() ?? false }, () => {
  let t: TestServer;
  let org = "";
  let machine = "";
  let a = "";
  let b = "";

  before(async () => {
    t = await startTestServer();
    org = (await t.call("POST", "/api/orgs", { name: "logs" })).body.id;
    const m = await t.call("POST", "/api/machines", { org_id: org, name: "m", trust: "isolated" });
    assert.equal(m.status, 201, JSON.stringify(m.body));
    machine = m.body.id;
    const s = await t.call("POST", "/api/secrets", {
      org_id: org,
      name: "SEED",
      description: "",
      value: SEED,
      use: "env",
      grants: [{ scope: "org", id: org }],
    });
    assert.equal(s.status, 201, JSON.stringify(s.body));
    const mk = async (name: string, spec: Record<string, unknown> = {}) => {
      const r = await t.call("POST", "/api/agents", { org_id: org, machine_id: machine, name, ...spec });
      assert.equal(r.status, 201, JSON.stringify(r.body));
      return r.body.id as string;
    };
    // the model is named by the secret (its line names it): the log holds it redacted
    a = await mk("a", {
      kind: "assistant",
      model: { provider: "script", name: `${SEED}.json` },
      tools: builtins("run_command"),
      tool_policy: ALLOW_ALL,
    });
    b = await mk("b");
  });

  after(async () => {
    if (machine) await t?.call("POST", `/api/machines/${machine}/stop`);
    await t?.close();
  });

  const exec = async (agent: string, command: string) => {
    const r = await t.call("POST", `/api/agents/${agent}/exec`, { command, timeout_ms: 60_000 });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    return r.body as { stdout: string; stderr: string; exit_code: number };
  };
  const hostDir = () =>
    path.join(t.stateRoot, "run", testProvider === "oci" ? "oci-boxes" : "boxes", machine, "warren", a);

  test("one line per gateway call, the agent's alone, no secret in it; another agent cannot read it", async () => {
    await putHomeFile(
      t,
      a,
      `${SEED}.json`,
      JSON.stringify({
        turns: [
          { tool_calls: [{ name: "run_command", input: { command: 'echo "seed=$SEED"' } }] },
          { text: `The secret is ${SEED}.`, usage: { input_tokens: 30, output_tokens: 4 } },
        ],
      }),
    );
    const { run, events } = await runAgent(t, a, "echo the secret");
    assert.equal(run.status, "succeeded", JSON.stringify({ run, events }).slice(0, 4000));
    const modelCalls = eventsOfType(events, "model_call");
    const toolCalls = eventsOfType(events, "tool_call");
    assert.equal(modelCalls.length, 2);
    assert.equal(toolCalls.length, 1);

    // in the box: the agent reads its own log
    const inBox = `/run/warren/${a}/logs/${run.id}.log`;
    const own = await exec(a, `cat ${inBox}; stat -c '%a %u' /run/warren/${a}/logs ${inBox}; id -u`);
    assert.equal(own.exit_code, 0, own.stderr);
    const out = own.stdout.trimEnd().split("\n");
    const uid = out.at(-1)!;
    assert.deepEqual(out.slice(-3, -1), [`700 ${uid}`, `600 ${uid}`], own.stdout + own.stderr);
    const lines = out.slice(0, -3).map((l) => JSON.parse(l));
    assert.deepEqual(
      lines.map((l) => [l.kind, l.name, l.status]),
      [
        ["model", "script:[redacted].json", "ok"],
        ["tool", "run_command", "ok"],
        ["model", "script:[redacted].json", "ok"],
      ],
    );
    assert.equal(lines[2].tokens_in, 30);
    assert.equal(lines[2].tokens_out, 4);
    for (const l of lines) {
      assert.ok(Number.isFinite(Date.parse(l.at)), l.at);
      assert.equal(typeof l.duration_ms, "number");
    }
    // the same file on the host, owned by the agent's uid; no secret in it
    const file = path.join(hostDir(), "logs", `${run.id}.log`);
    const text = readFileSync(file, "utf8");
    assert.doesNotMatch(text, new RegExp(SEED));
    assert.match(
      JSON.stringify(toolCalls),
      /seed=\[redacted\]/,
      "the command did echo it (redacted in the record)",
    );
    const st = statSync(file);
    assert.equal(String(st.uid), uid);
    assert.equal(st.mode & 0o777, 0o600);

    // another agent of the isolated machine: EACCES on the folder and the file
    const r = await exec(b, readProbe([`/run/warren/${a}/logs/`, inBox]));
    assert.equal(r.stdout.trim(), "EACCES\nEACCES", r.stdout + r.stderr);
  });

  test("the log goes with the box", async () => {
    assert.ok(existsSync(path.join(hostDir(), "logs")));
    const stop = await t.call("POST", `/api/machines/${machine}/stop`);
    assert.ok(stop.status < 300, JSON.stringify(stop.body));
    assert.equal(existsSync(hostDir()), false);
  });
});
