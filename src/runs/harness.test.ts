import assert from "node:assert/strict";
import { test } from "node:test";
import { ConfigError, parseConfig } from "../config/index.js";
import { AgentSpec } from "../contract/spec.js";
import { planHarness, sessionUuid } from "./harness.js";

const spec = (kind: string, tools: unknown[] = [], model: Record<string, unknown> = {}) =>
  AgentSpec.parse({
    kind,
    model: { provider: "openai", name: 'gpt-5 "mini"', key_secret: "MODEL_KEY", ...model },
    instructions: "Be brief.",
    tools,
  });

test("codex: its configuration names the gateway, the token's variable and the tool gateway only with tools", () => {
  const bare = planHarness("codex", spec("codex"), { input: "hi", tools: false, agentDir: "/agent" });
  const toml = bare.files["codex.toml"]!.toString();
  assert.match(toml, /^model = "gpt-5 \\"mini\\""$/m, "a TOML string, escaped");
  assert.match(toml, /^base_url = "http:\/\/127\.0\.0\.1:3129\/v1"$/m);
  assert.match(toml, /^env_key = "WARREN_RUN_TOKEN"$/m);
  assert.match(toml, /^wire_api = "responses"$/m);
  assert.doesNotMatch(toml, /mcp_servers/);
  assert.equal(bare.files.input!.toString(), "hi");
  assert.equal(bare.files["instructions.md"]!.toString(), "Be brief.");
  assert.match(
    bare.script,
    /codex exec --skip-git-repo-check --sandbox danger-full-access --color never - < \/agent\/input/,
  );
  const tooled = planHarness("codex", spec("codex", [{ type: "builtin", name: "read_file" }]), {
    input: "hi",
    tools: true,
    agentDir: "/agent",
  });
  const t2 = tooled.files["codex.toml"]!.toString();
  assert.match(
    t2,
    /^\[mcp_servers\.warren\]\nurl = "http:\/\/127\.0\.0\.1:3129\/mcp"\nbearer_token_env_var = "WARREN_RUN_TOKEN"$/m,
  );
});

test("claude-code and opencode: the gateway as their provider, the tool gateway as their MCP server", () => {
  const c = planHarness(
    "claude-code",
    spec("claude-code", [], { provider: "anthropic", name: "claude-sonnet-4-5" }),
    {
      input: "hi",
      tools: true,
      agentDir: "/agent",
    },
  );
  assert.equal(c.env.ANTHROPIC_BASE_URL, "http://127.0.0.1:3129");
  assert.deepEqual(JSON.parse(c.files["mcp.json"]!.toString()), {
    mcpServers: {
      warren: {
        type: "http",
        url: "http://127.0.0.1:3129/mcp",
        headers: { Authorization: "Bearer ${WARREN_RUN_TOKEN}" },
      },
    },
  });
  assert.match(c.script, /export ANTHROPIC_API_KEY="\$WARREN_RUN_TOKEN"/);
  assert.match(c.script, /--model 'claude-sonnet-4-5'/);
  const o = planHarness("opencode", spec("opencode"), { input: "hi", tools: false, agentDir: "/agent" });
  const cfg = JSON.parse(o.files["opencode.json"]!.toString());
  assert.equal(cfg.provider.warren.npm, "@ai-sdk/openai-compatible");
  assert.deepEqual(cfg.provider.warren.options, {
    baseURL: "http://127.0.0.1:3129/v1",
    apiKey: "{env:WARREN_RUN_TOKEN}",
  });
  assert.deepEqual(cfg.mcp, {});
  assert.deepEqual(cfg.instructions, ["/agent/instructions.md"]);
  assert.equal(o.env.OPENCODE_CONFIG, "/agent/opencode.json");
  // no plan holds a key or a token: only the variable's name
  for (const p of [c, o])
    for (const f of Object.values(p.files)) assert.doesNotMatch(f.toString(), /sk-|wrk_/);
});

test("WARREN_HARNESS_KINDS takes known kinds only; WARREN_HARNESS_DIR defaults under STATE_ROOT", () => {
  const c = parseConfig({ STATE_ROOT: "/srv/w", WARREN_HARNESS_KINDS: "codex, claude-code" });
  assert.deepEqual(c.WARREN_HARNESS_KINDS, ["codex", "claude-code"]);
  assert.equal(c.WARREN_HARNESS_DIR, "/srv/w/harness");
  assert.equal(parseConfig({ WARREN_HARNESS_DIR: "/opt/h" }).WARREN_HARNESS_DIR, "/opt/h");
  assert.deepEqual(parseConfig({}).WARREN_HARNESS_KINDS, []);
  assert.throws(
    () => parseConfig({ WARREN_HARNESS_KINDS: "codex,assistant" }),
    (e) =>
      e instanceof ConfigError &&
      /WARREN_HARNESS_KINDS is a comma-separated list of: claude-code, codex, opencode/.test(e.message),
  );
  assert.throws(() => parseConfig({ WARREN_ORG_MAX_RUNS: "0" }), /WARREN_ORG_MAX_RUNS must be at least 1/);
});

test("a conversation's turn: each kind keeps its session under the home and resumes it, replaying only without one", () => {
  const session = { id: "cnv_0123456789abcdef", message: "which word?" };
  const uuid = sessionUuid(session.id);
  assert.match(uuid, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  assert.equal(sessionUuid(session.id), uuid, "the same for every turn");
  assert.notEqual(sessionUuid("cnv_0123456789abcdeg"), uuid);
  const folder = `"$HOME"/.warren/conversations/${session.id}`;
  const plans = {
    codex: planHarness("codex", spec("codex"), {
      input: "replayed",
      tools: false,
      agentDir: "/agent",
      session,
    }),
    "claude-code": planHarness("claude-code", spec("claude-code"), {
      input: "replayed",
      tools: false,
      agentDir: "/agent",
      session,
    }),
    opencode: planHarness("opencode", spec("opencode"), {
      input: "replayed",
      tools: false,
      agentDir: "/agent",
      session,
    }),
  };
  for (const [kind, p] of Object.entries(plans)) {
    assert.equal(p.files.input!.toString(), "replayed", kind);
    assert.equal(p.files.message!.toString(), "which word?", kind);
    assert.ok(p.script.includes(`mkdir -p ${folder}/${kind}`), kind);
    assert.doesNotMatch(p.script, /rm -rf "\$(CODEX_HOME|CLAUDE_CONFIG_DIR)"/, `${kind} keeps its session`);
  }
  assert.match(plans.codex.script, /codex exec resume --last .* - < \/agent\/message/);
  assert.match(plans["claude-code"].script, new RegExp(`--resume ${uuid} < /agent/message`));
  assert.match(plans["claude-code"].script, new RegExp(`--session-id ${uuid} < /agent/input`));
  assert.match(plans.opencode.script, /run --continue "\$\(cat \/agent\/message\)"/);
  assert.throws(
    () =>
      planHarness("codex", spec("codex"), {
        input: "x",
        tools: false,
        agentDir: "/agent",
        session: { id: "cnv_../../etc", message: "x" },
      }),
    /bad conversation id/,
  );
});

test("the agent's memory follows the spec's instructions, when it has one", () => {
  const plan = (memory: string | null) =>
    planHarness("codex", spec("codex"), { input: "hi", tools: false, agentDir: "/agent", memory }).files[
      "instructions.md"
    ]!.toString();
  assert.equal(plan(null), "Be brief.");
  assert.equal(plan("  "), "Be brief.");
  assert.equal(
    plan("The key rotates on Fridays.\n"),
    "Be brief.\n\n# Your memory\n\nThe key rotates on Fridays.\n",
  );
});
