// The agent spec's options of `warren agents create` and `update`: kind, model, instructions,
// tools, tool policy and limits, read from the command line and local files; and the spec's
// view for `warren agents show`.
import type { Agent, AgentUpdateRequest, ModelSpecInput } from "../../sdk/index.js";
import type { Input, OptionDef } from "../command.js";
import { LocalError, type Context } from "../context.js";
import { detailView } from "../format.js";

export const specOptions: readonly OptionDef[] = [
  { name: "kind", value: "<kind>", help: "command, assistant, claude-code, codex or opencode" },
  { name: "model", value: "<provider:name>", help: "e.g. anthropic:claude-sonnet-4-5, script:turns.json" },
  { name: "base-url", value: "<url>", help: "the model's base URL (required for openai-compatible)" },
  { name: "key-secret", value: "<NAME>", help: "the secret that holds the model's key" },
  { name: "fallback", value: "<provider:name>", help: "the model taken on a provider error or a 429" },
  { name: "fallback-base-url", value: "<url>", help: "the fallback's base URL" },
  { name: "fallback-key-secret", value: "<NAME>", help: "the secret that holds the fallback's key" },
  { name: "model-file", value: "<file>", help: "a JSON file holding the whole model (routes, fallback)" },
  { name: "instructions-file", value: "<file>", help: "a Markdown file: the agent's instructions" },
  { name: "tools-file", value: "<file>", help: "a JSON file holding the list of tools" },
  { name: "tool-policy-file", value: "<file>", help: "a Cedar file: the tool policy" },
  { name: "max-run-s", value: "<s>", help: "the longest run, in seconds (default 3600)" },
  { name: "max-tokens", value: "<n>", help: "tokens in and out per run" },
  { name: "max-usd", value: "<usd>", help: "dollars per run" },
  { name: "on-limit", value: "<stop|finish>", help: "at the budget: stop, or finish with a last call" },
  { name: "workspace-class", value: "<class>", help: "a workspace class of the policy file (/workspace)" },
];

/** What the spec options said, before the files are read. */
export interface SpecOptions {
  kind?: string;
  model?: { provider: string; name: string };
  baseUrl?: string;
  keySecret?: string;
  fallback?: { provider: string; name: string };
  fallbackBaseUrl?: string;
  fallbackKeySecret?: string;
  modelFile?: string;
  instructionsFile?: string;
  toolsFile?: string;
  toolPolicyFile?: string;
  workspaceClass?: string;
  limits: { max_run_s?: number; max_tokens?: number; max_usd?: number; on_limit?: string };
}

function providerName(i: Input, option: string): { provider: string; name: string } | undefined {
  const v = i.str(option);
  if (v === undefined) return undefined;
  const at = v.indexOf(":");
  if (at <= 0 || at === v.length - 1)
    throw i.error(`--${option} is provider:name, e.g. anthropic:claude-sonnet-4-5`);
  return { provider: v.slice(0, at), name: v.slice(at + 1) };
}

export function readSpecOptions(i: Input): SpecOptions {
  const out: SpecOptions = { limits: {} };
  const set = <K extends keyof SpecOptions>(k: K, v: SpecOptions[K] | undefined) => {
    if (v !== undefined) out[k] = v;
  };
  set("kind", i.str("kind"));
  set("model", providerName(i, "model"));
  set("baseUrl", i.str("base-url"));
  set("keySecret", i.str("key-secret"));
  set("fallback", providerName(i, "fallback"));
  set("fallbackBaseUrl", i.str("fallback-base-url"));
  set("fallbackKeySecret", i.str("fallback-key-secret"));
  set("modelFile", i.str("model-file"));
  set("instructionsFile", i.str("instructions-file"));
  set("toolsFile", i.str("tools-file"));
  set("toolPolicyFile", i.str("tool-policy-file"));
  set("workspaceClass", i.str("workspace-class"));
  if (out.modelFile !== undefined && out.model !== undefined)
    throw i.error("give --model or --model-file, not both");
  const l = out.limits;
  const maxRun = i.whole("max-run-s");
  const maxTokens = i.whole("max-tokens");
  const maxUsd = i.decimal("max-usd");
  const onLimit = i.str("on-limit");
  if (maxRun !== undefined) l.max_run_s = maxRun;
  if (maxTokens !== undefined) l.max_tokens = maxTokens;
  if (maxUsd !== undefined) l.max_usd = maxUsd;
  if (onLimit !== undefined) {
    if (onLimit !== "stop" && onLimit !== "finish") throw i.error("--on-limit is stop or finish");
    l.on_limit = onLimit;
  }
  return out;
}

/** Whether the options say anything of the spec. */
export const saysSpec = (s: SpecOptions): boolean =>
  Object.keys(s).some((k) => k !== "limits") || Object.keys(s.limits).length > 0;

async function json(ctx: Context, file: string, what: string): Promise<unknown> {
  const text = (await ctx.readLocal(file, what)).toString("utf8");
  try {
    return JSON.parse(text) as unknown;
  } catch (err) {
    throw new LocalError(
      "local.json",
      `${file} is not JSON (${(err as Error).message}); the server checks the rest`,
    );
  }
}

/** The spec fields of a request body; `current` (an update) is what the given fields change. */
export async function specBody(
  ctx: Context,
  s: SpecOptions,
  current?: Agent,
): Promise<
  Pick<
    AgentUpdateRequest,
    "kind" | "model" | "instructions" | "tools" | "tool_policy" | "limits" | "workspace_class"
  >
> {
  const body: Pick<
    AgentUpdateRequest,
    "kind" | "model" | "instructions" | "tools" | "tool_policy" | "limits" | "workspace_class"
  > = {};
  if (s.kind !== undefined) body.kind = s.kind as NonNullable<AgentUpdateRequest["kind"]>;
  let model: Record<string, unknown> | undefined;
  if (s.modelFile !== undefined)
    model = (await json(ctx, s.modelFile, "the model file")) as Record<string, unknown>;
  else if (s.model !== undefined) model = { ...s.model };
  const touchesModel =
    s.baseUrl !== undefined ||
    s.keySecret !== undefined ||
    s.fallback !== undefined ||
    s.fallbackBaseUrl !== undefined ||
    s.fallbackKeySecret !== undefined;
  if (model === undefined && touchesModel) {
    if (!current?.model) throw new LocalError("local.model", "give --model provider:name with these options");
    model = { ...current.model };
  }
  if (model !== undefined) {
    if (s.baseUrl !== undefined) model.base_url = s.baseUrl;
    if (s.keySecret !== undefined) model.key_secret = s.keySecret;
    if (s.fallback !== undefined || s.fallbackBaseUrl !== undefined || s.fallbackKeySecret !== undefined) {
      const fb: Record<string, unknown> = {
        ...(typeof model.fallback === "object" && model.fallback ? model.fallback : {}),
        ...(s.fallback ?? {}),
      };
      if (s.fallbackBaseUrl !== undefined) fb.base_url = s.fallbackBaseUrl;
      if (s.fallbackKeySecret !== undefined) fb.key_secret = s.fallbackKeySecret;
      model.fallback = fb;
    }
    body.model = model as unknown as ModelSpecInput;
  }
  if (s.instructionsFile !== undefined)
    body.instructions = (await ctx.readLocal(s.instructionsFile, "the instructions file")).toString("utf8");
  if (s.toolsFile !== undefined)
    body.tools = (await json(ctx, s.toolsFile, "the tools file")) as AgentUpdateRequest["tools"];
  if (s.toolPolicyFile !== undefined)
    body.tool_policy = (await ctx.readLocal(s.toolPolicyFile, "the tool policy file")).toString("utf8");
  if (s.workspaceClass !== undefined) body.workspace_class = s.workspaceClass;
  if (Object.keys(s.limits).length > 0)
    body.limits = { ...(current?.limits ?? {}), ...s.limits } as AgentUpdateRequest["limits"];
  return body;
}

/** An agent's fields, then its instructions and tool policy as written, after a blank line each. */
export function agentView(agent: Agent): string {
  let out = detailView(agent, ["instructions", "tool_policy"]);
  for (const [title, text] of [
    ["instructions", agent.instructions],
    ["tool_policy", agent.tool_policy],
  ] as const) {
    if (!text) continue;
    out += `\n${title}:\n${text}${text.endsWith("\n") ? "" : "\n"}`;
  }
  return out;
}
