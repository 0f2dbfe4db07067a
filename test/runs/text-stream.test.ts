// An assistant run (not a conversation's turn) streams the model's text as it comes: its
// `output` text events, each naming its model step, arrive on the run's live trace (server-sent
// events over real HTTP) while the model is still writing, before the run ends; then the whole
// answer. A real server (PGlite, a real box) and a model on loopback that holds its answer's
// end until the test lets it go.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { boxSkipReason } from "../box/fixture.js";
import { privateAllow } from "../support/bound.js";
import { startHeldModel, type HeldModel } from "../support/held-model.js";
import { startTestServer, type TestServer } from "../support/server.js";
import { readSse, runEnded } from "../conversations/support.js";
import { makeAgent, orgAndMachine } from "../support/org.js";

describe("an assistant run's text as it streams", { skip: boxSkipReason() ?? false }, () => {
  let t: TestServer | undefined;
  let held: HeldModel | undefined;

  before(async () => {
    held = await startHeldModel("Tea is served ", "in the garden.");
    t = await startTestServer({ listen: true, env: { WARREN_EGRESS_PRIVATE_ALLOW: privateAllow(held) } });
  });
  after(async () => {
    try {
      // lets a run still waiting on the model end, then stops the server and its boxes
      held?.release();
      await t?.close();
    } finally {
      await held?.close();
    }
  });

  test("the text arrives on the run's stream before the run ends, then the whole answer", async () => {
    const s = t!;
    const { org, machine } = await orgAndMachine(s.call, "runs-text");
    const a = await makeAgent(
      s.call,
      { org, machine },
      { name: "teller", model: { provider: "openai-compatible", name: "held", base_url: held!.baseUrl } },
    );
    const r = await s.call("POST", `/api/agents/${a.id}/runs`, {
      kind: "agent",
      input: "Where is tea?",
    });
    assert.equal(r.status, 202, JSON.stringify(r.body));
    const runId = r.body.id as string;

    // the model holds the rest of its answer: what the stream brings now came before the end
    const texts = (events: { event: string; data: any }[]) =>
      events.filter((e) => e.event === "output" && e.data.data?.stream === "text").map((e) => e.data.data);
    const early = await readSse(`${s.url}/api/runs/${runId}/events`, {
      until: (ev) => texts(ev).some((d) => String(d.data).includes("Tea is served")),
    });
    assert.ok(
      texts(early.events).some((d) => String(d.data).includes("Tea is served")),
      JSON.stringify(early.events.map((e) => e.event)),
    );
    assert.ok(!early.events.some((e) => e.event === "exit"), "the run had not ended");
    assert.equal((await s.call("GET", `/api/runs/${runId}`)).body.status, "running");
    assert.ok(texts(early.events).every((d) => d.step === 1));

    held!.release();
    const run = await runEnded(s, runId);
    assert.equal(run.status, "succeeded", JSON.stringify(run));
    assert.equal(run.output, "Tea is served in the garden.");
    // the whole stream: every piece of the text, in order, before the whole answer and the exit
    const all = await readSse(`${s.url}/api/runs/${runId}/events`, { until: () => false });
    const pieces = texts(all.events);
    assert.equal(pieces.map((d) => d.data).join(""), "Tea is served in the garden.");
    const lastText = all.events.findLastIndex((e) => e.event === "output" && e.data.data?.stream === "text");
    const stdout = all.events.findIndex((e) => e.event === "output" && e.data.data?.stream === "stdout");
    const exit = all.events.findIndex((e) => e.event === "exit");
    assert.ok(lastText < stdout && stdout < exit, JSON.stringify(all.events.map((e) => e.event)));
  });
});
