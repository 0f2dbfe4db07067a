// A harness kind end to end with its real CLI: codex (installed by scripts/harness.sh, bound
// read-only into the box) runs headless in a real box as the agent, against a scripted OpenAI
// Responses server on loopback behind the gateway, reached from the box through the gateway
// bridge with the run's workload token. The real key never enters the box: the box's
// environment, files and /proc are searched for it while the CLI runs (beside controls that
// must be found: another secret of the agent, a file of its home). A second run calls a tool
// of the agent over MCP through the tool gateway, decided by its policy.
import assert from "node:assert/strict";
import { existsSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { installedVersion } from "../../src/runs/harness.js";
import { boxSkipReason, testProvider } from "../box/fixture.js";
import {
  startFakeResponses,
  type FakeResponsesServer,
  type ResponsesTurn,
} from "../support/fake-responses.js";
import { startFakeAnthropic, startFakeOpenAI, type FakeModelServer } from "../support/fake-models.js";
import { anthropicAt, eventsOfType, putHomeFile, runAgent as runAgentOn } from "../support/agent-runs.js";
import { whereFound } from "../support/probe.js";
import { HARNESS_DIR, harnessSkip, startHarnessServer } from "../support/harness.js";
import { builtins, makeAgent, orgAndMachine } from "../support/org.js";
import { startTestServer, type TestServer } from "../support/server.js";

const KEY = "sk-proj-real-4b8e1f0c9d2a7e63";
const OTHER = "other-secret-5e7a1c9b3d";
const CONTROL = "control-in-a-file-8f2d4b6a";
const ALLOW_ALL = `@id("all") permit(principal, action, resource);`;
const probe = (values: Record<string, string>) =>
  whereFound(values, ['echo "token:${WARREN_RUN_TOKEN:0:4}"']);

const skip = boxSkipReason() ?? harnessSkip("codex");
const openSkip = harnessSkip("opencode");
const claudeSkip = harnessSkip("claude-code");

describe("harness kinds: codex and claude-code end to end", { skip }, () => {
  let t: TestServer;
  let fake: FakeResponsesServer;
  // the providers of the claude-code and opencode runs: listening before the server starts, so
  // the operator's bound (WARREN_EGRESS_PRIVATE_ALLOW) names their ports and nothing else
  let anth: FakeModelServer;
  let oai: FakeModelServer;
  let org: { id: string };
  let modelKeyId = "";
  // the fakes stand for the providers: an owner lets the key go to each (PATCH hosts)
  const allowHost = async (f: { baseUrl: string }) => {
    const s = await t.call("GET", `/api/secrets/${modelKeyId}`);
    const hosts = [...s.body.hosts, new URL(f.baseUrl).host];
    const r = await t.call("PATCH", `/api/secrets/${modelKeyId}`, { hosts });
    assert.equal(r.status, 200, JSON.stringify(r.body));
  };
  let machine: { id: string };
  let turns: ResponsesTurn[] = [];
  let n = 0;

  const agentWith = async (spec: Record<string, unknown>) => {
    const r = await t.call("POST", "/api/agents", {
      org_id: org.id,
      machine_id: machine.id,
      name: `codex${++n}`,
      kind: "codex",
      model: { provider: "openai", name: "gpt-5-mini", base_url: fake.baseUrl, key_secret: "MODEL_KEY" },
      ...spec,
    });
    assert.equal(r.status, 201, JSON.stringify(r.body));
    return r.body;
  };
  const put = (agentId: string, p: string, data: string) => putHomeFile(t, agentId, p, data);
  const runAgent = (agentId: string, input: string) =>
    runAgentOn(t, agentId, input, { timeoutMs: Number(process.env.HARNESS_TEST_MS ?? 120_000), pollMs: 100 });
  const of = eventsOfType;

  before(async () => {
    // the fake answers from `turns`, replaced by each test
    fake = await startFakeResponses(
      new Proxy([] as ResponsesTurn[], { get: (_t, k) => Reflect.get(turns, k) }),
    );
    anth = await startFakeAnthropic([
      {
        tool_calls: [
          { name: "Bash", input: { command: `(${probe({ key: KEY, other: OTHER })}) > probe.txt 2>&1` } },
        ],
      },
      { text: "CLAUDE-DONE", usage: { input_tokens: 300, output_tokens: 9 } },
    ]);
    oai = await startFakeOpenAI([
      {
        tool_calls: [
          {
            name: "bash",
            input: {
              command: `(${probe({ key: KEY, other: OTHER })}) > probe.txt 2>&1`,
              description: "probe",
            },
          },
        ],
      },
      { text: "OPENCODE-DONE", usage: { input_tokens: 200, output_tokens: 7 } },
    ]);
    t = await startHarnessServer(["codex", "claude-code", "opencode"], [fake, anth, oai]);
    ({ org, machine } = await orgAndMachine(t.call, "harness", { max_workspace_mib: 500 }));
    for (const [name, value, use] of [
      ["MODEL_KEY", KEY, "model"],
      ["OTHER_SECRET", OTHER, "env"],
    ]) {
      const s = await t.call("POST", "/api/secrets", {
        org_id: org.id,
        name,
        description: "",
        value,
        use,
        grants: [{ scope: "org", id: org.id }],
      });
      assert.equal(s.status, 201, JSON.stringify(s.body));
      if (name === "MODEL_KEY") modelKeyId = s.body.id;
    }
    await allowHost(fake);
  });
  after(async () => {
    await t?.close();
    await fake?.close();
    await anth?.close();
    await oai?.close();
  });

  test("codex exec in the box: the gateway's base URL and the workload token, no real key anywhere in the box", async () => {
    assert.ok(existsSync(path.join(HARNESS_DIR, "codex")));
    const a = await agentWith({ instructions: "HARNESS-INSTRUCTIONS-MARK: answer briefly." });
    await put(a.id, "control.txt", CONTROL);
    turns = [
      { call: { tool: "exec", command: probe({ key: KEY, other: OTHER, control: CONTROL }) } },
      { text: "The probe said:\n{{outputs}}\nDONE", usage: { input_tokens: 400, output_tokens: 20 } },
    ];
    fake.requests.length = 0;
    const { run, events } = await runAgent(a.id, "INPUT-MARK: search the box");
    assert.equal(
      run.status,
      "succeeded",
      JSON.stringify({ run, stderr: of(events, "output") }).slice(0, 4000),
    );
    // its stdout is the run's output: codex's last message
    assert.match(run.output, /The probe said:/);
    assert.match(run.output, /DONE\s*$/);
    assert.match(run.output, /key: none/, "the real key is nowhere in the box");
    assert.match(
      run.output,
      /other: env .*\/proc\/\d+\/environ/,
      "the search finds what is there: another secret",
    );
    assert.match(run.output, new RegExp(`control: .*/home/${a.id}/control.txt`), "and a file of the home");
    assert.match(run.output, /token:wrk_/, "the CLI's key is the workload token");
    assert.doesNotMatch(JSON.stringify(events), new RegExp(KEY));

    // the provider got the real key, the run's model, the input and the instructions
    assert.equal(fake.requests.length, 2);
    for (const r of fake.requests) {
      assert.equal(r.headers.authorization, `Bearer ${KEY}`);
      assert.equal(r.body.model, "gpt-5-mini");
      assert.doesNotMatch(JSON.stringify(r.headers), /wrk_/, "the workload token stays in the server");
    }
    const first = JSON.stringify(fake.requests[0]!.body.input);
    assert.match(first, /INPUT-MARK: search the box/);
    assert.match(first, /HARNESS-INSTRUCTIONS-MARK/);

    // each call through the gateway is in the trace, counted in the usage and the receipt
    const calls = of(events, "model_call");
    assert.equal(calls.length, 2);
    for (const c of calls) {
      assert.equal(c.via, "http");
      assert.equal(c.status, "ok");
      assert.equal(c.provider, "openai");
      assert.equal(c.finish_reason, "completed");
    }
    assert.equal(calls[1].tokens_in, 400);
    assert.equal(run.usage.tokens_in, 100 + 400);
    assert.equal(run.usage.tokens_out, 10 + 20);
    assert.equal(run.usage.steps, 2);
    const h = of(events, "harness")[0];
    assert.equal(h.kind, "codex");
    assert.equal(h.version, installedVersion(HARNESS_DIR, "codex"));
    assert.equal(h.base_url, "http://127.0.0.1:3129");
    assert.equal(run.receipt.kind, "codex");
    assert.deepEqual(run.receipt.models, ["openai:gpt-5-mini"]);
    assert.equal(run.receipt.model_calls, 2);
  });

  test("a tool of the agent through the tool gateway (MCP), decided by its policy", async () => {
    const a = await agentWith({
      tools: builtins("read_file"),
      tool_policy: ALLOW_ALL,
    });
    await put(a.id, "notes.txt", "MCP-CONTENT-42");
    turns = [
      { call: { tool: "read_file", arguments: { path: "notes.txt" } } },
      { text: "file: {{outputs}}" },
    ];
    fake.requests.length = 0;
    const { run, events } = await runAgent(a.id, "read my notes");
    assert.equal(
      run.status,
      "succeeded",
      JSON.stringify({ run, stderr: of(events, "output") }).slice(0, 4000),
    );
    assert.match(run.output, /MCP-CONTENT-42/);
    // codex lists the MCP server's tools as one namespace of function tools
    const listed = fake.requests[0]!.body.tools as {
      type: string;
      name?: string;
      tools?: { name: string }[];
    }[];
    const ns = listed.find((x) => x.type === "namespace" && x.name === "mcp__warren");
    assert.deepEqual(
      ns?.tools?.map((x) => x.name),
      ["read_file"],
      "the run's tools, listed by the tool gateway",
    );
    const tc = of(events, "tool_call");
    assert.equal(tc.length, 1);
    assert.equal(tc[0].tool, "read_file");
    assert.equal(tc[0].decision, "allow");
    assert.deepEqual(tc[0].policies, ["all"]);
    assert.equal(run.usage.tool_calls, 1);
    assert.equal(run.receipt.tool_calls_allowed, 1);

    // each call through the gateways is a line of the run's log in the agent's runtime folder,
    // its uid's alone, with no secret in it (docs/api.md "GitHub App tokens and the runtime folder")
    const dir = testProvider === "oci" ? "oci-boxes" : "boxes";
    const file = path.join(t.stateRoot, "run", dir, machine.id, "warren", a.id, "logs", `${run.id}.log`);
    const text = readFileSync(file, "utf8");
    const lines = text
      .trimEnd()
      .split("\n")
      .map((l) => JSON.parse(l));
    assert.deepEqual(
      lines.map((l) => [l.kind, l.name, l.status]),
      [
        ["model", "openai:gpt-5-mini", "ok"],
        ["tool", "read_file", "ok"],
        ["model", "openai:gpt-5-mini", "ok"],
      ],
    );
    const st = statSync(file);
    assert.equal(st.uid, run.receipt.uid);
    assert.equal(st.mode & 0o777, 0o600);
    assert.doesNotMatch(text, new RegExp(`${KEY}|${OTHER}|wrk_|MCP-CONTENT`));
  });

  test(
    "claude -p in the box: its Bash tool searches the box, the gateway answers in Anthropic's format",
    { skip: claudeSkip },
    async () => {
      try {
        await allowHost(anth);
        const a = await agentWith({
          kind: "claude-code",
          model: anthropicAt(anth.baseUrl, "MODEL_KEY"),
          instructions: "CLAUDE-INSTRUCTIONS-MARK",
        });
        const { run, events } = await runAgent(a.id, "INPUT-MARK: look around");
        assert.equal(
          run.status,
          "succeeded",
          JSON.stringify({ run, stderr: of(events, "output") }).slice(0, 4000),
        );
        assert.equal(run.output.trim(), "CLAUDE-DONE");
        const probed = await t.inject({ url: `/api/agents/${a.id}/files/probe.txt` });
        assert.equal(probed.statusCode, 200, "Claude Code ran the probe with its Bash tool");
        assert.match(probed.body, /key: none/, "the real key is nowhere in the box");
        assert.match(probed.body, /other: env .*\/proc\/\d+\/environ/);
        assert.match(probed.body, /token:wrk_/);
        assert.ok(anth.requests.length >= 2);
        for (const r of anth.requests) {
          assert.equal(r.headers["x-api-key"], KEY, "the provider gets the real key");
          assert.equal(r.body.model, "claude-sonnet-4-5");
        }
        assert.ok(
          anth.requests.some((r) => /CLAUDE-INSTRUCTIONS-MARK/.test(JSON.stringify(r.body.system))),
          "the instructions are in the system prompt",
        );
        const calls = of(events, "model_call");
        assert.ok(calls.length >= 2 && calls.every((c) => c.via === "http" && c.provider === "anthropic"));
        assert.ok(calls.some((c) => c.tokens_in === 300 && c.finish_reason === "end_turn"));
        assert.equal(of(events, "harness")[0].kind, "claude-code");
        assert.doesNotMatch(JSON.stringify(events), new RegExp(KEY));
      } finally {
        anth.requests.length = 0;
      }
    },
  );

  test(
    "opencode run in the box: its bash tool searches the box, the gateway answers in the chat format",
    { skip: openSkip },
    async () => {
      try {
        await allowHost(oai);
        const a = await agentWith({
          kind: "opencode",
          model: {
            provider: "openai-compatible",
            name: "gpt-4o",
            base_url: oai.baseUrl,
            key_secret: "MODEL_KEY",
          },
          instructions: "OPENCODE-INSTRUCTIONS-MARK",
        });
        const { run, events } = await runAgent(a.id, "INPUT-MARK: look around");
        assert.equal(
          run.status,
          "succeeded",
          JSON.stringify({ run, stderr: of(events, "output") }).slice(0, 4000),
        );
        assert.match(run.output, /OPENCODE-DONE/);
        const probed = await t.inject({ url: `/api/agents/${a.id}/files/probe.txt` });
        assert.equal(probed.statusCode, 200, "OpenCode ran the probe with its bash tool");
        assert.match(probed.body, /key: none/, "the real key is nowhere in the box");
        assert.match(probed.body, /other: env .*\/proc\/\d+\/environ/);
        for (const r of oai.requests) assert.equal(r.headers.authorization, `Bearer ${KEY}`);
        assert.ok(
          oai.requests.some((r) => /OPENCODE-INSTRUCTIONS-MARK/.test(JSON.stringify(r.body.messages))),
        );
        const calls = of(events, "model_call");
        assert.ok(calls.length >= 2 && calls.every((c) => c.via === "http"));
        assert.doesNotMatch(JSON.stringify(events), new RegExp(KEY));
      } finally {
        oai.requests.length = 0;
      }
    },
  );

  test("a kind the operator did not enable is refused when the run is asked for", async () => {
    const plain = await startTestServer();
    try {
      const { org: o, machine: m } = await orgAndMachine(plain.call, "plain");
      const r = await makeAgent(
        plain.call,
        { org_id: o.id, machine_id: m.id },
        {
          name: "codex",
          kind: "codex",
          model: { provider: "openai", name: "gpt-5-mini", key_secret: "MODEL_KEY" },
        },
      );
      const run = await plain.call("POST", `/api/agents/${r.id}/runs`, { kind: "agent", input: "hi" });
      assert.equal(run.status, 400);
      assert.equal(run.body.error.code, "request.invalid");
      // the kinds it runs are named (the model loop and the image kind, always there), codex not
      const runs = /runs no agents of kind codex \(it runs: ([^)]*)\)/.exec(run.body.error.message);
      assert.ok(runs, run.body.error.message);
      assert.deepEqual(runs[1]?.split(", ").sort(), ["assistant", "image"]);
    } finally {
      await plain.close();
    }
  });
});
