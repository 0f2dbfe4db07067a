// Approvals across a crash: a real `warren serve` killed with SIGKILL while a run's call waits
// for a decision. Nothing of its stop ran, yet the next server takes the run up (same run, same
// approval, same digest) from where it stood, kept while it waited; allowed, the call runs
// exactly once.
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { test } from "node:test";
import { LocalProvider } from "../../src/boxes/local/provider.js";
import { boxSkipReason } from "../box/fixture.js";
import { waitFor } from "../conversations/support.js";
import { eventsOfType, TERMINAL_STATUSES } from "../support/agent-runs.js";
import { builtCli, startServe, type Served } from "../support/serve.js";
import { approvalAgent } from "./support.js";

const OWNER = "owner@crash.test";

test(
  "SIGKILL while a call waits for its approval: the next server takes the run up, the call runs once",
  {
    skip:
      boxSkipReason() ?? (existsSync(builtCli) ? false : "dist/cli/main.js is missing: run npm run build"),
  },
  async () => {
    const stateRoot = await mkdtemp(path.join(os.tmpdir(), "warren-apr-crash-"));
    const env = { BOX_IDLE_S: "3600" };
    let s: Served | undefined;
    const call = (method: string, url: string, body?: object | string, type?: string) =>
      s!.call(method, url, body, { as: OWNER, ...(type ? { type } : {}) });
    try {
      s = await startServe({ stateRoot, env });
      const org = (await call("POST", "/api/orgs", { name: "crash" })).body;
      const machine = (await call("POST", "/api/machines", { org_id: org.id, name: "m" })).body;
      const agent = await call("POST", "/api/agents", approvalAgent(org.id, machine.id, "a"));
      assert.equal(agent.status, 201, JSON.stringify(agent.body));
      const a = agent.body as { id: string };
      const turns = [
        { tool_calls: [{ name: "write_file", input: { path: "once.txt", content: "approved" } }] },
        { tool_calls: [{ name: "read_file", input: { path: "once.txt" } }] },
        { text: "Written after the crash." },
      ];
      const put = await call(
        "PUT",
        `/api/agents/${a.id}/files/turns.json`,
        JSON.stringify({ turns }),
        "application/octet-stream",
      );
      assert.equal(put.status, 204, JSON.stringify(put.body));
      const started = await call("POST", `/api/agents/${a.id}/runs`, { kind: "agent", input: "go" });
      assert.equal(started.status, 202, JSON.stringify(started.body));
      const runId = started.body.id as string;
      const waiting = () =>
        waitFor("the run to wait for an approval", async () => {
          const run = (await call("GET", `/api/runs/${runId}`)).body;
          if (run.status !== "waiting") return undefined;
          const list = (await call("GET", `/api/runs/${runId}/approvals`)).body.items;
          return list[0]?.status === "waiting" ? { approval: list[0], approvals: list.length } : undefined;
        });
      const before = await waiting();
      const homeFile = () =>
        readFile(path.join(stateRoot, "workspaces", machine.id, a.id, "once.txt"), "utf8").catch(() => null);

      await s.kill();
      s = undefined;
      s = await startServe({ stateRoot, env });
      const after = await waiting();
      assert.equal(after.approval.id, before.approval.id, "the same approval");
      assert.equal(after.approval.args_sha256, before.approval.args_sha256);
      assert.equal(after.approvals, 1, "no second approval for the same call");
      assert.equal(await homeFile(), null, "nothing runs before the decision");
      const ok = await call("POST", `/api/approvals/${after.approval.id}`, {
        decision: "allow",
        args_sha256: after.approval.args_sha256,
      });
      assert.equal(ok.status, 200, JSON.stringify(ok.body));
      const done = await waitFor("the run to end", async () => {
        const run = (await call("GET", `/api/runs/${runId}`)).body;
        return TERMINAL_STATUSES.includes(run.status) ? run : undefined;
      });
      assert.equal(done.status, "succeeded", JSON.stringify(done));
      assert.equal(done.output, "Written after the crash.");
      assert.equal(await homeFile(), "approved");
      const events = (await call("GET", `/api/runs/${runId}/events`)).body.items;
      const writes = eventsOfType(events, "tool_call").filter((e) => e.tool === "write_file");
      assert.equal(writes.length, 1, "the call ran exactly once");
      assert.equal(eventsOfType(events, "lost").length, 0, "the run was not lost");
      assert.equal(eventsOfType(events, "exit").length, 1);
    } finally {
      await s?.stop();
      // boxes a failed test left (the server's stop ends those it knows)
      const provider = new LocalProvider({ stateRoot, runRoot: path.join(stateRoot, "run") });
      for (const b of await provider.list()) await provider.remove(b.id).catch(() => undefined);
      await rm(stateRoot, { recursive: true, force: true, maxRetries: 3 });
    }
  },
);
