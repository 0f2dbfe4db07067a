// An agent's spec: what kind of agent it is, which model it thinks with, its instructions,
// its tools and the Cedar policy that decides each tool call, and its limits per run.
// One schema: the API validates with it, the store keeps its output, the SDK types it.
import { z } from "zod";
import { AGENT_KINDS, COMMAND_LIMITS } from "./lists.js";
import { SandboxPolicy } from "./policy.js";
import { connectionName } from "./connections.js";

export const AgentKind = z.enum(AGENT_KINDS).meta({ id: "AgentKind" });

export const ModelProvider = z
  .enum(["anthropic", "openai", "openai-compatible", "script"])
  .meta({ id: "ModelProvider" });

/** A secret's name: the environment variable it would become. */
const secretName = z
  .string()
  .regex(/^[A-Z_][A-Z0-9_]*$/, "must be a secret's name ([A-Z_][A-Z0-9_]*)")
  .max(128);

const httpUrl = z
  .string()
  .max(2048)
  .refine((u) => {
    try {
      const p = new URL(u).protocol;
      return p === "http:" || p === "https:";
    } catch {
      return false;
    }
  }, "must be an http or https URL");

const modelName = z.string().min(1).max(200);

/** An openai-compatible provider has no default address: its model names one. */
function baseUrlNeeded(m: { provider: string; base_url?: string }, ctx: z.RefinementCtx): void {
  if (m.provider === "openai-compatible" && !m.base_url)
    ctx.addIssue({
      code: "custom",
      path: ["base_url"],
      message: "is required for provider openai-compatible",
    });
}

/** One model: its provider, its name, where it answers and the secret that holds its key. */
export const ModelRef = z
  .object({
    provider: ModelProvider,
    name: modelName.describe("the provider's model name; for provider script, the script's path in the home"),
    base_url: httpUrl.optional().describe("required for openai-compatible; overrides the provider's default"),
    key_secret: secretName.optional().describe("the secret that holds the provider's key"),
  })
  .strict()
  .superRefine(baseUrlNeeded)
  .meta({ id: "ModelRef" });

/** A routing rule: runs whose input matches go to another model. */
export const ModelRoute = z
  .object({
    when: z
      .object({
        input_contains: z.string().min(1).max(200).optional(),
        input_longer_than: z.number().int().min(0).optional(),
      })
      .strict(),
    model: ModelRef,
  })
  .strict()
  .meta({ id: "ModelRoute" });

export const ModelSpec = z
  .object({
    provider: ModelProvider,
    name: modelName,
    base_url: httpUrl.optional(),
    key_secret: secretName.optional(),
    fallback: ModelRef.optional().describe("taken on a provider error or a 429; each move is in the trace"),
    routes: z.array(ModelRoute).max(16).optional().describe("the first rule that matches picks the model"),
  })
  .strict()
  .superRefine(baseUrlNeeded)
  .meta({ id: "ModelSpec" });

/** The artifact store's tools (notes, memory, collection records, scripts): builtins too. */
export const ARTIFACT_TOOLS = [
  "note_list",
  "note_read",
  "note_write",
  "memory_read",
  "memory_write",
  "record_list",
  "record_get",
  "record_put",
  "script_list",
  "script_write",
  "script_run",
] as const;
/** The agent's browser's tools (src/tools/browser.ts). */
export const BROWSER_TOOLS = [
  "browser_open",
  "browser_click",
  "browser_type",
  "browser_read",
  "browser_screenshot",
  "browser_tabs",
] as const;

export const BUILTIN_TOOLS = [
  "read_file",
  "write_file",
  "list_files",
  "run_command",
  "web_fetch",
  "env_propose",
  ...ARTIFACT_TOOLS,
  "secret_request",
  ...BROWSER_TOOLS,
] as const;

const toolName = z
  .string()
  .regex(
    /^[a-z][a-z0-9_]{0,47}$/,
    "must be lowercase letters, digits and _ (at most 48), starting with a letter",
  );

export const BuiltinTool = z.object({ type: z.literal("builtin"), name: z.enum(BUILTIN_TOOLS) }).strict();
export const HttpTool = z
  .object({
    type: z.literal("http"),
    name: toolName,
    description: z.string().max(2000).optional(),
    base_url: httpUrl,
    methods: z
      .array(z.enum(["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"]))
      .min(1)
      .max(6),
    headers: z
      .record(z.string().regex(/^[A-Za-z0-9-]{1,64}$/, "must be a header name"), secretName)
      .optional()
      .describe(
        "header name to the secret whose value it carries; values never reach the model or the trace",
      ),
    connection: connectionName
      .optional()
      .describe(
        "a connection granted to the agent: the server sends its bearer token, never the model or a box",
      ),
  })
  .strict();
export const McpTool = z
  .object({
    type: z.literal("mcp"),
    name: toolName.describe("the server's name; its tools are named <name>__<tool>"),
    url: httpUrl.describe("a Streamable HTTP MCP endpoint"),
    headers: z.record(z.string().regex(/^[A-Za-z0-9-]{1,64}$/), secretName).optional(),
    connection: connectionName.optional().describe("a connection granted to the agent (its bearer token)"),
  })
  .strict();
export const ToolSpec = z
  .discriminatedUnion("type", [BuiltinTool, HttpTool, McpTool])
  .meta({ id: "ToolSpec" });

export const RunLimits = z
  .object({
    max_run_s: z.number().int().min(1).max(COMMAND_LIMITS.runTimeoutSMax).default(3600),
    max_tokens: z.number().int().min(1).optional().describe("tokens in and out per run"),
    max_usd: z.number().positive().optional().describe("dollars per run"),
    on_limit: z
      .enum(["stop", "finish"])
      .default("stop")
      .describe("stop: end the run; finish: one last model call without tools"),
  })
  .strict()
  .meta({ id: "RunLimits" });

export const MAX_TOOLS = 16;

/** What an agent is and does; every field but kind is optional for kind command. */
export const AgentSpec = z
  .object({
    kind: AgentKind.default("command"),
    model: ModelSpec.nullable().default(null),
    instructions: z
      .string()
      .max(256 * 1024)
      .default(""),
    tools: z
      .array(ToolSpec)
      .max(MAX_TOOLS, `at most ${MAX_TOOLS} tools`)
      .default([])
      .superRefine((tools, ctx) => {
        const seen = new Set<string>();
        for (const [i, t] of tools.entries()) {
          if (seen.has(t.name))
            ctx.addIssue({ code: "custom", path: [i, "name"], message: `"${t.name}" is listed twice` });
          seen.add(t.name);
        }
      }),
    tool_policy: z
      .string()
      .max(256 * 1024)
      .default("")
      .describe("Cedar policies; empty: every tool call is denied"),
    limits: RunLimits.default({ max_run_s: 3600, on_limit: "stop" }),
    sandbox_policy: SandboxPolicy.default({
      files: { read: [], write: [] },
      network: { allow: [] },
    }).describe("the version's sandbox policy: a run keeps its version's for its whole life"),
    workspace_class: z
      .string()
      .regex(/^[a-z][a-z0-9_-]{0,63}$/, "must be a workspace class's name")
      .nullable()
      .default(null)
      .describe("a class of the policy file's workspace_classes: the scope of /workspace; null: none"),
    memory: z
      .boolean()
      .default(true)
      .describe("false: a per-agent /workspace is fresh for each run (and each command or terminal)"),
  })
  .strict()
  .superRefine((s, ctx) => {
    if (s.kind !== "command" && !s.model)
      ctx.addIssue({ code: "custom", path: ["model"], message: `is required for kind ${s.kind}` });
  })
  .meta({ id: "AgentSpec" });

export type AgentSpec = z.output<typeof AgentSpec>;
export type ModelSpec = z.output<typeof ModelSpec>;
export type ModelRef = z.output<typeof ModelRef>;
export type ToolSpec = z.output<typeof ToolSpec>;
export type RunLimits = z.output<typeof RunLimits>;
