// OpenTelemetry on a real server: a conversation's turn (the model a scripted OpenAI-compatible
// server on loopback, its tool call a command in a real box) is one trace, exported over
// OTLP/HTTP to a receiver on loopback, under the W3C traceparent the client sent: the request's
// span, the run's, the turn's (invoke_agent), the model call (chat, with the GenAI attributes),
// the tool call (execute_tool) under the call that asked for it, the command in the box with
// boxd's phases under it; no secret value anywhere in what was exported, and a secret put in a
// span's attribute is redacted. The OTLP metrics (runs, tokens, exec latency) arrive too.
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { after, before, describe, test } from "node:test";
import { inSpan } from "../../src/observability/tracing.js";
import { boxSkipReason } from "../box/fixture.js";
import { assistantAgent, runEnded, waitFor } from "../conversations/support.js";
import { privateAllow } from "../support/bound.js";
import { startFakeOpenAI, type FakeModelServer } from "../support/fake-models.js";
import { startOtlpReceiver, type OtlpReceiver, type OtlpSpan } from "../support/otlp.js";
import { startTestServer, type TestServer } from "../support/server.js";

describe("OpenTelemetry", { skip: boxSkipReason() ?? false }, () => {
  let t: TestServer | undefined;
  let fake: FakeModelServer;
  let otlp: OtlpReceiver;
  let where: { org: string; machine: string };

  before(async () => {
    otlp = await startOtlpReceiver();
    fake = await startFakeOpenAI();
    t = await startTestServer({
      listen: true,
      env: {
        WARREN_EGRESS_PRIVATE_ALLOW: privateAllow(fake),
        OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url,
        OTEL_SERVICE_NAME: "warren-under-test",
        OTEL_EXPORTER_OTLP_HEADERS: "x-collector-key=abc%3D1",
        WARREN_MODEL_PRICES: JSON.stringify({
          "openai-compatible:otel-model": { input_per_mtok: 3, output_per_mtok: 15 },
        }),
      },
    });
    const org = (await t.call("POST", "/api/orgs", { name: "otel" })).body;
    const machine = (await t.call("POST", "/api/machines", { org_id: org.id, name: "m" })).body;
    where = { org: org.id, machine: machine.id };
  });
  after(async () => {
    await t?.close();
    await fake?.close();
    await otlp?.close();
  });

  test("a conversation's turn is one trace under the client's traceparent, nested down to boxd's phases", async () => {
    const s = t!;
    const value = `otel-secret-${randomBytes(12).toString("hex")}`;
    fake.script([
      { tool_calls: [{ name: "run_command", input: { command: 'echo "token is $OTEL_PROBE_TOKEN"' } }] },
      { text: "The command ran." },
    ]);
    const agent = await assistantAgent(s, where, "tracer", {
      baseUrl: fake.baseUrl,
      model: "otel-model",
      tools: ["run_command"],
    });
    const secret = await s.call("POST", "/api/secrets", {
      org_id: where.org,
      name: "OTEL_PROBE_TOKEN",
      description: "",
      value,
      grants: [{ scope: "agent", id: agent.id }],
    });
    assert.equal(secret.status, 201, JSON.stringify(secret.body));
    const c = await s.call("POST", `/api/agents/${agent.id}/conversations`, {});
    assert.equal(c.status, 201, JSON.stringify(c.body));

    const traceId = randomBytes(16).toString("hex");
    const parentId = randomBytes(8).toString("hex");
    const posted = await s.call(
      "POST",
      `/api/conversations/${c.body.id}/messages`,
      { text: `print the token (it is ${value})` },
      { traceparent: `00-${traceId}-${parentId}-01` },
    );
    assert.equal(posted.status, 202, JSON.stringify(posted.body));
    const run = await runEnded(s, posted.body.run_id as string);
    assert.equal(run.status, "succeeded", run.status_reason);

    const mine = () => otlp.spans.filter((x) => x.traceId === traceId);
    const one = (name: string | RegExp): OtlpSpan | undefined =>
      mine().find((x) => (typeof name === "string" ? x.name === name : name.test(x.name)));
    // the run's span ends last: once it is there, the spans under it were exported before or with it
    await waitFor("the run's span at the receiver", async () => one(/^run /) ?? null, 60_000);
    await waitFor("boxd's phases at the receiver", async () => one("boxd.command") ?? null, 30_000);

    const byId = new Map(mine().map((x) => [x.spanId, x]));
    const parentOf = (x: OtlpSpan) => (x.parentSpanId ? byId.get(x.parentSpanId) : undefined);
    const names = mine().map((x) => x.name);

    const request = one("POST /api/conversations/:id/messages");
    assert.ok(request, `the request's span (spans: ${names.join(", ")})`);
    assert.equal(request.parentSpanId, parentId, "the request's span is a child of the client's");
    assert.equal(request.kind, 2, "kind server");
    assert.equal(request.attributes["http.response.status_code"], 202);

    const runSpan = one(/^run /)!;
    assert.equal(parentOf(runSpan)?.spanId, request.spanId, "the run under the request");
    assert.equal(runSpan.attributes["warren.run.id"], run.id);
    assert.equal(runSpan.attributes["warren.run.status"], "succeeded");

    const turn = one("invoke_agent tracer");
    assert.ok(turn, `the turn's span (spans: ${names.join(", ")})`);
    assert.equal(parentOf(turn)?.spanId, runSpan.spanId, "the turn under the run");
    assert.equal(turn.attributes["gen_ai.conversation.id"], c.body.id);

    const chats = mine().filter((x) => x.name === "chat otel-model");
    assert.equal(chats.length, 2, "two model calls: the tool call's and the answer's");
    const ancestors = (x: OtlpSpan): string[] => {
      const up: string[] = [];
      for (let p = parentOf(x); p; p = parentOf(p)) up.push(p.spanId);
      return up;
    };
    for (const chat of chats) {
      assert.ok(ancestors(chat).includes(turn.spanId), "a model call under the turn");
      assert.equal(chat.kind, 3, "kind client");
      assert.equal(chat.attributes["gen_ai.operation.name"], "chat");
      assert.equal(chat.attributes["gen_ai.request.model"], "otel-model");
      assert.equal(chat.attributes["gen_ai.provider.name"], "openai-compatible");
      assert.ok((chat.attributes["gen_ai.usage.input_tokens"] as number) > 0, "input tokens");
      assert.ok((chat.attributes["gen_ai.usage.output_tokens"] as number) > 0, "output tokens");
    }
    const asked = chats.find(
      (x) => (x.attributes["gen_ai.response.finish_reasons"] as string[])?.[0] === "tool-calls",
    );
    assert.ok(asked, `the call that asked for the tool (${JSON.stringify(chats.map((x) => x.attributes))})`);

    const tool = one("execute_tool run_command");
    assert.ok(tool, `the tool call's span (spans: ${names.join(", ")})`);
    assert.equal(
      parentOf(tool)?.spanId,
      asked.spanId,
      "the tool call under the model call that asked for it",
    );
    assert.equal(tool.attributes["gen_ai.operation.name"], "execute_tool");
    assert.equal(tool.attributes["warren.tool.decision"], "allow");
    assert.ok(tool.attributes["gen_ai.tool.call.id"], "the call's id");

    const exec = one("box.exec");
    assert.ok(exec, `the command's span (spans: ${names.join(", ")})`);
    assert.ok(ancestors(exec).includes(tool.spanId), "the command under the tool call");
    assert.equal(exec.attributes["process.exit.code"], 0);
    const phases = mine().filter((x) => x.name.startsWith("boxd."));
    assert.ok(
      phases.every((x) => x.parentSpanId === exec.spanId),
      "boxd's phases are children of the command's span",
    );
    for (const p of ["boxd.landlock", "boxd.seccomp", "boxd.command"])
      assert.ok(
        phases.some((x) => x.name === p),
        `phase ${p} (phases: ${phases.map((x) => x.name).join(", ")})`,
      );

    // the model was sent the secret (typed in the message, printed by the command): no export carries it
    assert.ok(JSON.stringify(fake.requests).includes(value), "the value did go where it was sent");
    const all = otlp.raw.join("\n");
    assert.ok(!all.includes(value), "no secret value in anything exported");
    assert.ok(all.includes("warren-under-test"), "OTEL_SERVICE_NAME names the service");
    assert.ok(
      otlp.headers.every((h) => h["x-collector-key"] === "abc=1"),
      "every export carries OTEL_EXPORTER_OTLP_HEADERS",
    );

    // a string put in an attribute passes through the redaction of every secret value as its span ends
    await inSpan("redaction.probe", { "probe.text": `before ${value} after` }, async () => undefined);
    const probe = await waitFor("the probe's span", async () =>
      otlp.spans.find((x) => x.name === "redaction.probe"),
    );
    assert.equal(probe.attributes["probe.text"], "before [redacted] after");
    assert.ok(!otlp.raw.join("\n").includes(value), "still no secret value exported");

    // the metrics: exported as the server stops (and every OTEL_METRIC_EXPORT_INTERVAL before)
    await s.close();
    t = undefined;
    for (const m of ["warren.runs", "gen_ai.client.token.usage", "warren.model.cost", "warren.exec.duration"])
      assert.ok(otlp.metrics.has(m), `metric ${m} (got: ${[...otlp.metrics].join(", ")})`);
  });
});
