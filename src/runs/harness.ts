// Harness kinds (claude-code, codex, opencode): the run stages under /agent its input, its
// instructions and its CLI's configuration (the model provider is the gateway's HTTP face in
// the box, the tools an MCP server at the tool gateway for the run), then runs the pinned CLI
// headless in the box as the agent, with the run's workload token as its only key. What it
// prints on stdout is the run's output; its stderr goes to the trace.
//
// The CLIs are installed once per host (scripts/harness.sh, by `make up` for the kinds in
// WARREN_HARNESS_KINDS) into a folder every box sees read-only at /opt/warren/harness; a run
// never downloads anything.
import { createHash } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { and, asc, eq } from "drizzle-orm";
import type { HARNESS_KINDS } from "../contract/lists.js";
import type { AgentSpec } from "../contract/spec.js";
import { BOX_BRIDGES, BOX_PATHS } from "../boxes/index.js";
import type { BoxExecResult } from "../runtime/index.js";
import { BoundedOutput } from "../workloads/index.js";
import type { Db } from "../store/index.js";
import { schema } from "../store/index.js";
import type { ToolsetFactory, Toolset } from "../tools/types.js";
import type { AgentRunContext, AgentRunner, AgentRunResult } from "./kinds.js";

export type HarnessKind = (typeof HARNESS_KINDS)[number];

/** Each kind's npm package and the command it installs (scripts/harness.sh pins the versions). */
export const HARNESS_PACKAGES: Record<HarnessKind, { package: string; bin: string }> = {
  "claude-code": { package: "@anthropic-ai/claude-code", bin: "claude" },
  codex: { package: "@openai/codex", bin: "codex" },
  opencode: { package: "opencode-ai", bin: "opencode" },
};

/** Where the gateway answers inside the box (the `gateway` bridge). */
export const GATEWAY_IN_BOX = `http://127.0.0.1:${BOX_BRIDGES.gateway}`;
/** The environment variable that holds the run's workload token in the box. */
export const TOKEN_VAR = "WARREN_RUN_TOKEN";

const STDERR_EVENTS = 500;
const OUTPUT_LIMIT = 1024 * 1024;

/** The installed CLI of a kind on this host: its version, or null when it is not installed. */
export function installedVersion(hostDir: string, kind: HarnessKind): string | null {
  const pkg = path.join(hostDir, kind, "node_modules", HARNESS_PACKAGES[kind].package, "package.json");
  if (!existsSync(pkg)) return null;
  try {
    const v = (JSON.parse(readFileSync(pkg, "utf8")) as { version?: unknown }).version;
    return typeof v === "string" ? v : null;
  } catch {
    return null;
  }
}

const tomlString = (s: string) => JSON.stringify(s);

/** What a kind stages and runs: its files under /agent and its command line. */
export interface HarnessPlan {
  files: Record<string, Buffer>;
  /** The shell text run by /bin/bash -c in the box (the CLI's argv and its set-up). */
  script: string;
  env: Record<string, string>;
}

/** A harness CLI's instructions: the spec's, then the agent's memory (from the artifact store) when it has one. */
function harnessInstructions(instructions: string, memory: string | null): string {
  if (!memory?.trim()) return instructions;
  return `${instructions.trimEnd()}${instructions.trim() ? "\n\n" : ""}# Your memory\n\n${memory.trim()}\n`;
}

/** The plan of a run of a kind: pure, so that it is checked without a box. */
export function planHarness(
  kind: HarnessKind,
  spec: AgentSpec,
  o: {
    input: string;
    tools: boolean;
    agentDir: string;
    session?: HarnessSession | undefined;
    memory?: string | null;
  },
): HarnessPlan {
  const model = spec.model;
  if (!model) throw new Error(`kind ${kind} needs a model`);
  const cli = `${BOX_PATHS.harness}/${kind}/node_modules/.bin/${HARNESS_PACKAGES[kind].bin}`;
  const mcpUrl = `${GATEWAY_IN_BOX}/mcp`;
  const files: Record<string, Buffer> = {
    input: Buffer.from(o.input, "utf8"),
    "instructions.md": Buffer.from(harnessInstructions(spec.instructions, o.memory ?? null), "utf8"),
  };
  const dir = o.agentDir;
  const session = o.session;
  // a conversation's CLI state lives in the home, one folder per conversation and kind, so
  // that the next turn resumes the CLI's own session (on a fresh box too); its first turn,
  // or one whose state is gone, starts a session with the transcript replayed as its input
  const state = session ? `"$HOME"/${sessionFolder(session.id, kind)}` : null;
  if (session) files.message = Buffer.from(session.message, "utf8");
  const keep = state ? [`mkdir -p ${state}`, `chmod 700 ${state}`] : [];
  // the model name the CLI asks for; the gateway calls the run's own models whatever it says
  const name = model.name;
  if (kind === "codex") {
    const toml = [
      `model = ${tomlString(name)}`,
      `model_provider = "warren"`,
      "",
      "[model_providers.warren]",
      `name = "warren gateway"`,
      `base_url = ${tomlString(`${GATEWAY_IN_BOX}/v1`)}`,
      `env_key = ${tomlString(TOKEN_VAR)}`,
      `wire_api = "responses"`,
      ...(o.tools
        ? [
            "",
            "[mcp_servers.warren]",
            `url = ${tomlString(mcpUrl)}`,
            `bearer_token_env_var = ${tomlString(TOKEN_VAR)}`,
          ]
        : []),
      "",
    ].join("\n");
    files["codex.toml"] = Buffer.from(toml, "utf8");
    // codex keeps its state in CODEX_HOME: a fresh folder in the box's /tmp, removed after;
    // the instructions are its global AGENTS.md
    const fresh = `${cli} exec --skip-git-repo-check --sandbox danger-full-access --color never - < ${dir}/input`;
    const script = [
      ...keep,
      state ? `export CODEX_HOME=${state}` : `export CODEX_HOME="$(mktemp -d /tmp/warren-codex.XXXXXX)"`,
      // the copy of an earlier turn is read-only, as the staged file was
      `rm -f "$CODEX_HOME/config.toml"`,
      `cp ${dir}/codex.toml "$CODEX_HOME/config.toml"`,
      `rm -f "$CODEX_HOME/AGENTS.md"`,
      `if [ -s ${dir}/instructions.md ]; then cp ${dir}/instructions.md "$CODEX_HOME/AGENTS.md"; fi`,
      ...(state
        ? [
            `if [ -n "$(find "$CODEX_HOME/sessions" -name '*.jsonl' -print -quit 2>/dev/null)" ]; then`,
            `  ${cli} exec resume --last --skip-git-repo-check --dangerously-bypass-approvals-and-sandbox - < ${dir}/message`,
            `else`,
            `  ${fresh}`,
            `fi`,
            `exit $?`,
          ]
        : [fresh, `rc=$?; rm -rf "$CODEX_HOME"; exit $rc`]),
    ].join("\n");
    return { files, script, env: {} };
  }
  if (kind === "claude-code") {
    const mcp = {
      mcpServers: o.tools
        ? { warren: { type: "http", url: mcpUrl, headers: { Authorization: `Bearer \${${TOKEN_VAR}}` } } }
        : {},
    };
    files["mcp.json"] = Buffer.from(JSON.stringify(mcp, null, 2), "utf8");
    const claude = `${cli} -p --output-format text --model ${shellQuote(name)} --mcp-config ${dir}/mcp.json --strict-mcp-config --dangerously-skip-permissions --append-system-prompt "$(cat ${dir}/instructions.md)"`;
    const id = session ? sessionUuid(session.id) : null;
    const script = [
      ...keep,
      state
        ? `export CLAUDE_CONFIG_DIR=${state}`
        : `export CLAUDE_CONFIG_DIR="$(mktemp -d /tmp/warren-claude.XXXXXX)"`,
      `export ANTHROPIC_API_KEY="$${TOKEN_VAR}"`,
      ...(state
        ? [
            `if [ -n "$(find "$CLAUDE_CONFIG_DIR/projects" -name '${id}.jsonl' -print -quit 2>/dev/null)" ]; then`,
            `  ${claude} --resume ${id} < ${dir}/message`,
            `else`,
            `  ${claude} --session-id ${id} < ${dir}/input`,
            `fi`,
            `exit $?`,
          ]
        : [`${claude} < ${dir}/input`, `rc=$?; rm -rf "$CLAUDE_CONFIG_DIR"; exit $rc`]),
    ].join("\n");
    return {
      files,
      script,
      env: {
        ANTHROPIC_BASE_URL: GATEWAY_IN_BOX,
        DISABLE_AUTOUPDATER: "1",
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
        DISABLE_TELEMETRY: "1",
      },
    };
  }
  // opencode: one provider (the gateway, OpenAI-compatible or Anthropic by the model's
  // provider) and the tool gateway as a remote MCP server
  const anthropic = model.provider === "anthropic";
  const config = {
    $schema: "https://opencode.ai/config.json",
    autoupdate: false,
    share: "disabled",
    model: `warren/${name}`,
    provider: {
      warren: {
        npm: anthropic ? "@ai-sdk/anthropic" : "@ai-sdk/openai-compatible",
        name: "warren gateway",
        options: { baseURL: `${GATEWAY_IN_BOX}/v1`, apiKey: `{env:${TOKEN_VAR}}` },
        models: { [name]: { name } },
      },
    },
    mcp: o.tools
      ? {
          warren: {
            type: "remote",
            url: mcpUrl,
            enabled: true,
            headers: { Authorization: `Bearer {env:${TOKEN_VAR}}` },
          },
        }
      : {},
    instructions: [`${dir}/instructions.md`],
  };
  files["opencode.json"] = Buffer.from(JSON.stringify(config, null, 2), "utf8");
  const script = [
    ...keep,
    `export XDG_DATA_HOME="$(mktemp -d /tmp/warren-opencode.XXXXXX)"`,
    `export XDG_CACHE_HOME="$XDG_DATA_HOME/cache" XDG_STATE_HOME="$XDG_DATA_HOME/state" XDG_CONFIG_HOME="$XDG_DATA_HOME/config"`,
    ...(state
      ? [
          // the conversation's sessions live in its folder; the cache stays a throwaway
          `scratch="$XDG_DATA_HOME"; export XDG_DATA_HOME=${state}/data XDG_STATE_HOME=${state}/state`,
          `if [ -e ${state}/started ]; then`,
          `  ${cli} run --continue "$(cat ${dir}/message)"`,
          `else`,
          `  ${cli} run "$(cat ${dir}/input)" && touch ${state}/started`,
          `fi`,
          `rc=$?; rm -rf "$scratch"; exit $rc`,
        ]
      : [`${cli} run "$(cat ${dir}/input)"`, `rc=$?; rm -rf "$XDG_DATA_HOME"; exit $rc`]),
  ].join("\n");
  return {
    files,
    script,
    env: { OPENCODE_CONFIG: `${dir}/opencode.json`, OPENCODE_DISABLE_AUTOUPDATE: "1" },
  };
}

/** A conversation's turn of a harness kind: the CLI resumes its own session of the conversation. */
export interface HarnessSession {
  /** The conversation's id: the CLI's state is kept under the home for it. */
  id: string;
  /** This turn's message (the run's input is the transcript replayed, for a CLI with no session yet). */
  message: string;
}

/** Where, relative to the home, a conversation's CLI keeps its state. */
export function sessionFolder(conversationId: string, kind: HarnessKind): string {
  if (!/^[a-z]{3}_[0-9a-z]{16}$/.test(conversationId))
    throw new Error(`bad conversation id ${conversationId}`);
  return `.warren/conversations/${conversationId}/${kind}`;
}

/** A conversation's session id for a CLI that takes a UUID: the same for every turn. */
export function sessionUuid(conversationId: string): string {
  const h = createHash("sha256").update(`warren conversation ${conversationId}`).digest("hex");
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-${((parseInt(h[16]!, 16) & 3) | 8).toString(16)}${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

function shellQuote(s: string): string {
  return `'${s.replace(/'/g, `'\\''`)}'`;
}

export interface HarnessDeps {
  db: Db;
  toolsets: ToolsetFactory;
  /** The host folder of the installed CLIs (bound at /opt/warren/harness). */
  hostDir: string;
  /** The agent's memory artifact as it is now, added to the CLI's instructions; null when it has none. */
  memoryOf?: (agent: { id: string; orgId: string }) => Promise<string | null>;
}

export class HarnessRunner implements AgentRunner {
  constructor(
    private readonly kind: HarnessKind,
    private readonly d: HarnessDeps,
  ) {}

  async run(ctx: AgentRunContext): Promise<AgentRunResult> {
    const d = this.d;
    const version = installedVersion(d.hostDir, this.kind);
    if (!version)
      throw new Error(
        `the ${this.kind} CLI is not installed on this host; the operator enables it with WARREN_HARNESS_KINDS=${this.kind} and make up`,
      );
    const work = ctx.workload;
    const counts = { tool_calls: 0, tool_refusals: 0 };
    const usage = () => ({ ...ctx.gateway.usage(), steps: ctx.gateway.usage().calls, ...counts });

    let toolset: Toolset | null = null;
    if (ctx.spec.tools.length > 0) {
      toolset = await d.toolsets.open({
        runId: ctx.runId,
        workload: work,
        spec: ctx.spec,
        signal: ctx.signal,
        via: "gateway",
        record: async (call) => {
          counts.tool_calls++;
          if (call.decision === "deny") counts.tool_refusals++;
          await ctx.events("tool_call", { ...call });
          ctx.progress?.(usage());
        },
      });
      for (const w of toolset.warnings) await ctx.events("warning", { source: "tools", message: w });
    }
    try {
      const boxDir = BOX_PATHS.agent;
      const plan = planHarness(this.kind, ctx.spec, {
        input: ctx.input,
        tools: toolset !== null,
        agentDir: boxDir,
        session: ctx.session,
        memory: d.memoryOf ? await d.memoryOf(work.agent) : null,
      });
      await work.stage(plan.files);
      await ctx.events("harness", {
        kind: this.kind,
        package: HARNESS_PACKAGES[this.kind].package,
        version,
        base_url: GATEWAY_IN_BOX,
        tools: toolset?.tools.map((t) => t.name) ?? [],
      });
      // the agent's secrets of use env reach its CLI as environment variables, as they reach
      // its commands (the door puts them there); a key of its models is a secret of use
      // model, which never reaches an environment; the run's workload token is redacted
      // from what the CLI prints like a secret (the model runner protects it)
      const main = await runMainCommand(
        ctx,
        {
          argv: ["/bin/bash", "-c", plan.script],
          own: { ...plan.env, [TOKEN_VAR]: ctx.gateway.token },
          shownAs: [HARNESS_PACKAGES[this.kind].bin],
        },
        `the ${this.kind} CLI`,
      );
      // the models it called, in order of first use: its model_call events that answered
      const calls = await d.db
        .select({ data: schema.runEvents.data })
        .from(schema.runEvents)
        .where(and(eq(schema.runEvents.runId, ctx.runId), eq(schema.runEvents.type, "model_call")))
        .orderBy(asc(schema.runEvents.id));
      const models = [
        ...new Set(
          calls
            .map((c) => c.data as { provider?: string; model?: string; status?: string })
            .filter((c) => c.status === "ok")
            .map((c) => `${c.provider}:${c.model}`),
        ),
      ];
      return {
        ...main,
        usage: usage(),
        models,
      };
    } finally {
      await toolset?.close().catch(() => {});
    }
  }
}

/**
 * A run's main command in its box (a harness CLI, an image's entrypoint), named `what` in its
 * reason: its stdout is the run's output (bounded), its stderr the run's first STDERR_EVENTS
 * output events; the staged files go and the gateway's calls are read to their end whatever
 * happens (a call the command hung up on is counted before the run ends).
 */
export async function runMainCommand(
  ctx: AgentRunContext,
  command: { argv: string[]; own: Record<string, string>; shownAs?: string[] },
  what: string,
): Promise<Pick<AgentRunResult, "status" | "reason" | "output" | "exitCode">> {
  const work = ctx.workload;
  const output = new BoundedOutput(OUTPUT_LIMIT);
  let stderrEvents = 0;
  const pending: Promise<void>[] = [];
  let result: BoxExecResult;
  try {
    result = await work.exec(
      { ...command, timeoutMs: ctx.spec.limits.max_run_s * 1000, main: true },
      {
        signal: ctx.signal,
        onStdout: (c: Buffer) => output.push(c),
        onStderr: (c: Buffer) => {
          if (stderrEvents++ < STDERR_EVENTS)
            pending.push(ctx.events("output", { stream: "stderr", data: c.toString("utf8") }));
        },
      },
    );
  } finally {
    await Promise.allSettled(pending);
    await work.unstage();
    await ctx.gateway.idle(30_000);
  }
  const status = ctx.signal.aborted
    ? "cancelled"
    : result.timedOut
      ? "timed_out"
      : result.exitCode === 0
        ? "succeeded"
        : "failed";
  return {
    status,
    ...(status === "failed"
      ? {
          reason: result.signal
            ? `${what} was killed by ${result.signal}`
            : `${what} exited with ${result.exitCode}`,
        }
      : {}),
    output: output.text(),
    exitCode: result.exitCode,
  };
}
