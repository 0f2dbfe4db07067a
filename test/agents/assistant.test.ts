// Assistant runs on a real server with real boxes and homes: the agent spec stored by version,
// the loop reading, writing and running a command to answer through the fake Anthropic server,
// a refused tool call it recovers from, budgets of tokens and dollars with each on_limit, a
// fallback on a 429, and the trace and receipt of each.
import assert from "node:assert/strict";
import fs from "node:fs/promises";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { boxSkipReason } from "../box/fixture.js";
import { startFakeAnthropic, startFakeOpenAI, type FakeModelServer } from "../support/fake-models.js";
import {
  anthropicAt,
  eventsOfType,
  putHomeFile,
  runAgent as runAgentOn,
  TERMINAL_STATUSES,
} from "../support/agent-runs.js";
import { privateAllow } from "../support/bound.js";
import { builtins, modelKey, orgAndMachine } from "../support/org.js";
import { startTestServer, type TestServer } from "../support/server.js";

const KEY = "sk-ant-test-7c4e9b1d2a3f";
const ALLOW_ALL = `@id("all") permit(principal, action, resource);`;
// script turns are priced so that dollars are easy to count: $1 per 1000 tokens in or out
const PRICES = JSON.stringify({ "script:*": { input_per_mtok: 1000, output_per_mtok: 1000 } });

describe("assistant runs", { skip: boxSkipReason() ?? false }, () => {
  let t: TestServer;
  let anth: FakeModelServer;
  let oai: FakeModelServer;
  let org: { id: string };
  let machine: { id: string };
  let n = 0;

  const agentWith = async (spec: Record<string, unknown>) => {
    const r = await t.call("POST", "/api/agents", {
      org_id: org.id,
      machine_id: machine.id,
      name: `a${++n}`,
      ...spec,
    });
    assert.equal(r.status, 201, JSON.stringify(r.body));
    return r.body;
  };
  const put = (agentId: string, p: string, data: string) => putHomeFile(t, agentId, p, data);
  const runAgent = (agentId: string, input: string) => runAgentOn(t, agentId, input);
  const of = eventsOfType;
  const script = (turns: unknown[]) => JSON.stringify({ turns });

  before(async () => {
    anth = await startFakeAnthropic();
    oai = await startFakeOpenAI();
    t = await startTestServer({
      env: { WARREN_MODEL_PRICES: PRICES, WARREN_EGRESS_PRIVATE_ALLOW: privateAllow(anth, oai) },
    });
    ({ org, machine } = await orgAndMachine(t.call, "thinking", { max_workspace_mib: 500 }));
    // the fakes stand for the providers: the key may go to them
    await modelKey(t.call, org.id, [anth, oai], KEY);
  });
  after(async () => {
    await t?.close();
    await anth?.close();
    await oai?.close();
  });

  test("the spec is stored by version, shown, and checked (Cedar's message for a bad policy)", async () => {
    const bad = await t.call("POST", "/api/agents", {
      org_id: org.id,
      machine_id: machine.id,
      name: "bad",
      kind: "assistant",
      model: { provider: "script", name: "s.json" },
      tool_policy: "permit(principal, action, resource) when { context.nope };",
    });
    assert.equal(bad.status, 400);
    assert.equal(bad.body.error.code, "request.invalid");
    assert.match(bad.body.error.message, /^tool_policy: .*nope/);
    const noModel = await t.call("POST", "/api/agents", {
      org_id: org.id,
      machine_id: machine.id,
      name: "x",
      kind: "assistant",
    });
    assert.equal(noModel.status, 400);
    assert.match(noModel.body.error.message, /model: is required for kind assistant/);
    const tooMany = await t.call("POST", "/api/agents", {
      org_id: org.id,
      machine_id: machine.id,
      name: "x",
      tools: Array.from({ length: 17 }, (_, i) => ({
        type: "http",
        name: `t${i}`,
        base_url: "https://example.com",
        methods: ["GET"],
      })),
    });
    assert.equal(tooMany.status, 400);

    const plain = await agentWith({});
    assert.equal(plain.kind, "command");
    assert.equal(plain.spec_version, null);
    assert.deepEqual(plain.limits, { max_run_s: 3600, on_limit: "stop" });
    const refused = await t.call("POST", `/api/agents/${plain.id}/runs`, { kind: "agent", input: "hi" });
    assert.equal(refused.status, 400);
    assert.match(refused.body.error.message, /kind command/);

    const a = await agentWith({
      kind: "assistant",
      model: { provider: "script", name: "s.json" },
      instructions: "Be brief.",
      tools: builtins("read_file"),
      tool_policy: ALLOW_ALL,
      limits: { max_run_s: 120, max_tokens: 5000 },
    });
    assert.equal(a.spec_version, 1);
    assert.deepEqual(a.model, { provider: "script", name: "s.json" });
    assert.deepEqual(a.limits, { max_run_s: 120, max_tokens: 5000, on_limit: "stop" });
    const p = await t.call("PATCH", `/api/agents/${a.id}`, { instructions: "Be briefer." });
    assert.equal(p.status, 200, JSON.stringify(p.body));
    assert.equal(p.body.spec_version, 2);
    assert.equal(p.body.instructions, "Be briefer.");
    assert.equal(p.body.tool_policy, ALLOW_ALL);
    // the same spec again writes no version
    assert.equal(
      (await t.call("PATCH", `/api/agents/${a.id}`, { instructions: "Be briefer." })).body.spec_version,
      2,
    );
    const badPatch = await t.call("PATCH", `/api/agents/${a.id}`, { tool_policy: "permit(" });
    assert.equal(badPatch.status, 400);
    assert.equal(badPatch.body.error.code, "request.invalid");
    const got = (await t.call("GET", `/api/agents/${a.id}`)).body;
    assert.equal(got.spec_version, 2);
    assert.equal(got.kind, "assistant");
    const listed = (await t.call("GET", `/api/agents?org_id=${org.id}`)).body.items.find(
      (x: { id: string }) => x.id === a.id,
    );
    assert.equal(listed.instructions, "Be briefer.");
  });

  test("reads, writes and runs a command to answer (Anthropic wire format, streamed); trace and receipt", async () => {
    anth.script([
      {
        text: "I will write the plan.",
        tool_calls: [
          { name: "write_file", input: { path: "notes/plan.txt", content: "three green apples\n" } },
        ],
      },
      { tool_calls: [{ name: "read_file", input: { path: "notes/plan.txt" } }] },
      { tool_calls: [{ name: "run_command", input: { command: "wc -w < notes/plan.txt; id -u" } }] },
      { text: "The plan has 3 words." },
    ]);
    anth.requests.length = 0;
    const a = await agentWith({
      kind: "assistant",
      model: anthropicAt(anth.baseUrl),
      instructions: "Count the words of the plan.",
      tools: builtins("read_file", "write_file", "run_command"),
      tool_policy: ALLOW_ALL,
    });
    // its memory is its memory artifact (it outlives the home)
    const mem = await t.inject({
      method: "PUT",
      url: `/api/orgs/${org.id}/artifacts/agents/${a.id}/memory.md`,
      payload: "The plan lives in notes/.",
      headers: { "content-type": "text/markdown" },
    });
    assert.equal(mem.statusCode, 200, mem.body);
    const { run, events } = await runAgent(a.id, "How many words has the plan?");
    assert.equal(run.status, "succeeded", JSON.stringify(run));
    assert.equal(run.kind, "assistant");
    assert.equal(run.output, "The plan has 3 words.");
    const home = path.join(t.stateRoot, "workspaces", machine.id, a.id);
    assert.equal(await fs.readFile(path.join(home, "notes/plan.txt"), "utf8"), "three green apples\n");

    // what the model was sent: the system prompt with the task and memory, the whole history each time
    assert.equal(anth.requests.length, 4);
    const last = anth.requests[3]!;
    assert.equal(last.headers["x-api-key"], KEY);
    assert.equal(last.body.stream, true);
    assert.match(last.body.system[0].text, /Count the words of the plan\./);
    assert.match(last.body.system[0].text, /The plan lives in notes\//);
    const history = JSON.stringify(last.body.messages);
    assert.match(history, /How many words has the plan\?/);
    assert.match(history, /three green apples/);
    assert.match(history, new RegExp(`3\\\\n${a.uid}`));

    const calls = of(events, "tool_call");
    assert.deepEqual(
      calls.map((c) => [c.tool, c.decision]),
      [
        ["write_file", "allow"],
        ["read_file", "allow"],
        ["run_command", "allow"],
      ],
    );
    assert.deepEqual(calls[0].policies, ["all"]);
    assert.ok(calls.every((c) => typeof c.duration_ms === "number" && c.result_bytes > 0));
    const models = of(events, "model_call");
    assert.equal(models.length, 4);
    assert.ok(
      models.every(
        (m) =>
          m.provider === "anthropic" &&
          m.model === "claude-sonnet-4-5" &&
          m.status === "ok" &&
          m.via === "loop",
      ),
    );
    assert.equal(of(events, "completion").length, 4);
    assert.equal(of(events, "prompt")[0].user, "How many words has the plan?");
    // the model's text streams as it comes, each piece naming its step; the whole answer last
    const outputs = of(events, "output");
    assert.deepEqual(outputs.at(-1), { stream: "stdout", data: "The plan has 3 words." });
    const texts = outputs.filter((o) => o.stream === "text");
    assert.equal(texts.length, outputs.length - 1);
    const byStep = new Map<number, string>();
    for (const o of texts) byStep.set(o.step, (byStep.get(o.step) ?? "") + o.data);
    assert.deepEqual(
      [...byStep],
      [
        [1, "I will write the plan."],
        [4, "The plan has 3 words."],
      ],
    );
    assert.doesNotMatch(JSON.stringify(events), new RegExp(KEY));
    assert.doesNotMatch(JSON.stringify(run), new RegExp(KEY));

    const tokensIn = models.reduce((s, m) => s + m.tokens_in, 0);
    const tokensOut = models.reduce((s, m) => s + m.tokens_out, 0);
    const usd = models.reduce((s, m) => s + m.usd, 0);
    assert.ok(tokensIn > 0 && tokensOut > 0 && usd > 0);
    assert.deepEqual(
      { ...run.usage, usd: undefined },
      {
        tokens_in: tokensIn,
        tokens_out: tokensOut,
        usd: undefined,
        steps: 4,
        tool_calls: 3,
        tool_refusals: 0,
      },
    );
    assert.ok(Math.abs(run.usage.usd - usd) < 1e-9);
    const rc = run.receipt;
    assert.equal(rc.kind, "assistant");
    assert.equal(rc.spec_version, 1);
    assert.deepEqual(rc.models, ["anthropic:claude-sonnet-4-5"]);
    assert.equal(rc.tokens_in, tokensIn);
    assert.equal(rc.tokens_out, tokensOut);
    assert.equal(rc.steps, 4);
    assert.equal(rc.model_calls, 4);
    assert.equal(rc.tool_calls_allowed, 3);
    assert.equal(rc.tool_calls_refused, 0);
  });

  test("a refused tool call is the tool's answer; the model recovers (scripted provider, no key)", async () => {
    const a = await agentWith({
      kind: "assistant",
      model: { provider: "script", name: "turns.json" },
      tools: builtins("read_file", "write_file"),
      tool_policy: `@id("reads") permit(principal, action, resource == Tool::"read_file");`,
    });
    await put(a.id, "facts.txt", "the sky is green here");
    await put(
      a.id,
      "turns.json",
      script([
        { tool_calls: [{ name: "write_file", input: { path: "facts.txt", content: "overwritten" } }] },
        {
          text: "Writing is refused; I will read instead.",
          tool_calls: [{ name: "read_file", input: { path: "facts.txt" } }],
        },
        { text: "The file says the sky is green here." },
      ]),
    );
    const { run, events } = await runAgent(a.id, "What does facts.txt say?");
    assert.equal(run.status, "succeeded", JSON.stringify(run));
    assert.equal(run.output, "The file says the sky is green here.");
    const calls = of(events, "tool_call");
    assert.equal(calls.length, 2);
    assert.equal(calls[0].tool, "write_file");
    assert.equal(calls[0].decision, "deny");
    assert.deepEqual(calls[0].policies, []);
    assert.match(calls[0].output, /refused|denied/i);
    assert.equal(calls[1].decision, "allow");
    assert.deepEqual(calls[1].policies, ["reads"]);
    assert.match(calls[1].output, /the sky is green here/);
    const home = path.join(t.stateRoot, "workspaces", machine.id, a.id);
    assert.equal(await fs.readFile(path.join(home, "facts.txt"), "utf8"), "the sky is green here");
    assert.equal(run.usage.tool_refusals, 1);
    assert.equal(run.usage.tool_calls, 2);
    assert.equal(run.receipt.tool_calls_refused, 1);
    assert.equal(run.receipt.tool_calls_allowed, 1);
    assert.deepEqual(run.receipt.models, ["script:turns.json"]);
  });

  for (const limit of ["tokens", "usd"] as const)
    for (const onLimit of ["stop", "finish"] as const)
      test(`a ${limit} budget reached, on_limit ${onLimit}`, async () => {
        const a = await agentWith({
          kind: "assistant",
          model: { provider: "script", name: "b.json" },
          tools: builtins("list_files"),
          tool_policy: ALLOW_ALL,
          // each turn is 600 tokens: $0.6 at the test's prices
          limits: { ...(limit === "tokens" ? { max_tokens: 1000 } : { max_usd: 1 }), on_limit: onLimit },
        });
        const u = { input_tokens: 500, output_tokens: 100 };
        await put(
          a.id,
          "b.json",
          script([
            { text: "one", tool_calls: [{ name: "list_files", input: {} }], usage: u },
            { text: "two", tool_calls: [{ name: "list_files", input: {} }], usage: u },
            { text: "never reached", usage: u },
          ]),
        );
        const { run, events } = await runAgent(a.id, "go");
        // the first call's maximum (its input's estimate and what is left as its max output)
        // fits; after its 600, the next call's least (input and 512 out) does not: it is never
        // made (stop) or is the one last call (finish)
        const budget = of(events, "budget");
        assert.equal(budget.length, 1, JSON.stringify(budget));
        assert.equal(budget[0].refused, true);
        assert.equal(budget[0].limit, limit);
        assert.equal(budget[0].on_limit, onLimit);
        assert.equal(budget[0].max, limit === "tokens" ? 1000 : 1);
        assert.ok(Math.abs(budget[0].used - (limit === "tokens" ? 600 : 0.6)) < 1e-9);
        assert.ok(budget[0].used + budget[0].reserved + budget[0].call_max > budget[0].max);
        assert.equal(budget[0].reserved, 0);
        assert.deepEqual(run.receipt.budget_reached.limit, limit);
        if (onLimit === "stop") {
          assert.equal(run.status, "failed");
          assert.match(run.status_reason, /budget was reached.*stopped/);
          assert.equal(run.output, "one");
          assert.equal(run.usage.steps, 1);
          assert.equal(of(events, "model_call").length, 1);
        } else {
          assert.equal(run.status, "succeeded", JSON.stringify(run));
          assert.equal(run.output, "two");
          assert.match(run.status_reason, /last call without tools/);
          assert.equal(run.usage.steps, 2);
          // the last call offered no tool: its tool call was not run
          assert.equal(run.usage.tool_calls, 1);
          assert.equal(of(events, "model_call").length, 2);
        }
        assert.equal(run.usage.tokens_in + run.usage.tokens_out, 600 * run.usage.steps);
        assert.ok(Math.abs(run.usage.usd - 0.6 * run.usage.steps) < 1e-9);
        assert.ok(Math.abs(run.receipt.usd - 0.6 * run.usage.steps) < 1e-9);
      });

  for (const onLimit of ["stop", "finish"] as const)
    test(`near max_tokens each call is sent with what is left as its max (Anthropic, on_limit ${onLimit})`, async () => {
      // each answer would use 1500 tokens out; the fake, as a provider does, gives no more
      // than the max_tokens it was sent
      const turn = {
        text: "more",
        tool_calls: [{ name: "list_files", input: {} }],
        usage: { input_tokens: 100, output_tokens: 1500 },
      };
      const final = { text: "the last word", usage: { input_tokens: 100, output_tokens: 1500 } };
      anth.script([turn, turn, turn, onLimit === "finish" ? final : turn, turn]);
      anth.requests.length = 0;
      const MAX = 5000;
      const a = await agentWith({
        kind: "assistant",
        model: anthropicAt(anth.baseUrl),
        tools: builtins("list_files"),
        tool_policy: ALLOW_ALL,
        limits: { max_tokens: MAX, on_limit: onLimit },
      });
      const { run, events } = await runAgent(a.id, "go on");
      const calls = of(events, "model_call");
      const sentMax = anth.requests.map((r) => r.body.max_tokens as number);
      const detail = JSON.stringify({
        sentMax,
        calls: calls.map((c) => [c.tokens_in, c.tokens_out, c.error]),
      });
      // three calls fit (1600, 1600, then what is left); the fourth's least (512 out) does not
      assert.equal(calls.length, onLimit === "stop" ? 3 : 4, detail);
      assert.equal(anth.requests.length, calls.length, "a refused call never reached the provider");
      let used = 0;
      for (const [i, c] of calls.entries()) {
        const max = sentMax[i]!;
        assert.ok(Number.isInteger(max) && max >= 512, detail);
        if (onLimit === "stop" || i < 3) {
          // what is left after the calls before, less this call's input: never more
          assert.ok(used + c.tokens_in + max <= MAX, detail);
          assert.ok(max < 16_384, `capped, not the model's own max: ${detail}`);
        }
        assert.equal(c.tokens_out, Math.min(1500, max), detail);
        used += c.tokens_in + c.tokens_out;
      }
      assert.ok(sentMax[2]! < 1500, `the third call was held below what it would use: ${detail}`);
      assert.equal(run.usage.tokens_in + run.usage.tokens_out, used);
      const budget = of(events, "budget");
      assert.equal(budget.length, 1);
      assert.equal(budget[0].refused, true);
      assert.equal(budget[0].model, "anthropic:claude-sonnet-4-5");
      assert.equal(budget[0].call_max > MAX - budget[0].used, true);
      if (onLimit === "stop") {
        // the run never passes max_tokens: each call's input is no more than its estimate here
        assert.ok(used <= MAX, detail);
        assert.equal(run.status, "failed");
        assert.match(run.status_reason, /token budget was reached.*stopped/);
        assert.equal(run.usage.steps, 3);
      } else {
        // the one last call gets 512 out, without a tool to ask for: it may pass by that much
        assert.equal(sentMax[3], 512, detail);
        const last = anth.requests[3]!.body;
        assert.ok(last.tools === undefined || last.tool_choice?.type === "none", JSON.stringify(last));
        assert.match(JSON.stringify(last.messages.at(-1)), /budget of this run is spent/);
        assert.ok(used <= MAX + 512 + 100, detail);
        assert.equal(run.status, "succeeded", JSON.stringify(run));
        assert.equal(run.output, "the last word");
        assert.match(run.status_reason, /last call without tools/);
        assert.equal(run.usage.tool_calls, 3);
      }
      assert.equal(run.receipt.budget_reached.limit, "tokens");
    });

  test("a 429 moves to the fallback (OpenAI wire format); the move is in the trace", async () => {
    anth.script([{ error: { status: 429, message: "rate limited, slow down" } }]);
    oai.script([{ text: "Answered by the fallback." }]);
    const a = await agentWith({
      kind: "assistant",
      model: {
        ...anthropicAt(anth.baseUrl),
        fallback: { provider: "openai-compatible", name: "local-model", base_url: oai.baseUrl },
      },
    });
    const { run, events } = await runAgent(a.id, "hello");
    assert.equal(run.status, "succeeded", JSON.stringify(run));
    assert.equal(run.output, "Answered by the fallback.");
    const calls = of(events, "model_call");
    assert.equal(calls.length, 2);
    assert.equal(calls[0].status, "error");
    assert.match(calls[0].error, /^429/);
    assert.deepEqual(calls[1].fallback_from, {
      provider: "anthropic",
      model: "claude-sonnet-4-5",
      reason: "429 rate limited",
    });
    assert.equal(calls[1].provider, "openai-compatible");
    assert.deepEqual(run.receipt.models, ["openai-compatible:local-model"]);
    assert.equal(run.receipt.model_calls, 2);
  });

  test("while it runs, the run shows its usage so far; a cancel ends it; its time limit times it out", async () => {
    const a = await agentWith({
      kind: "assistant",
      model: { provider: "script", name: "slow.json" },
      tools: builtins("run_command"),
      tool_policy: ALLOW_ALL,
    });
    await put(
      a.id,
      "slow.json",
      script([
        { tool_calls: [{ name: "run_command", input: { command: "sleep 30", timeout_s: 60 } }] },
        { text: "slept" },
      ]),
    );
    const started = await t.call("POST", `/api/agents/${a.id}/runs`, { kind: "agent", input: "sleep" });
    assert.equal(started.status, 202);
    let live: any;
    // until the model's first step is counted (a busy host may take long to get there)
    for (const until = Date.now() + 120_000; Date.now() < until;) {
      live = (await t.call("GET", `/api/runs/${started.body.id}`)).body;
      if (live.usage?.steps === 1) break;
      await new Promise((res) => setTimeout(res, 50));
    }
    assert.equal(live.status, "running");
    assert.equal(live.usage.steps, 1);
    assert.ok(live.usage.tokens_in > 0);
    const t0 = Date.now();
    assert.equal((await t.call("POST", `/api/runs/${started.body.id}/cancel`)).status, 200);
    let end: any;
    for (;;) {
      end = (await t.call("GET", `/api/runs/${started.body.id}`)).body;
      if (TERMINAL_STATUSES.includes(end.status)) break;
      await new Promise((res) => setTimeout(res, 50));
    }
    assert.equal(end.status, "cancelled");
    assert.ok(Date.now() - t0 < 15_000, "the command in the box was stopped with the run");
    assert.equal(end.usage.steps, 1);

    await t.call("PATCH", `/api/agents/${a.id}`, { limits: { max_run_s: 2 } });
    const timed = await runAgent(a.id, "sleep");
    assert.equal(timed.run.status, "timed_out");
    assert.equal(timed.run.timeout_s, 2);
    assert.match(timed.run.status_reason, /2 s limit/);
    assert.equal(timed.run.receipt.spec_version, 2);
  });

  test("at most 40 steps: a model that keeps asking for tools fails the run", async () => {
    const a = await agentWith({
      kind: "assistant",
      model: { provider: "script", name: "loop.json" },
      tools: builtins("list_files"),
      tool_policy: ALLOW_ALL,
    });
    const ask = {
      text: "again",
      tool_calls: [{ name: "list_files", input: {} }],
      usage: { input_tokens: 1, output_tokens: 1 },
    };
    await put(a.id, "loop.json", script(Array.from({ length: 45 }, () => ask)));
    const { run, events } = await runAgent(a.id, "go");
    assert.equal(run.status, "failed");
    assert.match(run.status_reason, /after 40 steps/);
    assert.equal(run.usage.steps, 40);
    assert.equal(of(events, "model_call").length, 40);
    assert.equal(run.usage.tool_calls, 40);
    assert.equal(run.output, "again");
  });

  test("a model that fails with no fallback fails the run with the provider's reason", async () => {
    const a = await agentWith({ kind: "assistant", model: { provider: "script", name: "missing.json" } });
    const { run } = await runAgent(a.id, "hello");
    assert.equal(run.status, "failed");
    assert.match(run.status_reason, /missing\.json could not be read/);
  });

  test("a model's key is a secret of use model: its commands never see it; an env secret is refused as a key", async () => {
    // the key reaches the agent's organisation, yet its run_command has no such variable
    anth.script([
      {
        tool_calls: [
          { name: "run_command", input: { command: 'env; printf "[%s]" "${ANTHROPIC_KEY-unset}"' } },
        ],
      },
      { text: "looked" },
    ]);
    anth.requests.length = 0;
    const a = await agentWith({
      kind: "assistant",
      model: anthropicAt(anth.baseUrl),
      tools: builtins("run_command"),
      tool_policy: ALLOW_ALL,
    });
    const { run } = await runAgent(a.id, "look around");
    assert.equal(run.status, "succeeded", JSON.stringify(run));
    const answer = JSON.stringify(anth.requests.at(-1)!.body.messages);
    assert.match(answer, /\[unset\]/);
    assert.doesNotMatch(answer, /ANTHROPIC_KEY=/);
    assert.ok(!answer.includes(KEY), "the key reached a command");
    assert.equal(anth.requests.at(-1)!.headers["x-api-key"], KEY, "the gateway still sends it");

    // a secret of use env is in every command's environment: the gateway takes no key from it
    const env = await t.call("POST", "/api/secrets", {
      org_id: org.id,
      name: "PLAIN_KEY",
      value: "sk-plain-3e9a7c1b5d",
      grants: [{ scope: "org", id: org.id }],
    });
    assert.equal(env.status, 201, JSON.stringify(env.body));
    assert.equal(env.body.use, "env");
    anth.requests.length = 0;
    const b = await agentWith({
      kind: "assistant",
      model: anthropicAt(anth.baseUrl, "PLAIN_KEY"),
    });
    const refused = await runAgent(b.id, "hello");
    assert.equal(refused.run.status, "failed");
    assert.match(refused.run.status_reason, /PLAIN_KEY .*has use "env"/);
    assert.match(refused.run.status_reason, /create the key as a secret with use "model"/);
    assert.equal(anth.requests.length, 0, "no call went out with it");
    assert.equal((await t.call("DELETE", `/api/secrets/${env.body.id}`)).status, 204);
  });
});
