// Approvals on a real server: a permit annotated @approval("required") makes a tool call wait
// (the run `waiting`, waiting.reason approval) with a record naming the exact call; a decision
// carries the arguments' SHA-256. Allowed: the tool runs. Denied: the model gets the decider's
// message and the tool never runs. Stale (other arguments, a call no longer waiting): 409, and
// it never lands on another call.
import assert from "node:assert/strict";
import fs from "node:fs/promises";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { eq } from "drizzle-orm";
import { boxSkipReason } from "../box/fixture.js";
import { schema } from "../../src/store/index.js";
import { eventsOfType, putHomeFile, TERMINAL_STATUSES } from "../support/agent-runs.js";
import { startTestServer, type TestServer } from "../support/server.js";
import { allEvents, waitFor } from "../conversations/support.js";
import { approvalAgent } from "./support.js";
import { agentSecret, orgAndMachine } from "../support/org.js";

describe("approvals", { skip: boxSkipReason() ?? false }, () => {
  let t: TestServer;
  let org: { id: string };
  let machine: { id: string };
  let n = 0;

  const agentWith = async (turns: unknown[]) => {
    const r = await t.call("POST", "/api/agents", approvalAgent(org.id, machine.id, `a${++n}`));
    assert.equal(r.status, 201, JSON.stringify(r.body));
    await putHomeFile(t, r.body.id, "turns.json", JSON.stringify({ turns }));
    return r.body as { id: string };
  };
  const start = async (agentId: string) => {
    const r = await t.call("POST", `/api/agents/${agentId}/runs`, { kind: "agent", input: "go" });
    assert.equal(r.status, 202, JSON.stringify(r.body));
    return r.body.id as string;
  };
  /** The approval waiting on the run (the n-th of the run's approvals), once the run waits. */
  const waitingApproval = (runId: string, nth = 0) =>
    waitFor("the run to wait for an approval", async () => {
      const run = (await t.call("GET", `/api/runs/${runId}`)).body;
      if (run.status !== "waiting") return undefined;
      const list = (await t.call("GET", `/api/runs/${runId}/approvals`)).body.items;
      const a = list[nth];
      return a?.status === "waiting" ? { run, approval: a } : undefined;
    });
  const ended = (runId: string) =>
    waitFor("the run to end", async () => {
      const run = (await t.call("GET", `/api/runs/${runId}`)).body;
      return TERMINAL_STATUSES.includes(run.status) ? run : undefined;
    });
  const homeFile = (agentId: string, p: string) =>
    fs.readFile(path.join(t.stateRoot, "workspaces", machine.id, agentId, p), "utf8").catch(() => null);

  before(async () => {
    t = await startTestServer({ listen: true });
    ({ org, machine } = await orgAndMachine(t.call, "approvals"));
  });
  after(async () => {
    await t?.close();
  });

  test("an annotation other than required is refused when the policy is saved", async () => {
    const r = await t.call("POST", "/api/agents", {
      org_id: org.id,
      machine_id: machine.id,
      name: "bad",
      tool_policy: `@approval("maybe") permit(principal, action, resource);`,
    });
    assert.equal(r.status, 400);
    assert.match(r.body.error.message, /@approval takes only "required"/);
  });

  test("an allowed approval: the run waits on the exact call, a stale digest is 409, then the tool runs", async () => {
    const a = await agentWith([
      { tool_calls: [{ name: "write_file", input: { path: "out.txt", content: "approved" } }] },
      { text: "Written." },
    ]);
    const runId = await start(a.id);
    const { run, approval } = await waitingApproval(runId);
    assert.equal(run.waiting.reason, "approval");
    assert.equal(approval.tool, "write_file");
    assert.equal(approval.run_id, runId);
    assert.ok(approval.tool_call_id.length > 0);
    assert.equal(approval.arguments.content, "approved");
    assert.match(approval.args_sha256, /^[0-9a-f]{64}$/);
    assert.equal(approval.policy_version, 1);
    assert.deepEqual(approval.policies, ["writes"]);
    const listed = await t.call("GET", `/api/orgs/${org.id}/approvals?status=waiting`);
    assert.ok(listed.body.items.some((x: any) => x.id === approval.id));
    assert.equal(await homeFile(a.id, "out.txt"), null, "nothing runs before the decision");

    const stale = await t.call("POST", `/api/approvals/${approval.id}`, {
      decision: "allow",
      args_sha256: "0".repeat(64),
    });
    assert.equal(stale.status, 409);
    assert.equal(stale.body.error.code, "approval.stale");

    const ok = await t.call("POST", `/api/approvals/${approval.id}`, {
      decision: "allow",
      args_sha256: approval.args_sha256,
    });
    assert.equal(ok.status, 200, JSON.stringify(ok.body));
    assert.equal(ok.body.status, "allowed");
    assert.equal(ok.body.decided_by, "operator@localhost");
    const done = await ended(runId);
    assert.equal(done.status, "succeeded", JSON.stringify(done));
    assert.equal(await homeFile(a.id, "out.txt"), "approved");
    // decided once: a second decision is stale
    const again = await t.call("POST", `/api/approvals/${approval.id}`, {
      decision: "deny",
      args_sha256: approval.args_sha256,
    });
    assert.equal(again.status, 409);
    assert.equal(again.body.error.code, "approval.stale");
    const events = (await t.call("GET", `/api/runs/${runId}/events`)).body.items;
    assert.deepEqual(
      eventsOfType(events, "approval").map((e) => e.status),
      ["waiting", "allowed"],
    );
  });

  test("an approval's arguments are kept and shown redacted of the agent's secrets; the tool gets the call as asked", async () => {
    const value = "appr-4Jq9-zX81-secret-value";
    const a = await agentWith([
      { tool_calls: [{ name: "write_file", input: { path: "key.txt", content: `key ${value}` } }] },
      { text: "Written." },
    ]);
    await agentSecret(t.call, org.id, a.id, { name: "APPROVAL_KEY", value });
    const runId = await start(a.id);
    const { approval } = await waitingApproval(runId);
    assert.equal(approval.arguments.content, "key [redacted]");
    const listed = await t.call("GET", `/api/orgs/${org.id}/approvals?status=waiting`);
    const stored = await t.server.store.db
      .select()
      .from(schema.approvals)
      .where(eq(schema.approvals.id, approval.id));
    for (const where of [JSON.stringify(listed.body), JSON.stringify(stored)])
      assert.ok(!where.includes(value), where);
    const ok = await t.call("POST", `/api/approvals/${approval.id}`, {
      decision: "allow",
      args_sha256: approval.args_sha256,
    });
    assert.equal(ok.status, 200, JSON.stringify(ok.body));
    assert.equal((await ended(runId)).status, "succeeded");
    assert.equal(await homeFile(a.id, "key.txt"), `key ${value}`);
  });

  test("a denied approval: the model gets the decider's message and the tool never runs", async () => {
    const a = await agentWith([
      { tool_calls: [{ name: "write_file", input: { path: "no.txt", content: "never" } }] },
      { text: "Understood, not written." },
    ]);
    const runId = await start(a.id);
    const { approval } = await waitingApproval(runId);
    const r = await t.call("POST", `/api/approvals/${approval.id}`, {
      decision: "deny",
      message: "not on a Friday",
      args_sha256: approval.args_sha256,
    });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    const done = await ended(runId);
    assert.equal(done.status, "succeeded");
    assert.equal(done.output, "Understood, not written.");
    assert.equal(await homeFile(a.id, "no.txt"), null, "a declined call never runs its tool");
    const events = (await t.call("GET", `/api/runs/${runId}/events`)).body.items;
    const call = eventsOfType(events, "tool_call")[0];
    assert.equal(call.decision, "deny");
    assert.match(call.output, /declined by operator@localhost: not on a Friday/);
    assert.equal(done.usage.tool_refusals, 1);
  });

  test("a decision never lands on another call: the first call's digest on the second is stale", async () => {
    const a = await agentWith([
      { tool_calls: [{ name: "write_file", input: { path: "one.txt", content: "1" } }] },
      { tool_calls: [{ name: "write_file", input: { path: "two.txt", content: "2" } }] },
      { text: "Both asked." },
    ]);
    const runId = await start(a.id);
    const first = (await waitingApproval(runId, 0)).approval;
    await t.call("POST", `/api/approvals/${first.id}`, { decision: "allow", args_sha256: first.args_sha256 });
    const second = (await waitingApproval(runId, 1)).approval;
    assert.notEqual(second.tool_call_id, first.tool_call_id);
    assert.notEqual(second.args_sha256, first.args_sha256);
    // a late decision on the first call, and the first call's digest on the second: both stale
    const late = await t.call("POST", `/api/approvals/${first.id}`, {
      decision: "deny",
      args_sha256: first.args_sha256,
    });
    assert.equal(late.status, 409);
    const wrong = await t.call("POST", `/api/approvals/${second.id}`, {
      decision: "allow",
      args_sha256: first.args_sha256,
    });
    assert.equal(wrong.status, 409);
    assert.equal(wrong.body.error.code, "approval.stale");
    assert.equal(await homeFile(a.id, "two.txt"), null);
    const deny = await t.call("POST", `/api/approvals/${second.id}`, {
      decision: "deny",
      args_sha256: second.args_sha256,
    });
    assert.equal(deny.status, 200);
    const done = await ended(runId);
    assert.equal(done.status, "succeeded");
    assert.equal(await homeFile(a.id, "one.txt"), "1");
    assert.equal(await homeFile(a.id, "two.txt"), null);
  });

  test("a run cancelled while it waits: its approval expires and a decision is stale", async () => {
    const a = await agentWith([
      { tool_calls: [{ name: "write_file", input: { path: "c.txt", content: "c" } }] },
      { text: "x" },
    ]);
    const runId = await start(a.id);
    const { approval } = await waitingApproval(runId);
    assert.equal((await t.call("POST", `/api/runs/${runId}/cancel`)).status, 200);
    const done = await ended(runId);
    assert.equal(done.status, "cancelled");
    const list = (await t.call("GET", `/api/runs/${runId}/approvals`)).body.items;
    assert.equal(list[0].status, "expired");
    const late = await t.call("POST", `/api/approvals/${approval.id}`, {
      decision: "allow",
      args_sha256: approval.args_sha256,
    });
    assert.equal(late.status, 409);
    assert.equal(await homeFile(a.id, "c.txt"), null);
  });

  test("a guardrail denies what the agent's own policy allows", async () => {
    const bad = await t.call("PUT", `/api/orgs/${org.id}/guardrails`, { tool_policy: "forbid(" });
    assert.equal(bad.status, 400);
    const g = await t.call("PUT", `/api/orgs/${org.id}/guardrails`, {
      tool_policy: `@id("no-secrets") forbid(principal, action, resource == Tool::"read_file") when { context.arguments has path && context.arguments.path like "*secret*" };`,
    });
    assert.equal(g.status, 200, JSON.stringify(g.body));
    assert.equal(g.body.updated_by, "operator@localhost");
    const a = await agentWith([
      {
        tool_calls: [
          { name: "read_file", input: { path: "secret.txt" } },
          { name: "read_file", input: { path: "open.txt" } },
        ],
      },
      { text: "done" },
    ]);
    await putHomeFile(t, a.id, "secret.txt", "the launch code");
    await putHomeFile(t, a.id, "open.txt", "open words");
    const done = await ended(await start(a.id));
    assert.equal(done.status, "succeeded", JSON.stringify(done));
    const calls = eventsOfType((await t.call("GET", `/api/runs/${done.id}/events`)).body.items, "tool_call");
    assert.equal(calls[0].decision, "deny");
    assert.deepEqual(calls[0].policies, ["no-secrets"]);
    assert.match(calls[0].output, /organisation's guardrail/);
    assert.doesNotMatch(calls[0].output, /launch code/);
    assert.equal(calls[1].decision, "allow", "the guardrail narrows only what it forbids");
    assert.match(calls[1].output, /open words/);
    assert.equal((await t.call("PUT", `/api/orgs/${org.id}/guardrails`, { tool_policy: "" })).status, 200);
  });
  test("a guardrail added while a call waits for its approval is applied to that call once allowed, and to the run's later calls", async () => {
    const a = await agentWith([
      { tool_calls: [{ name: "write_file", input: { path: "forbidden.txt", content: "should not be" } }] },
      { tool_calls: [{ name: "read_file", input: { path: "later-secret.txt" } }] },
      { text: "done" },
    ]);
    await putHomeFile(t, a.id, "later-secret.txt", "the later code");
    const runId = await start(a.id);
    const { approval } = await waitingApproval(runId);
    try {
      // the organisation forbids the waiting call, and reads of secrets, after it was asked
      const g = await t.call("PUT", `/api/orgs/${org.id}/guardrails`, {
        tool_policy: [
          `@id("no-forbidden") forbid(principal, action, resource == Tool::"write_file") when { context.arguments has path && context.arguments.path like "*forbidden*" };`,
          `@id("no-secrets") forbid(principal, action, resource == Tool::"read_file") when { context.arguments has path && context.arguments.path like "*secret*" };`,
        ].join("\n"),
      });
      assert.equal(g.status, 200, JSON.stringify(g.body));
      const ok = await t.call("POST", `/api/approvals/${approval.id}`, {
        decision: "allow",
        args_sha256: approval.args_sha256,
      });
      assert.equal(ok.status, 200, JSON.stringify(ok.body));
      const done = await ended(runId);
      assert.equal(done.status, "succeeded", JSON.stringify(done));
      assert.equal(await homeFile(a.id, "forbidden.txt"), null, "the approved call did not run");
      const calls = eventsOfType((await t.call("GET", `/api/runs/${runId}/events`)).body.items, "tool_call");
      const write = calls.find((c) => c.tool === "write_file");
      assert.equal(write?.decision, "deny", JSON.stringify(calls));
      assert.deepEqual(write?.policies, ["no-forbidden"]);
      assert.match(String(write?.output), /organisation's guardrail/);
      const read = calls.find((c) => c.tool === "read_file");
      assert.equal(read?.decision, "deny", JSON.stringify(calls));
      assert.doesNotMatch(String(read?.output), /later code/);
    } finally {
      assert.equal((await t.call("PUT", `/api/orgs/${org.id}/guardrails`, { tool_policy: "" })).status, 200);
    }
  });

  test("a conversation's turn that waits for an approval says so in the conversation's stream", async () => {
    const a = await agentWith([
      { tool_calls: [{ name: "write_file", input: { path: "turn.txt", content: "from the turn" } }] },
      { text: "written" },
    ]);
    const c = (await t.call("POST", `/api/agents/${a.id}/conversations`, {})).body;
    const sent = await t.call("POST", `/api/conversations/${c.id}/messages`, { text: "write it" });
    assert.equal(sent.status, 202, JSON.stringify(sent.body));
    const runId = sent.body.run_id as string;
    const { approval } = await waitingApproval(runId);
    const waiting = await waitFor("the approval in the conversation's stream", async () => {
      const events = await allEvents(t, c.id);
      return events.find((e) => e.event === "approval" && e.data.run_id === runId) ?? undefined;
    });
    assert.equal(waiting.data.data.tool, "write_file");
    assert.equal(waiting.data.data.args_sha256, approval.args_sha256);
    const d = await t.call("POST", `/api/approvals/${approval.id}`, {
      decision: "allow",
      args_sha256: approval.args_sha256,
    });
    assert.equal(d.status, 200, JSON.stringify(d.body));
    assert.equal((await ended(runId)).status, "succeeded");
    assert.equal(await homeFile(a.id, "turn.txt"), "from the turn");
    const events = (await allEvents(t, c.id)).filter(
      (e) => e.event === "approval" && e.data.run_id === runId,
    );
    assert.deepEqual(
      events.map((e) => e.data.data.status),
      ["waiting", "allowed"],
      "the decision is in the stream too",
    );
  });
});
