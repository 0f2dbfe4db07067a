// The model gateway's HTTP face (what a harness CLI in the box calls) against local fake
// providers speaking the Anthropic Messages, OpenAI Chat Completions and Responses wire
// formats: the workload token in, the real key out to the provider only, answers streamed
// through, usage read and recorded, fallback on a 429, budgets, errors in the client's format.
import assert from "node:assert/strict";
import http from "node:http";
import net, { type AddressInfo } from "node:net";
import { after, before, describe, test } from "node:test";
import { AgentSpec } from "../../src/contract/spec.js";
import { Gateway } from "../../src/models/gateway.js";
import { endpoint, ModelHttpFace } from "../../src/models/http.js";
import { Prices } from "../../src/models/prices.js";
import type { GatewaySession } from "../../src/models/types.js";
import type { GuardedFetch } from "../../src/net/connector.js";
import { boundConnector } from "../support/bound.js";
import { startCutStream } from "../support/cut-stream.js";
import { startFakeAnthropic, startFakeOpenAI, type FakeModelServer } from "../support/fake-models.js";
import { startFakeResponses, type FakeResponsesServer } from "../support/fake-responses.js";

const KEY = "sk-real-7c1e99aa0b3d";
const HOSTS: string[] = [];
const hostOf = (f: { baseUrl: string }) => new URL(f.baseUrl).host;
const agent = {
  id: "agt_0000000000000000000001",
  orgId: "org_0000000000000000000001",
  machineId: "mch_0000000000000000000001",
};

describe("the model gateway's HTTP face", () => {
  const events: { type: string; data: any }[] = [];
  // the operator's bound admits the fake providers, once they listen
  let connector: GuardedFetch = boundConnector();
  const gateway = new Gateway({
    // the fakes' hosts, as an owner gives a key's hosts
    keysOf: async () => ({ MODEL_KEY: { use: "model", value: KEY, hosts: HOSTS } }),
    readHome: async () => Buffer.from(""),
    prices: new Prices(),
    fetch: (input, init) => connector(input, init),
  });
  const face = new ModelHttpFace({ gateway });
  const server = http.createServer(face.handle);
  let url = "";
  let anth: FakeModelServer;
  let oai: FakeModelServer;
  let resp: FakeResponsesServer;
  let down: FakeModelServer;

  const open = async (model: Record<string, unknown>, limits: Record<string, unknown> = {}) =>
    gateway.open({
      runId: "run_0000000000000001",
      agent,
      spec: AgentSpec.parse({ kind: "codex", model: { key_secret: "MODEL_KEY", ...model }, limits }),
      input: "hi",
      events: async (type, data) => void events.push({ type, data }),
    });
  const post = async (path: string, token: string, body: unknown, headers: Record<string, string> = {}) => {
    const r = await fetch(url + path, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${token}`, ...headers },
      body: JSON.stringify(body),
    });
    return { status: r.status, type: r.headers.get("content-type") ?? "", text: await r.text() };
  };
  const calls = () => events.filter((e) => e.type === "model_call").map((e) => e.data);

  before(async () => {
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    anth = await startFakeAnthropic([
      { text: "Hello from the fake.", usage: { input_tokens: 31, output_tokens: 7 } },
    ]);
    oai = await startFakeOpenAI([{ text: "Chat answer.", usage: { input_tokens: 21, output_tokens: 4 } }]);
    resp = await startFakeResponses([
      { text: "Responses answer.", usage: { input_tokens: 55, output_tokens: 6 } },
    ]);
    down = await startFakeOpenAI([{ error: { status: 429, message: "slow down" } }]);
    HOSTS.push(...[anth, oai, resp, down].map(hostOf));
    connector = boundConnector(anth, oai, resp, down);
  });
  after(async () => {
    face.close();
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
    for (const f of [anth, oai, resp, down]) await f.close();
  });

  test("endpoint: a base URL with a path takes the suffix, a bare host gets /v1", () => {
    assert.equal(endpoint("https://api.example.com/v1", "/messages"), "https://api.example.com/v1/messages");
    assert.equal(endpoint("https://api.example.com", "/responses"), "https://api.example.com/v1/responses");
    assert.equal(
      endpoint("http://127.0.0.1:9/openai/v1/", "/chat/completions"),
      "http://127.0.0.1:9/openai/v1/chat/completions",
    );
  });

  test("Responses API, streamed: passed through, the real key only upstream, usage recorded", async () => {
    events.length = 0;
    resp.requests.length = 0;
    const s = await open({ provider: "openai", name: "gpt-5-mini", base_url: resp.baseUrl });
    try {
      const r = await post("/v1/responses", s.token, {
        model: "whatever-the-cli-says",
        stream: true,
        input: [{ type: "message", role: "user", content: [{ type: "input_text", text: "hi" }] }],
      });
      assert.equal(r.status, 200);
      assert.match(r.type, /text\/event-stream/);
      assert.match(r.text, /event: response\.output_text\.delta/);
      assert.match(r.text, /"type":"response\.completed"/);
      assert.doesNotMatch(r.text, new RegExp(KEY));
      const up = resp.requests[0]!;
      assert.equal(up.headers.authorization, `Bearer ${KEY}`, "the provider gets the real key");
      assert.equal(up.body.model, "gpt-5-mini", "the run's model, not the CLI's");
      assert.doesNotMatch(JSON.stringify(up), new RegExp(s.token), "the workload token stays here");
      const [c] = calls();
      assert.deepEqual(
        {
          provider: c.provider,
          model: c.model,
          in: c.tokens_in,
          out: c.tokens_out,
          via: c.via,
          status: c.status,
        },
        { provider: "openai", model: "gpt-5-mini", in: 55, out: 6, via: "http", status: "ok" },
      );
      assert.equal(c.finish_reason, "completed");
      assert.ok(c.usd > 0, "priced by the table");
      assert.deepEqual(s.usage(), { tokens_in: 55, tokens_out: 6, usd: c.usd, calls: 1 });
    } finally {
      s.close();
    }
  });

  test("Anthropic Messages, streamed and whole: x-api-key in, usage from message_start and message_delta", async () => {
    events.length = 0;
    anth.requests.length = 0;
    const s = await open({ provider: "anthropic", name: "claude-sonnet-4-5", base_url: anth.baseUrl });
    try {
      for (const stream of [true, false]) {
        const r = await fetch(`${url}/v1/messages`, {
          method: "POST",
          headers: {
            "content-type": "application/json",
            "x-api-key": s.token,
            "anthropic-version": "2023-06-01",
          },
          body: JSON.stringify({
            model: "x",
            max_tokens: 100,
            stream,
            messages: [{ role: "user", content: "hi" }],
          }),
        });
        const text = await r.text();
        assert.equal(r.status, 200, text);
        if (stream) assert.match(text, /event: message_delta/);
        else assert.equal(JSON.parse(text).content[0].text, "Hello from the fake.");
      }
      assert.equal(anth.requests[0]!.headers["x-api-key"], KEY);
      assert.equal(anth.requests[0]!.headers["anthropic-version"], "2023-06-01");
      const cs = calls();
      assert.equal(cs.length, 2);
      for (const c of cs) {
        assert.equal(c.tokens_in, 31);
        assert.equal(c.tokens_out, 7);
        assert.equal(c.finish_reason, "end_turn");
      }
    } finally {
      s.close();
    }
  });

  test("Chat Completions, streamed: usage asked for and read from the last chunk", async () => {
    events.length = 0;
    oai.requests.length = 0;
    const s = await open({ provider: "openai", name: "gpt-4o", base_url: oai.baseUrl });
    try {
      const r = await post("/v1/chat/completions", s.token, {
        model: "x",
        stream: true,
        messages: [{ role: "user", content: "hi" }],
      });
      assert.equal(r.status, 200);
      assert.match(r.text, /data: \[DONE\]/);
      assert.equal(oai.requests[0]!.body.stream_options.include_usage, true);
      const [c] = calls();
      assert.equal(c.tokens_in, 21);
      assert.equal(c.tokens_out, 4);
      assert.equal(c.finish_reason, "stop");
    } finally {
      s.close();
    }
  });

  test("a 429 moves to the fallback; both calls are in the trace", async () => {
    events.length = 0;
    const s = await open({
      provider: "openai",
      name: "gpt-busy",
      base_url: down.baseUrl,
      fallback: { provider: "openai", name: "gpt-4o", base_url: oai.baseUrl, key_secret: "MODEL_KEY" },
    });
    try {
      const r = await post("/v1/chat/completions", s.token, {
        model: "x",
        messages: [{ role: "user", content: "hi" }],
      });
      assert.equal(r.status, 200, r.text);
      assert.equal(JSON.parse(r.text).choices[0].message.content, "Chat answer.");
      const [first, second] = calls();
      assert.equal(first.status, "error");
      assert.match(first.error, /^429: .*slow down/);
      assert.equal(second.status, "ok");
      assert.deepEqual(second.fallback_from, {
        provider: "openai",
        model: "gpt-busy",
        reason: "429 rate limited",
      });
    } finally {
      s.close();
    }
  });

  test("refusals in the client's own format: no token, a closed session, a wire the models do not speak, a bad body", async () => {
    const none = await post("/v1/responses", "wrk_nope", { input: [] });
    assert.equal(none.status, 401);
    assert.equal(JSON.parse(none.text).error.code, "invalid_api_key");
    const s = await open({ provider: "openai", name: "gpt-4o", base_url: oai.baseUrl });
    const wrong = await fetch(`${url}/v1/messages`, {
      method: "POST",
      headers: { "x-api-key": s.token },
      body: "{}",
    });
    assert.equal(wrong.status, 400);
    const w = (await wrong.json()) as any;
    assert.equal(w.type, "error");
    assert.match(w.error.message, /do not speak the anthropic wire format/);
    const bad = await post("/v1/chat/completions", s.token, "[1,2]");
    assert.equal(bad.status, 400);
    const models = await fetch(`${url}/v1/models`, { headers: { authorization: `Bearer ${s.token}` } });
    assert.deepEqual(
      ((await models.json()) as any).data.map((m: any) => m.id),
      ["gpt-4o"],
    );
    const missing = await post("/v1/embeddings", s.token, {});
    assert.equal(missing.status, 404);
    s.close();
    const closed = await post("/v1/chat/completions", s.token, { messages: [] });
    assert.equal(closed.status, 401, "a run's token dies with its session");
  });

  test("a bridged connection serves only the runs of the agent that opened it", async () => {
    const s = await open({ provider: "openai", name: "gpt-4o", base_url: oai.baseUrl });
    const owned = new ModelHttpFace({
      gateway,
      ownerOf: (runId) => (runId === s.runId ? agent.id : undefined),
    });
    // connections handed to the face as a bridge hands them: a stream and who opened it
    let who = agent.id;
    const bridge = net.createServer((socket) => owned.serve(socket, { agentId: who }));
    await new Promise<void>((r) => bridge.listen(0, "127.0.0.1", r));
    const base = `http://127.0.0.1:${(bridge.address() as AddressInfo).port}`;
    const ask = () =>
      fetch(`${base}/v1/chat/completions`, {
        method: "POST",
        headers: { authorization: `Bearer ${s.token}`, connection: "close" },
        body: JSON.stringify({ messages: [{ role: "user", content: "hi" }] }),
      });
    try {
      assert.equal((await ask()).status, 200, "the run's own agent");
      who = "agt_0000000000000000000002";
      const other = await ask();
      assert.equal(other.status, 401, "another agent of the machine with a token it read somewhere");
      assert.equal(((await other.json()) as any).error.code, "invalid_api_key");
    } finally {
      s.close();
      owned.close();
      bridge.close();
    }
  });

  test("a provider's error that echoes the key reaches the client without it", async () => {
    const leak = await startFakeOpenAI([
      { error: { status: 401, message: `Incorrect API key provided: ${KEY}` } },
    ]);
    HOSTS.push(hostOf(leak));
    connector = boundConnector(anth, oai, resp, down, leak);
    const s = await open({ provider: "openai", name: "gpt-4o", base_url: leak.baseUrl });
    try {
      const r = await post("/v1/chat/completions", s.token, { messages: [{ role: "user", content: "hi" }] });
      assert.equal(r.status, 401);
      assert.doesNotMatch(r.text, new RegExp(KEY));
      assert.match(r.text, /Incorrect API key provided: \[redacted\]/);
      assert.doesNotMatch(JSON.stringify(calls()), new RegExp(KEY));
    } finally {
      s.close();
      await leak.close();
    }
  });

  test("budgets: a call whose maximum would cross is not sent; finish allows one last call without tools", async () => {
    const tools = [{ type: "function", function: { name: "f", parameters: { type: "object" } } }];
    const ask = (s: GatewaySession, max_tokens = 5) =>
      post("/v1/chat/completions", s.token, {
        messages: [{ role: "user", content: "hi" }],
        tools,
        max_tokens,
      });
    oai.requests.length = 0;
    events.length = 0;
    // each answer uses 21 + 4 = 25 tokens; a call reserves its input's estimate and max_tokens
    const stop = await open(
      { provider: "openai", name: "gpt-4o", base_url: oai.baseUrl },
      { max_tokens: 200 },
    );
    let sent = 0;
    try {
      for (;;) {
        const r = await ask(stop);
        if (r.status !== 200) {
          assert.equal(r.status, 429);
          const e = JSON.parse(r.text).error;
          assert.equal(e.code, "insufficient_quota");
          assert.match(e.message, /budget cannot hold this call: it may use up to \d+ tokens/);
          break;
        }
        sent++;
        assert.ok(sent < 20, "the budget refuses at last");
      }
      const used = stop.usage().tokens_in + stop.usage().tokens_out;
      assert.equal(oai.requests.length, sent, "a refused call never reached the provider");
      assert.ok(used <= 200, `used ${used} of 200`);
      const refusal = events.find((e) => e.type === "budget")?.data;
      assert.equal(refusal?.refused, true);
      assert.equal(refusal.limit, "tokens");
      assert.ok(refusal.used + refusal.reserved + refusal.call_max > 200);
    } finally {
      stop.close();
    }
    oai.requests.length = 0;
    const fin = await open(
      { provider: "openai", name: "gpt-4o", base_url: oai.baseUrl },
      { max_tokens: 10, on_limit: "finish" },
    );
    try {
      assert.equal((await ask(fin)).status, 200, "one last call");
      assert.equal((await ask(fin)).status, 429);
      assert.equal(oai.requests.length, 1);
      assert.equal(oai.requests[0]!.body.tools, undefined, "the last call has no tools");
    } finally {
      fin.close();
    }
  });

  test("an answer cut before its usage is counted by what flowed, never 0", async () => {
    // a provider that streams a little text and drops the connection before message_delta
    const cut = await startCutStream({ message: { usage: { output_tokens: 1 } } });
    const base = cut.base;
    HOSTS.push(new URL(base).host);
    connector = boundConnector(anth, oai, resp, down, base);
    events.length = 0;
    const s = await open({ provider: "anthropic", name: "claude-sonnet-4-5", base_url: base });
    try {
      const body = { model: "m", max_tokens: 50, stream: true, messages: [{ role: "user", content: "hi" }] };
      await post("/v1/messages", s.token, body).catch(() => null);
      await s.idle(10_000);
      const [c] = calls();
      assert.equal(c.status, "error");
      assert.equal(c.estimated, true);
      assert.equal(c.tokens_out, 100, "400 characters, about 4 a token");
      assert.ok(c.tokens_in > 0, "the input's estimate");
      assert.deepEqual(s.usage().tokens_out, 100);
    } finally {
      s.close();
      await cut.close();
    }
  });

  test("a call with no max output of its own, near the budget's end, is sent with what is left as its max", async () => {
    oai.requests.length = 0;
    const s = await open({ provider: "openai", name: "gpt-4o", base_url: oai.baseUrl }, { max_tokens: 1000 });
    try {
      const r = await post("/v1/chat/completions", s.token, { messages: [{ role: "user", content: "hi" }] });
      assert.equal(r.status, 200);
      const sent = oai.requests[0]!.body;
      const estimate = Math.ceil(
        Buffer.byteLength(JSON.stringify({ ...sent, max_completion_tokens: undefined })) / 4,
      );
      assert.ok(
        sent.max_completion_tokens > 0 && sent.max_completion_tokens <= 1000 - estimate + 1,
        String(sent.max_completion_tokens),
      );
    } finally {
      s.close();
    }
    oai.requests.length = 0;
    const roomy = await open(
      { provider: "openai", name: "gpt-4o", base_url: oai.baseUrl },
      { max_tokens: 1_000_000 },
    );
    try {
      assert.equal(
        (await post("/v1/chat/completions", roomy.token, { messages: [{ role: "user", content: "hi" }] }))
          .status,
        200,
      );
      assert.equal(
        oai.requests[0]!.body.max_completion_tokens,
        undefined,
        "far from the end: the model's own max",
      );
    } finally {
      roomy.close();
    }
  });
});
