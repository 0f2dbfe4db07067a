// The model gateway against local fake providers speaking the Anthropic Messages and OpenAI
// Chat Completions wire formats (one JSON answer and server-sent events): keys from secrets,
// counting, prices, budgets, routing, fallback on a 429, workload tokens.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import type { ModelMessage } from "ai";
import { AgentSpec } from "../../src/contract/spec.js";
import { BudgetStop, keyMayGo, Gateway, routeModel } from "../../src/models/gateway.js";
import { Prices } from "../../src/models/prices.js";
import { modelTurn } from "../../src/models/turn.js";
import type { GuardedFetch } from "../../src/net/connector.js";
import { boundConnector } from "../support/bound.js";
import { startCutStream } from "../support/cut-stream.js";
import { startFakeAnthropic, startFakeOpenAI, type FakeModelServer } from "../support/fake-models.js";
import { anthropicAt } from "../support/agent-runs.js";

const KEY = "sk-test-4f9a1c2e7d";
const events: { type: string; data: any }[] = [];
const sink = async (type: string, data: Record<string, unknown>) => void events.push({ type, data });
const readTool = {
  name: "read_file",
  description: "read a file of the home",
  parameters: { type: "object", properties: { path: { type: "string" } }, required: ["path"] },
};
const turns = [
  {
    text: "Let me look.",
    tool_calls: [{ name: "read_file", input: { path: "notes/a.txt" } }],
    usage: { input_tokens: 120, output_tokens: 30 },
  },
  {
    text: "The file says hello, and that is the whole answer.",
    usage: { input_tokens: 200, output_tokens: 12 },
  },
];

/** The fakes' hosts, as an owner gives a key's hosts. */
const HOSTS: string[] = [];
/** The connector the gateways fetch through: its bound admits the fake providers once they listen. */
let connector: GuardedFetch = boundConnector();

function gateway(prices: Prices = new Prices(), scripts: Record<string, string> = {}) {
  return new Gateway({
    keysOf: async () => ({
      MODEL_KEY: { use: "model", value: KEY, hosts: HOSTS },
      OTHER_KEY: { use: "model", value: "sk-other-8c1d2e3f", hosts: HOSTS },
      ENV_KEY: { use: "env", value: "sk-env-5a6b7c8d9e" },
    }),
    readHome: async (_a, p) => {
      const s = scripts[p];
      if (s === undefined) throw new Error(`no file ${p}`);
      return Buffer.from(s);
    },
    prices,
    fetch: connector,
  });
}
const agent = {
  id: "agt_0000000000000000000001",
  orgId: "org_0000000000000000000001",
  machineId: "mch_0000000000000000000001",
};
const specOf = (model: unknown, limits: unknown = {}) =>
  AgentSpec.parse({ kind: "assistant", model, limits });

describe("model gateway", () => {
  let anth: FakeModelServer;
  let oai: FakeModelServer;
  before(async () => {
    anth = await startFakeAnthropic(turns);
    oai = await startFakeOpenAI(turns);
    HOSTS.push(...[anth, oai].map((f) => new URL(f.baseUrl).host));
    connector = boundConnector(anth, oai);
  });
  after(async () => {
    await anth.close();
    await oai.close();
  });

  for (const wire of ["anthropic", "openai"] as const)
    for (const stream of [false, true])
      test(`${wire} wire format, ${stream ? "streamed" : "one answer"}: tool call, then text; key sent, counted`, async () => {
        const fake = wire === "anthropic" ? anth : oai;
        fake.requests.length = 0;
        events.length = 0;
        const g = gateway();
        const s = await g.open({
          runId: "run_1",
          agent,
          spec: specOf({
            provider: wire,
            name: wire === "anthropic" ? "claude-sonnet-4-5" : "gpt-4o",
            base_url: fake.baseUrl,
            key_secret: "MODEL_KEY",
          }),
          input: "hi",
          events: sink,
        });
        const messages: any[] = [{ role: "user", content: "What does notes/a.txt say?" }];
        const first = await modelTurn(s, { system: "You are terse.", messages, tools: [readTool], stream });
        assert.equal(first.text, "Let me look.");
        assert.deepEqual(
          first.toolCalls.map((c) => [c.name, c.input]),
          [["read_file", { path: "notes/a.txt" }]],
        );
        assert.equal(first.finishReason, "tool-calls");
        const req = fake.requests[0]!;
        if (wire === "anthropic") {
          assert.equal(req.headers["x-api-key"], KEY);
          assert.equal(req.body.system[0].text, "You are terse.");
          assert.equal(req.body.tools[0].name, "read_file");
        } else {
          assert.equal(req.headers.authorization, `Bearer ${KEY}`);
          assert.equal(req.body.messages[0].role, "system");
          assert.equal(req.body.tools[0].function.name, "read_file");
        }
        assert.equal(Boolean(req.body.stream), stream);
        messages.push(...first.messages, {
          role: "tool",
          content: [
            {
              type: "tool-result",
              toolCallId: first.toolCalls[0]!.id,
              toolName: "read_file",
              output: { type: "text", value: "hello" },
            },
          ],
        });
        const second = await modelTurn(s, { system: "You are terse.", messages, tools: [readTool], stream });
        assert.equal(second.text, "The file says hello, and that is the whole answer.");
        assert.equal(second.toolCalls.length, 0);
        assert.equal(second.finishReason, "stop");
        // the tool's answer went back on the wire
        assert.match(JSON.stringify(fake.requests[1]!.body.messages), /hello/);
        const calls = events.filter((e) => e.type === "model_call").map((e) => e.data);
        assert.equal(calls.length, 2);
        assert.deepEqual(
          [calls[0].tokens_in, calls[0].tokens_out, calls[1].tokens_in, calls[1].tokens_out],
          [120, 30, 200, 12],
        );
        const price = wire === "anthropic" ? [3, 15] : [2.5, 10];
        assert.ok(Math.abs(calls[0].usd - (120 * price[0]! + 30 * price[1]!) / 1e6) < 1e-12);
        assert.equal(calls[0].provider, wire);
        assert.equal(calls[0].status, "ok");
        assert.equal(calls[0].finish_reason, "tool-calls");
        assert.ok(calls[0].latency_ms >= 0);
        assert.deepEqual(s.usage(), {
          tokens_in: 320,
          tokens_out: 42,
          usd: calls[0].usd + calls[1].usd,
          calls: 2,
        });
        assert.doesNotMatch(JSON.stringify(events), new RegExp(KEY));
        s.close();
      });

  test("a 429 moves to the fallback; both calls and the move are in the trace", async () => {
    events.length = 0;
    anth.script([{ error: { status: 429, message: "slow down" } }]);
    oai.script([{ text: "answered by the fallback" }]);
    try {
      const s = await gateway().open({
        runId: "run_2",
        agent,
        spec: specOf({
          ...anthropicAt(anth.baseUrl, "MODEL_KEY"),
          fallback: {
            provider: "openai",
            name: "gpt-4o-mini",
            base_url: oai.baseUrl,
            key_secret: "OTHER_KEY",
          },
        }),
        input: "x",
        events: sink,
      });
      const a = await modelTurn(s, {
        system: "",
        messages: [{ role: "user", content: "hi" }],
        tools: [],
        stream: true,
      });
      assert.equal(a.text, "answered by the fallback");
      assert.equal(a.model.label, "openai:gpt-4o-mini");
      const calls = events.filter((e) => e.type === "model_call").map((e) => e.data);
      assert.equal(calls.length, 2);
      assert.equal(calls[0].status, "error");
      assert.match(calls[0].error, /^429/);
      assert.equal(calls[1].status, "ok");
      assert.deepEqual(calls[1].fallback_from, {
        provider: "anthropic",
        model: "claude-sonnet-4-5",
        reason: "429 rate limited",
      });
      assert.equal(oai.requests.at(-1)!.headers.authorization, "Bearer sk-other-8c1d2e3f");
      s.close();
    } finally {
      anth.script(turns);
      oai.script(turns);
    }
  });

  test("no fallback: the provider's error is thrown, and recorded", async () => {
    events.length = 0;
    oai.script([{ error: { status: 500, message: "boom" } }]);
    try {
      const s = await gateway().open({
        runId: "run_3",
        agent,
        spec: specOf({ provider: "openai-compatible", name: "local", base_url: oai.baseUrl }),
        input: "x",
        events: sink,
      });
      await assert.rejects(
        modelTurn(s, { system: "", messages: [{ role: "user", content: "hi" }], tools: [] }),
      );
      assert.equal(events.filter((e) => e.type === "model_call")[0]!.data.status, "error");
      // no key_secret for a local server: no Authorization at all
      assert.equal(oai.requests.at(-1)!.headers.authorization, undefined);
      s.close();
    } finally {
      oai.script(turns);
    }
  });

  test("budget: tokens and dollars, by the price table and its override; each call admitted first", async () => {
    const prices = new Prices({ "script:*": { input_per_mtok: 1000, output_per_mtok: 2000 } });
    const script = JSON.stringify([
      { text: "one", usage: { input_tokens: 100, output_tokens: 450 } },
      { text: "two", usage: { input_tokens: 100, output_tokens: 450 } },
      { text: "three", usage: { input_tokens: 100, output_tokens: 450 } },
    ]);
    const g = gateway(prices, { "s.json": script });
    const events: { type: string; data: any }[] = [];
    const tokens = await g.open({
      runId: "run_4",
      agent,
      spec: specOf({ provider: "script", name: "s.json" }, { max_tokens: 700, on_limit: "finish" }),
      input: "",
      events: async (type, data) => void events.push({ type, data }),
    });
    const history: ModelMessage[] = [{ role: "user", content: "a" }];
    const first = await modelTurn(tokens, { system: "", messages: history, tools: [] });
    assert.equal(first.lastCall, false);
    assert.deepEqual(tokens.budget(), { ok: true });
    history.push({ role: "assistant", content: "one" }, { role: "user", content: "b" });
    // 150 left: less than the input and 512 out, so the one last call (on_limit finish)
    const second = await modelTurn(tokens, { system: "", messages: history, tools: [] });
    assert.equal(second.lastCall, true);
    assert.deepEqual(
      events.filter((e) => e.type === "budget").map((e) => [e.data.refused, e.data.used, e.data.reserved]),
      [[true, 550, 0]],
    );
    assert.deepEqual(tokens.budget(), {
      ok: false,
      limit: "tokens",
      max: 700,
      used: 1100,
      on_limit: "finish",
    });
    // after the last call, nothing more is sent
    await assert.rejects(modelTurn(tokens, { system: "", messages: history, tools: [] }), BudgetStop);
    assert.equal(tokens.usage().calls, 2);
    const usd = await g.open({
      runId: "run_5",
      agent,
      spec: specOf({ provider: "script", name: "s.json" }, { max_usd: 1.2 }),
      input: "",
      events: sink,
    });
    await modelTurn(usd, { system: "", messages: [{ role: "user", content: "a" }], tools: [] });
    // 100 * 1000/1e6 + 450 * 2000/1e6 = 1 dollar
    assert.ok(Math.abs(usd.usage().usd - 1) < 1e-9);
    assert.deepEqual(usd.budget(), { ok: true });
    // $0.2 left holds less than 512 tokens out at $2000 a million: refused (on_limit stop)
    await assert.rejects(
      modelTurn(usd, { system: "", messages: [{ role: "user", content: "b" }], tools: [] }),
      (err: unknown) => err instanceof BudgetStop && "call_max" in err.state && err.state.limit === "usd",
    );
    assert.equal(usd.usage().calls, 1);
    const b = usd.reached();
    assert.equal(b.ok, false);
    assert.equal(!b.ok && b.limit, "usd");
    assert.equal(!b.ok && b.on_limit, "stop");
    assert.equal(new Prices().usd("anthropic", "claude-sonnet-4-5-20250929", 1_000_000, 0), 3);
    assert.equal(new Prices().lookup("openai-compatible", "who-knows"), null);
  });

  test("a streamed call of the loop cut before its usage is counted by what flowed, never 0", async () => {
    // a provider that streams 400 characters and drops the connection before message_delta
    const cut = await startCutStream({
      message: { model: "m", usage: { input_tokens: 3, output_tokens: 1 } },
      blockStart: true,
      dropAfterMs: 50,
    });
    const base = cut.base;
    HOSTS.push(new URL(base).host);
    const before = connector;
    connector = boundConnector(anth, oai, base);
    const mine: { type: string; data: any }[] = [];
    try {
      const s = await gateway().open({
        runId: "run_cut",
        agent,
        spec: specOf(
          { provider: "anthropic", name: "claude-sonnet-4-5", base_url: base, key_secret: "MODEL_KEY" },
          { max_tokens: 100_000 },
        ),
        input: "",
        events: async (type, data) => void mine.push({ type, data }),
      });
      await assert.rejects(
        modelTurn(s, { system: "", messages: [{ role: "user", content: "hi" }], tools: [], stream: true }),
      );
      const [c] = mine.filter((e) => e.type === "model_call").map((e) => e.data);
      assert.equal(c.status, "error");
      assert.equal(c.estimated, true, JSON.stringify(c));
      assert.equal(c.tokens_out, 100, "400 characters, about 4 a token");
      assert.ok(c.tokens_in > 0, "the input's estimate");
      assert.equal(s.usage().tokens_out, 100);
      s.close();
    } finally {
      connector = before;
      await cut.close();
    }
  });

  test("routing rules pick the model; workload tokens open and close", async () => {
    const spec = specOf({
      provider: "script",
      name: "main.json",
      routes: [
        { when: { input_contains: "urgent" }, model: { provider: "script", name: "fast.json" } },
        { when: { input_longer_than: 10 }, model: { provider: "script", name: "long.json" } },
      ],
    }).model!;
    assert.equal(routeModel(spec, "urgent: x").name, "fast.json");
    assert.equal(routeModel(spec, "a long input here").name, "long.json");
    assert.equal(routeModel(spec, "short").name, "main.json");
    const g = gateway(new Prices(), { "main.json": '[{"text":"ok"}]' });
    const s = await g.open({
      runId: "run_6",
      agent,
      spec: specOf({ provider: "script", name: "main.json" }),
      input: "",
      events: sink,
    });
    assert.match(s.token, /^wrk_[A-Za-z0-9_-]{43}$/);
    assert.equal(g.byToken(s.token), s);
    assert.equal(g.byToken("wrk_nope"), null);
    s.close();
    assert.equal(g.byToken(s.token), null);
    // a token lives as long as its run's time limit (and a margin), not longer
    const brief = new Gateway({
      keysOf: async () => ({}),
      readHome: async () => Buffer.from('[{"text":"ok"}]'),
      prices: new Prices(),
      fetch: boundConnector(),
      tokenMarginS: 0,
    });
    const short = await brief.open({
      runId: "run_9",
      agent,
      spec: specOf({ provider: "script", name: "main.json" }, { max_run_s: 1 }),
      input: "",
      events: sink,
    });
    assert.equal(brief.byToken(short.token), short);
    await new Promise((r) => setTimeout(r, 1100));
    assert.equal(brief.byToken(short.token), null);
    await assert.rejects(
      g.open({
        runId: "run_7",
        agent,
        spec: specOf({ provider: "anthropic", name: "claude-sonnet-4-5", key_secret: "MISSING" }),
        input: "",
        events: sink,
      }),
      /MISSING.*does not reach this agent/,
    );
    // a secret of use env is in every command's environment: never a model's key, even as the fallback
    await assert.rejects(
      g.open({
        runId: "run_7b",
        agent,
        spec: specOf({
          ...anthropicAt(anth.baseUrl, "MODEL_KEY"),
          fallback: { provider: "openai", name: "gpt-4o", key_secret: "ENV_KEY" },
        }),
        input: "",
        events: sink,
      }),
      (err: Error) => {
        assert.match(err.message, /ENV_KEY.*has use "env"/);
        assert.match(err.message, /create the key as a secret with use "model"/);
        assert.ok(!err.message.includes("sk-env-5a6b7c8d9e"), "the value is in the message");
        return true;
      },
    );
    await assert.rejects(
      g.open({
        runId: "run_8",
        agent,
        spec: specOf({ provider: "script", name: "none.json" }),
        input: "",
        events: sink,
      }),
      /could not be read/,
    );
  });

  test("a key goes only to its hosts: its own, or the official host of its provider over https", async () => {
    assert.equal(keyMayGo("https://api.anthropic.com/v1", "anthropic", []).ok, true);
    assert.equal(keyMayGo("https://API.Anthropic.com./v1", "anthropic", []).ok, true);
    assert.equal(keyMayGo("http://api.anthropic.com/v1", "anthropic", []).ok, false, "not in clear");
    assert.equal(keyMayGo("https://api.anthropic.com:8443/v1", "anthropic", []).ok, false);
    assert.equal(keyMayGo("https://api.openai.com/v1", "anthropic", []).ok, false, "another provider's host");
    assert.equal(keyMayGo("http://10.0.0.5:8000/v1", "openai-compatible", []).ok, false, "no official host");
    assert.equal(keyMayGo("http://10.0.0.5:8000/v1", "openai-compatible", ["10.0.0.5:8000"]).ok, true);
    assert.equal(keyMayGo("http://10.0.0.5:8001/v1", "openai-compatible", ["10.0.0.5:8000"]).ok, false);
    assert.equal(keyMayGo("http://10.0.0.5/v1", "openai-compatible", ["10.0.0.5:80"]).ok, true);
    assert.equal(keyMayGo("https://llm.example/v1", "openai-compatible", ["llm.example"]).ok, true);
    assert.equal(keyMayGo("https://llm.example:444/v1", "openai-compatible", ["llm.example"]).ok, false);
    assert.equal(
      keyMayGo("https://api.openai.com/v1", "openai", ["llm.example"]).ok,
      false,
      "own hosts only",
    );
    const g = gateway();
    await assert.rejects(
      g.open({
        runId: "run_h",
        agent,
        spec: specOf({
          ...anthropicAt(anth.baseUrl, "MODEL_KEY"),
          fallback: {
            provider: "openai",
            name: "gpt-4o",
            base_url: "http://127.0.0.1:9/v1",
            key_secret: "OTHER_KEY",
          },
        }),
        input: "",
        events: async () => {},
      }),
      (err: Error) => {
        assert.match(
          err.message,
          /the key OTHER_KEY of openai:gpt-4o may be sent only to .*not to 127\.0\.0\.1:9 /,
        );
        assert.match(err.message, /An owner or admin adds the host/);
        assert.ok(!err.message.includes(KEY));
        return true;
      },
    );
  });
});
