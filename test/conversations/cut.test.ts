// A conversation's history over WARREN_CONVERSATION_HISTORY_BYTES is cut by the documented
// rule (the oldest tools' answers first) for the turn that sends it, and the turn says so in a
// history_cut event; the stored transcript stays whole.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { boxSkipReason } from "../box/fixture.js";
import { privateAllow } from "../support/bound.js";
import { startFakeOpenAI, type FakeModelServer } from "../support/fake-models.js";
import { startTestServer, type TestServer } from "../support/server.js";
import { allEvents, assistantAgent, runEnded, say } from "./support.js";

describe("a conversation's history cut to its budget", { skip: boxSkipReason() ?? false }, () => {
  let t: TestServer;
  let fake: FakeModelServer;

  before(async () => {
    fake = await startFakeOpenAI();
    t = await startTestServer({
      listen: true,
      env: { WARREN_EGRESS_PRIVATE_ALLOW: privateAllow(fake), WARREN_CONVERSATION_HISTORY_BYTES: "4096" },
    });
  });
  after(async () => {
    await t?.close();
    await fake?.close();
  });

  test("the oldest tool answer is cut first, and the cut is an event", async () => {
    const org = (await t.call("POST", "/api/orgs", { name: "cut" })).body;
    const machine = (
      await t.call("POST", "/api/machines", { org_id: org.id, name: "m", max_workspace_mib: 500 })
    ).body;
    fake.script([
      { tool_calls: [{ name: "run_command", input: { command: "head -c 6000 /dev/zero | tr '\\0' a" } }] },
      { text: "made a long line" },
      { text: "still here" },
    ]);
    const agent = await assistantAgent(t, { org: org.id, machine: machine.id }, "cutter", {
      baseUrl: fake.baseUrl,
      model: "cut",
      tools: ["run_command"],
    });
    const c = (await t.call("POST", `/api/agents/${agent.id}/conversations`, {})).body;
    assert.equal((await runEnded(t, await say(t, c.id, "make a long line"))).status, "succeeded");
    const first = JSON.stringify(fake.requests[fake.requests.length - 1]!.body.messages);
    assert.ok(first.includes("a".repeat(6000)), "the first turn's next call had the whole answer");
    const r2 = await runEnded(t, await say(t, c.id, "and now?"));
    assert.equal(r2.status, "succeeded", r2.status_reason);
    const second = JSON.stringify(fake.requests[fake.requests.length - 1]!.body.messages);
    assert.match(second, /\(cut: an old tool answer of \d+ bytes\)/);
    assert.ok(!second.includes("a".repeat(6000)), "the long answer was not sent again");
    assert.ok(second.includes("make a long line") && second.includes("made a long line"), "the rest stays");
    const cuts = (await allEvents(t, c.id)).filter((e) => e.event === "history_cut");
    assert.equal(cuts.length, 1);
    assert.equal(cuts[0]!.data.run_id, r2.id);
    assert.equal(cuts[0]!.data.data.tool_answers_cut, 1);
    assert.equal(cuts[0]!.data.data.turns_left_out, 0);
    assert.equal(cuts[0]!.data.data.budget_bytes, 4096);
  });
});
