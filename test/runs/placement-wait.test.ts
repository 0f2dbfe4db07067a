// Placement that waits on real boxes: while the machine's box cannot start (the provider
// refuses to start it), a run stays queued and says why; once the box can start it runs; a run
// whose limit passes while it waits ends timed out, saying it never got a box.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { boxSkipReason } from "../box/fixture.js";
import { assistantAgent, runEnded, say } from "../conversations/support.js";
import { privateAllow } from "../support/bound.js";
import { startFakeOpenAI, type FakeModelServer } from "../support/fake-models.js";
import { startTestServer, type TestServer } from "../support/server.js";

const terminal = ["succeeded", "failed", "timed_out", "cancelled", "lost"];

describe("a run whose box cannot start waits", { skip: boxSkipReason() ?? false }, () => {
  let t: TestServer;
  let machine: { id: string };
  let agent: { id: string };
  let realStart: TestServer["server"]["provider"]["start"];
  let fake: FakeModelServer;

  const get = async (id: string) => (await t.call("GET", `/api/runs/${id}`)).body;
  const until = async (id: string, pred: (r: any) => boolean, what: string, ms = 30_000) => {
    const end = Date.now() + ms;
    for (;;) {
      const r = await get(id);
      if (pred(r)) return r;
      if (Date.now() > end) throw new Error(`run ${id} is ${r.status} (${r.status_reason}), not ${what}`);
      await new Promise((res) => setTimeout(res, 30));
    }
  };
  /** The provider down: every start of a box is refused until `up()`. */
  const down = () => {
    t.server.provider.start = () => Promise.reject(new Error("the host has no room for another box"));
  };
  const up = () => {
    t.server.provider.start = realStart;
  };

  before(async () => {
    fake = await startFakeOpenAI();
    t = await startTestServer({ listen: true, env: { WARREN_EGRESS_PRIVATE_ALLOW: privateAllow(fake) } });
    realStart = t.server.provider.start.bind(t.server.provider);
    const org = (await t.call("POST", "/api/orgs", { name: "placement" })).body;
    machine = (await t.call("POST", "/api/machines", { org_id: org.id, name: "m" })).body;
    agent = (await t.call("POST", "/api/agents", { org_id: org.id, machine_id: machine.id, name: "a" })).body;
  });
  after(async () => {
    up();
    await t?.close();
    await fake?.close();
  });

  test("queued with its reason while the box cannot start, then runs once it can", async () => {
    assert.equal((await t.call("POST", `/api/machines/${machine.id}/stop`)).status, 200);
    down();
    const r = await t.call("POST", `/api/agents/${agent.id}/runs`, {
      kind: "command",
      command: "echo placed > placed.txt; echo ran",
      timeout_s: 120,
    });
    assert.equal(r.status, 202, JSON.stringify(r.body));
    const waiting = await until(r.body.id, (x) => x.status_reason !== null, "waiting with a reason");
    assert.equal(waiting.status, "queued");
    assert.match(waiting.status_reason, /waiting for its machine's box to start: .*no room for another box/);
    assert.equal(waiting.started_at, null);
    const ev = (await t.call("GET", `/api/runs/${r.body.id}/events`)).body.items;
    assert.ok(ev.some((e: any) => e.type === "placement_waiting" && /no room/.test(e.data.reason)));
    assert.equal((await get(r.body.id)).status, "queued");
    up();
    const done = await until(r.body.id, (x) => terminal.includes(x.status), "ended");
    assert.equal(done.status, "succeeded", JSON.stringify(done));
    assert.equal(done.output, "ran\n");
    assert.equal(done.status_reason, null);
    const after = (await t.call("GET", `/api/runs/${r.body.id}/events`)).body.items;
    assert.ok(after.some((e: any) => e.type === "placed"));
  });

  test("a run whose limit passes while it waits ends timed out, saying why", async () => {
    assert.equal((await t.call("POST", `/api/machines/${machine.id}/stop`)).status, 200);
    down();
    try {
      const r = await t.call("POST", `/api/agents/${agent.id}/runs`, {
        kind: "command",
        command: "echo never",
        timeout_s: 2,
      });
      assert.equal(r.status, 202, JSON.stringify(r.body));
      const done = await until(r.body.id, (x) => terminal.includes(x.status), "ended");
      assert.equal(done.status, "timed_out");
      assert.match(done.status_reason, /no box could start within its 2 s limit/);
      assert.equal(done.output ?? "", "");
    } finally {
      up();
    }
  });

  test("a turn waits with its reason while its machine's last start failed, then runs", async () => {
    assert.equal((await t.call("POST", `/api/machines/${machine.id}/stop`)).status, 200);
    const org = (await t.call("GET", `/api/machines/${machine.id}`)).body.org_id as string;
    fake.script([
      { tool_calls: [{ name: "run_command", input: { command: "echo turned" } }] },
      { text: "ran it once placed" },
    ]);
    const talker = await assistantAgent(t, { org, machine: machine.id }, "talker", {
      baseUrl: fake.baseUrl,
      model: "m",
      tools: ["run_command"],
    });
    const c = (await t.call("POST", `/api/agents/${talker.id}/conversations`, {})).body;
    let turn = "";
    down();
    try {
      // a command run makes the box's start fail: the machine says so
      const first = await t.call("POST", `/api/agents/${agent.id}/runs`, {
        kind: "command",
        command: "echo first",
        timeout_s: 120,
      });
      await until(first.body.id, (x) => x.status_reason !== null, "waiting with a reason");
      const m = (await t.call("GET", `/api/machines/${machine.id}`)).body;
      assert.match(m.state_reason ?? "", /^start failed/);
      turn = await say(t, c.id, "run it");
      const waiting = await until(turn, (x) => x.status_reason !== null, "a turn waiting with a reason");
      assert.equal(waiting.status, "queued");
      assert.match(waiting.status_reason, /waiting for its machine's box to start: .*no room/);
      assert.equal(fake.requests.length, 0, "no model was asked while the turn waited");
    } finally {
      up();
    }
    const done = await runEnded(t, turn);
    assert.equal(done.status, "succeeded", JSON.stringify(done));
    assert.equal(done.machine_id, machine.id);
    const texts = (await t.call("GET", `/api/conversations/${c.id}/messages`)).body.items;
    assert.match(JSON.stringify(texts), /ran it once placed/);
  });
});
