// Approvals across a server restart: a run waiting for a decision when the server stops is
// suspended, not ended; the next server on the same state and database takes it up again
// (same run, its events going on), its approval still waiting with the same digest. A decision
// after the restart lets the call run exactly once (allow) or never (deny, the model getting
// the decider's message); a call whose kept arguments were redacted (they held a secret) is
// refused rather than run with other arguments.
import assert from "node:assert/strict";
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { eq } from "drizzle-orm";
import { boxSkipReason } from "../box/fixture.js";
import { schema } from "../../src/store/index.js";
import { dbLegs } from "../support/db.js";
import { eventsOfType, putHomeFile, TERMINAL_STATUSES } from "../support/agent-runs.js";
import { waitFor } from "../conversations/support.js";
import { startTestServer, type TestServer } from "../support/server.js";
import { approvalAgent } from "./support.js";
import { agentSecret, orgAndMachine } from "../support/org.js";

for (const leg of dbLegs)
  describe(
    `approvals across a restart on ${leg.name}`,
    { skip: boxSkipReason() ?? leg.skip ?? false },
    () => {
      let stateRoot: string;
      let db: { url: string | undefined; drop(): Promise<void> } | undefined;
      let t: TestServer | undefined;
      let org: { id: string };
      let machine: { id: string };
      let n = 0;
      // the same state (and database) across the restart
      const start = async () =>
        (t = await startTestServer({
          listen: true,
          stateRoot,
          env: db?.url ? { DATABASE_URL: db.url } : {},
        }));
      const restart = async () => {
        const s = t!;
        t = undefined;
        await s.close();
        return start();
      };
      const call = (method: string, url: string, body?: unknown) => t!.call(method, url, body);

      const agentWith = async (turns: unknown[]) => {
        const r = await call("POST", "/api/agents", approvalAgent(org.id, machine.id, `r${++n}`));
        assert.equal(r.status, 201, JSON.stringify(r.body));
        await putHomeFile(t!, r.body.id, "turns.json", JSON.stringify({ turns }));
        return r.body as { id: string };
      };
      const startRun = async (agentId: string) => {
        const r = await call("POST", `/api/agents/${agentId}/runs`, { kind: "agent", input: "go" });
        assert.equal(r.status, 202, JSON.stringify(r.body));
        return r.body.id as string;
      };
      const waitingApproval = (runId: string) =>
        waitFor("the run to wait for an approval", async () => {
          const run = (await call("GET", `/api/runs/${runId}`)).body;
          if (run.status !== "waiting" || run.waiting?.reason !== "approval") return undefined;
          const list = (await call("GET", `/api/runs/${runId}/approvals`)).body.items;
          const a = list[0];
          return a?.status === "waiting" ? { run, approval: a, approvals: list.length } : undefined;
        });
      const ended = (runId: string) =>
        waitFor("the run to end", async () => {
          const run = (await call("GET", `/api/runs/${runId}`)).body;
          return TERMINAL_STATUSES.includes(run.status) ? run : undefined;
        });
      const homeFile = (agentId: string, p: string) =>
        fs.readFile(path.join(stateRoot, "workspaces", machine.id, agentId, p), "utf8").catch(() => null);
      const eventsOf = async (runId: string) => (await call("GET", `/api/runs/${runId}/events`)).body.items;

      before(async () => {
        stateRoot = await fs.mkdtemp(path.join(os.tmpdir(), "warren-apr-"));
        db = await leg.fresh();
        await start();
        ({ org, machine } = await orgAndMachine(call, "approvals-restart"));
      });
      after(async () => {
        await t?.close();
        await db?.drop();
        await fs.rm(stateRoot, { recursive: true, force: true, maxRetries: 3 });
      });

      test("allowed after a restart: the run and its approval still wait, the call runs exactly once, the run succeeds", async () => {
        const a = await agentWith([
          { tool_calls: [{ name: "write_file", input: { path: "once.txt", content: "approved" } }] },
          { tool_calls: [{ name: "read_file", input: { path: "once.txt" } }] },
          { text: "Written after the restart." },
        ]);
        const runId = await startRun(a.id);
        const before = await waitingApproval(runId);
        assert.equal(await homeFile(a.id, "once.txt"), null);
        const kept = await t!.server.store.db
          .select()
          .from(schema.runSuspensions)
          .where(eq(schema.runSuspensions.runId, runId));
        assert.equal(kept.length, 1, "where the run stands is kept while it waits, for a server that dies");
        assert.equal(kept[0]!.agentId, a.id);

        await restart();
        // the same run and the same approval, still waiting, with the same digest
        const { run, approval, approvals } = await waitingApproval(runId);
        assert.equal(run.id, runId);
        assert.equal(run.status, "waiting");
        assert.equal(run.waiting.reason, "approval");
        assert.equal(approvals, 1, "no second approval is written for the same call");
        assert.equal(approval.id, before.approval.id);
        assert.equal(approval.tool_call_id, before.approval.tool_call_id);
        assert.equal(approval.args_sha256, before.approval.args_sha256);
        assert.equal(approval.arguments.content, "approved");
        const listed = await call("GET", `/api/orgs/${org.id}/approvals?status=waiting`);
        assert.ok(listed.body.items.some((x: { id: string }) => x.id === approval.id));
        assert.equal(await homeFile(a.id, "once.txt"), null, "nothing runs before the decision");

        const ok = await call("POST", `/api/approvals/${approval.id}`, {
          decision: "allow",
          args_sha256: before.approval.args_sha256,
        });
        assert.equal(ok.status, 200, JSON.stringify(ok.body));
        assert.equal(ok.body.status, "allowed");
        const done = await ended(runId);
        assert.equal(done.status, "succeeded", JSON.stringify(done));
        assert.equal(done.output, "Written after the restart.");
        assert.equal(await homeFile(a.id, "once.txt"), "approved");

        const events = await eventsOf(runId);
        const writes = eventsOfType(events, "tool_call").filter((e) => e.tool === "write_file");
        assert.equal(writes.length, 1, "the call ran exactly once");
        assert.equal(writes[0].decision, "allow");
        const reads = eventsOfType(events, "tool_call").filter((e) => e.tool === "read_file");
        assert.match(reads[0].output, /approved/, "the loop went on to the model after the call");
        assert.equal(eventsOfType(events, "resumed").length, 1, "its events go on after the restart");
        assert.equal(eventsOfType(events, "lost").length, 0);
        assert.equal(eventsOfType(events, "exit").length, 1);
        assert.deepEqual(
          eventsOfType(events, "approval").map((e) => e.status),
          ["waiting", "waiting", "allowed"],
        );
        assert.equal(done.usage.tool_calls, 2);
        // its usage goes on from where it stood: the model's answer before the restart counts too
        assert.equal(done.usage.steps, 3);
        assert.equal(done.receipt.model_calls, 3);
        assert.ok(done.usage.tokens_in > 0);
        const left = await t!.server.store.db
          .select()
          .from(schema.runSuspensions)
          .where(eq(schema.runSuspensions.runId, runId));
        assert.equal(left.length, 0, "what was kept goes once the run is taken up");
      });

      test("denied after two restarts: the tool never runs and the model's next call gets the decider's message", async () => {
        const a = await agentWith([
          { tool_calls: [{ name: "write_file", input: { path: "never.txt", content: "no" } }] },
          { text: "Understood, not written." },
        ]);
        const runId = await startRun(a.id);
        const before = await waitingApproval(runId);
        // twice: the run taken up again is suspended again by the next stop
        await restart();
        await waitingApproval(runId);
        await restart();
        const { approval, approvals } = await waitingApproval(runId);
        assert.equal(approval.id, before.approval.id);
        assert.equal(approvals, 1);
        const r = await call("POST", `/api/approvals/${approval.id}`, {
          decision: "deny",
          message: "not after a restart",
          args_sha256: approval.args_sha256,
        });
        assert.equal(r.status, 200, JSON.stringify(r.body));
        const done = await ended(runId);
        assert.equal(done.status, "succeeded", JSON.stringify(done));
        assert.equal(done.output, "Understood, not written.");
        assert.equal(await homeFile(a.id, "never.txt"), null, "a declined call never runs its tool");
        const calls = eventsOfType(await eventsOf(runId), "tool_call");
        assert.equal(calls.length, 1);
        assert.equal(calls[0].decision, "deny");
        assert.match(calls[0].output, /declined by operator@localhost: not after a restart/);
        assert.equal(done.usage.tool_refusals, 1);
      });

      test("a call whose kept arguments held a secret is refused after a restart, never run with other arguments", async () => {
        const value = "rst-7Kp2-qW93-secret-value";
        const a = await agentWith([
          { tool_calls: [{ name: "write_file", input: { path: "key.txt", content: `key ${value}` } }] },
          { text: "Could not write it." },
        ]);
        await agentSecret(call, org.id, a.id, { name: "RESTART_KEY", value });
        const runId = await startRun(a.id);
        await waitingApproval(runId);
        const s1 = t!;
        t = undefined;
        await s1.close();
        // what the next server takes the run up from is kept redacted
        await start();
        const done = await ended(runId);
        assert.equal(done.status, "succeeded", JSON.stringify(done));
        assert.equal(done.output, "Could not write it.");
        assert.equal(await homeFile(a.id, "key.txt"), null);
        const list = (await call("GET", `/api/runs/${runId}/approvals`)).body.items;
        assert.equal(list.length, 1);
        assert.equal(list[0].status, "expired");
        assert.match(list[0].message, /could not be restored/);
        const calls = eventsOfType(await eventsOf(runId), "tool_call");
        assert.equal(calls[0].decision, "deny");
        assert.match(calls[0].output, /could not be restored/);
        const events = JSON.stringify(await eventsOf(runId));
        assert.ok(!events.includes(value), "the secret is in no record");
      });

      test("a conversation's turn waiting across a restart goes on as the same turn; its answer is the conversation's next message", async () => {
        const a = await agentWith([
          { tool_calls: [{ name: "write_file", input: { path: "turn.txt", content: "from the turn" } }] },
          { text: "Written in the turn." },
        ]);
        const c = (await call("POST", `/api/agents/${a.id}/conversations`, {})).body;
        const sent = await call("POST", `/api/conversations/${c.id}/messages`, { text: "write it" });
        assert.equal(sent.status, 202, JSON.stringify(sent.body));
        const runId = sent.body.run_id as string;
        const before = await waitingApproval(runId);
        await restart();
        const { approval, approvals } = await waitingApproval(runId);
        assert.equal(approval.id, before.approval.id, "the same approval, still waiting");
        assert.equal(approvals, 1);
        assert.equal(await homeFile(a.id, "turn.txt"), null, "nothing runs before the decision");
        const ok = await call("POST", `/api/approvals/${approval.id}`, {
          decision: "allow",
          args_sha256: approval.args_sha256,
        });
        assert.equal(ok.status, 200, JSON.stringify(ok.body));
        const done = await ended(runId);
        assert.equal(done.status, "succeeded", JSON.stringify(done));
        assert.equal(await homeFile(a.id, "turn.txt"), "from the turn");
        const events = await eventsOf(runId);
        assert.equal(eventsOfType(events, "interrupted").length, 0, "the turn was not interrupted");
        assert.equal(eventsOfType(events, "tool_call").filter((e) => e.tool === "write_file").length, 1);
        const messages = (await call("GET", `/api/conversations/${c.id}/messages`)).body.items.map(
          (m: { role: string; text: string }) => `${m.role}: ${m.text}`,
        );
        assert.deepEqual(messages, ["user: write it", "agent: Written in the turn."]);
      });

      test("its time limit counts from its start: taken up past it, the run times out and the call never runs", async () => {
        const a = await agentWith([
          { tool_calls: [{ name: "write_file", input: { path: "late.txt", content: "late" } }] },
          { text: "Should not be reached." },
        ]);
        const r = await call("POST", `/api/agents/${a.id}/runs`, {
          kind: "agent",
          input: "go",
          timeout_s: 10,
        });
        assert.equal(r.status, 202, JSON.stringify(r.body));
        const runId = r.body.id as string;
        const { run } = await waitingApproval(runId);
        const limitAt = Date.parse(run.started_at) + 10_000;
        const s1 = t!;
        t = undefined;
        await s1.close();
        // the limit passes while no server is up
        await waitFor("the run's limit to pass", async () => Date.now() > limitAt);
        await start();
        const done = await ended(runId);
        assert.equal(done.status, "timed_out", JSON.stringify(done));
        assert.match(done.status_reason, /ran past its 10 s limit/);
        assert.equal(await homeFile(a.id, "late.txt"), null, "the call never ran");
        const list = (await call("GET", `/api/runs/${runId}/approvals`)).body.items;
        assert.equal(list.length, 1);
        assert.equal(list[0].status, "expired");
        assert.match(list[0].message, /the run ended before a decision/);
        const allowed = eventsOfType(await eventsOf(runId), "tool_call").filter(
          (e) => e.decision === "allow",
        );
        assert.equal(allowed.length, 0, "no call was allowed to run");
      });
    },
  );
