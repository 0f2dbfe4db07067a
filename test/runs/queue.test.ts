// The run queue on real boxes: a busy agent's runs wait their turn (first come, first served),
// an organisation's cap queues the rest, a waiting run says why, cancel takes it out of line,
// and wait: false keeps the old refusal.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { boxSkipReason } from "../box/fixture.js";
import { startTestServer, type TestServer } from "../support/server.js";
import { makeAgent, orgAndMachine } from "../support/org.js";

const terminal = ["succeeded", "failed", "timed_out", "cancelled", "lost"];

describe("the run queue", { skip: boxSkipReason() ?? false }, () => {
  let t: TestServer;
  let org: { id: string };
  let machine: { id: string };
  const agents: { id: string }[] = [];

  const start = (agentId: string, body: Record<string, unknown>) =>
    t.call("POST", `/api/agents/${agentId}/runs`, { kind: "command", ...body });
  const get = async (id: string) => (await t.call("GET", `/api/runs/${id}`)).body;
  const until = async (id: string, pred: (r: any) => boolean, what: string, ms = 20_000) => {
    const end = Date.now() + ms;
    for (;;) {
      const r = await get(id);
      if (pred(r)) return r;
      if (Date.now() > end) throw new Error(`run ${id} is ${r.status}, not ${what}`);
      await new Promise((res) => setTimeout(res, 30));
    }
  };
  const done = (id: string) => until(id, (r) => terminal.includes(r.status), "ended");
  const running = (id: string) => until(id, (r) => r.status === "running", "running");
  const exec = async (agentId: string, command: string) =>
    (await t.call("POST", `/api/agents/${agentId}/exec`, { command })).body;
  // a run that holds its agent until the file `go` appears in its home
  const holder = "while [ ! -e go ]; do sleep 0.05; done; rm go; echo held >> order.txt";

  before(async () => {
    t = await startTestServer({ env: { WARREN_ORG_MAX_RUNS: "2" } });
    ({ org, machine } = await orgAndMachine(t.call, "queue"));
    for (const name of ["a", "b", "c"])
      agents.push(
        (await t.call("POST", "/api/agents", { org_id: org.id, machine_id: machine.id, name })).body,
      );
  });
  after(async () => t.close());

  test("a busy agent's runs wait their turn, in order, each saying why and where", async () => {
    const a = agents[0]!;
    await exec(a.id, "rm -f order.txt go");
    const first = (await start(a.id, { command: holder })).body;
    await running(first.id);
    const r2 = await start(a.id, { command: "echo second >> order.txt" });
    assert.equal(r2.status, 202, JSON.stringify(r2.body));
    assert.equal(r2.body.status, "queued");
    assert.equal(r2.body.waiting.reason, "agent_busy");
    assert.equal(r2.body.waiting.position, 1);
    const r3 = (await start(a.id, { command: "echo third >> order.txt" })).body;
    const w3 = await get(r3.id);
    assert.equal(w3.status, "queued");
    assert.deepEqual(
      { reason: w3.waiting.reason, position: w3.waiting.position },
      { reason: "agent_busy", position: 2 },
    );
    assert.ok(w3.waiting.since >= r2.body.waiting.since);
    assert.match(w3.status_reason, new RegExp(`${first.id} is going on; 2nd in the agent's line`));
    assert.equal(w3.started_at, null);
    const listed = (await t.call("GET", `/api/agents/${a.id}/runs`)).body.items;
    assert.equal(listed.find((r: any) => r.id === r3.id).waiting.position, 2, "the list says it too");
    const ev = (await t.call("GET", `/api/runs/${r3.id}/events`)).body.items;
    assert.equal(ev[0].type, "queued");
    assert.equal(ev[0].data.reason, "agent_busy");

    await exec(a.id, "touch go");
    const [d1, d2, d3] = [await done(first.id), await done(r2.body.id), await done(r3.id)];
    for (const d of [d1, d2, d3]) assert.equal(d.status, "succeeded", JSON.stringify(d));
    assert.equal((await exec(a.id, "cat order.txt")).stdout, "held\nsecond\nthird\n");
    assert.ok(d2.started_at >= d1.ended_at, "the second started once the first ended");
    assert.ok(d3.started_at >= d2.ended_at, "the third started once the second ended");
    assert.equal(d3.waiting, undefined);
  });

  test("wait: false refuses a busy agent with generation.busy, and queues nothing", async () => {
    const a = agents[0]!;
    const first = (await start(a.id, { command: "sleep 30" })).body;
    const refused = await start(a.id, { command: "true", wait: false });
    assert.equal(refused.status, 409);
    assert.equal(refused.body.error.code, "generation.busy");
    assert.match(refused.body.error.message, new RegExp(first.id));
    const queued = (await start(a.id, { command: "true" })).body;
    assert.equal(queued.status, "queued");
    const behind = await start(a.id, { command: "true", wait: false });
    assert.equal(behind.status, 409, "runs waiting hold the agent too");
    assert.match(
      behind.body.error.message,
      new RegExp(`a generation running \\(${first.id}\\) and 1 run waiting \\(${queued.id}\\)`),
    );
    const ids = (await t.call("GET", `/api/agents/${a.id}/runs?limit=3`)).body.items.map((r: any) => r.id);
    assert.deepEqual(ids.slice(0, 2), [queued.id, first.id], "the refused runs left no record");
    await t.call("POST", `/api/runs/${first.id}/cancel`);
    assert.equal((await done(queued.id)).status, "succeeded");
  });

  test("cancel takes a queued run out of line: it never starts, the next moves up", async () => {
    const a = agents[0]!;
    await exec(a.id, "rm -f order.txt go");
    const first = (await start(a.id, { command: holder })).body;
    await running(first.id);
    const r2 = (await start(a.id, { command: "echo second >> order.txt" })).body;
    const r3 = (await start(a.id, { command: "echo third >> order.txt" })).body;
    assert.equal((await get(r3.id)).waiting.position, 2);
    const c = await t.call("POST", `/api/runs/${r2.id}/cancel`);
    assert.equal(c.status, 200);
    assert.equal(c.body.status, "cancelled");
    assert.match(c.body.status_reason, /cancelled by an operator while it waited/);
    assert.equal(c.body.started_at, null);
    assert.ok(c.body.ended_at);
    assert.equal((await get(r3.id)).waiting.position, 1);
    const again = await t.call("POST", `/api/runs/${r2.id}/cancel`);
    assert.equal(again.status, 409);
    assert.equal(again.body.error.code, "run.not_cancellable");
    await exec(a.id, "touch go");
    assert.equal((await done(r3.id)).status, "succeeded");
    assert.ok((await get(r3.id)).started_at >= (await get(first.id)).ended_at);
    assert.equal((await get(r2.id)).status, "cancelled");
    assert.equal((await exec(a.id, "cat order.txt")).stdout, "held\nthird\n", "the cancelled run never ran");
    const ev = (await t.call("GET", `/api/runs/${r2.id}/events`)).body.items.map((e: any) => e.type);
    assert.deepEqual(ev, ["queued", "cancelled"]);
  });

  test("the organisation's cap queues the rest; wait: false answers run.org_limit", async () => {
    const [a, b, c] = [agents[0]!, agents[1]!, agents[2]!];
    const ra = (await start(a.id, { command: "sleep 30" })).body;
    const rb = (await start(b.id, { command: "sleep 30" })).body;
    await running(ra.id);
    await running(rb.id);
    const rc = await start(c.id, { command: "echo c" });
    assert.equal(rc.status, 202);
    assert.equal(rc.body.status, "queued");
    assert.equal(rc.body.waiting.reason, "org_limit");
    assert.equal(rc.body.waiting.position, 1);
    assert.match(rc.body.status_reason, /2 runs going on, its cap of 2/);
    const ra2 = (await start(a.id, { command: "echo a2" })).body;
    assert.equal(ra2.waiting.reason, "agent_busy", "its own agent holds it first");
    const refused = await start(c.id, { command: "true", wait: false });
    assert.equal(refused.status, 409, "c already has a run waiting");
    // another organisation has its own cap
    const { org: org2, machine: m2 } = await orgAndMachine(t.call, "queue2", { name: "m2" });
    const x = (await t.call("POST", "/api/agents", { org_id: org2.id, machine_id: m2.id, name: "x" })).body;
    const rx = await start(x.id, { command: "echo x", wait: false });
    assert.equal(rx.status, 202);
    assert.equal((await done(rx.body.id)).output, "x\n");
    // b's place frees: c (the oldest that nothing else holds) takes it
    await t.call("POST", `/api/runs/${rb.id}/cancel`);
    const dc = await done(rc.body.id);
    assert.equal(dc.output, "c\n");
    assert.equal((await get(ra2.id)).status, "queued");
    // with a and the cap both busy, a run of a new agent that will not wait is refused
    const held = (await start(c.id, { command: "sleep 30" })).body;
    await running(held.id);
    const d = (await t.call("POST", "/api/agents", { org_id: org.id, machine_id: machine.id, name: "d" }))
      .body;
    const capped = await start(d.id, { command: "true", wait: false });
    assert.equal(capped.status, 429);
    assert.equal(capped.body.error.code, "run.org_limit");
    assert.match(capped.body.error.message, /2 runs going on, its cap of 2/);
    for (const r of [ra, held]) await t.call("POST", `/api/runs/${r.id}/cancel`);
    assert.equal((await done(ra2.id)).output, "a2\n");
    await t.call("DELETE", `/api/agents/${d.id}`);
  });

  test("an agent run waits like a command run, and runs by its kind when its turn comes", async () => {
    const a = await makeAgent(
      t.call,
      { org, machine },
      { name: "thinker", model: { provider: "script", name: "s.json" } },
    );
    const put = await t.inject({
      method: "PUT",
      url: `/api/agents/${a.id}/files/s.json`,
      payload: JSON.stringify([{ text: "answered in turn" }]),
      headers: { "content-type": "application/octet-stream" },
    });
    assert.equal(put.statusCode, 204);
    const first = (await start(a.id, { command: holder })).body;
    await running(first.id);
    const refused = await t.call("POST", `/api/agents/${a.id}/runs`, {
      kind: "agent",
      input: "hi",
      wait: false,
    });
    assert.equal(refused.status, 409);
    assert.equal(refused.body.error.code, "generation.busy");
    const q = await t.call("POST", `/api/agents/${a.id}/runs`, { kind: "agent", input: "hi" });
    assert.equal(q.status, 202, JSON.stringify(q.body));
    assert.equal(q.body.status, "queued");
    assert.equal(q.body.kind, "assistant");
    assert.deepEqual(
      { reason: q.body.waiting.reason, position: q.body.waiting.position },
      { reason: "agent_busy", position: 1 },
    );
    await exec(a.id, "touch go");
    const d = await done(q.body.id);
    assert.equal(d.status, "succeeded", JSON.stringify(d));
    assert.equal(d.output, "answered in turn");
    assert.ok(d.started_at >= (await get(first.id)).ended_at);
  });
});
