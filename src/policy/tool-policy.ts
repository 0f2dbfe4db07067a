// The Cedar tool policy: every tool call of a run is a Cedar request (principal the agent,
// action Action::"call", resource the tool, context the run and the call's arguments) decided
// by the agent's `tool_policy`. Policies are validated against TOOL_POLICY_SCHEMA when saved;
// an empty policy permits nothing, so every call is denied. Text is held to a size and a
// nesting depth before Cedar sees it, and Cedar itself runs in worker threads (cedar.ts), so
// no policy can break another organisation's checks or decisions.
import type * as cedar from "@cedar-policy/cedar-wasm/nodejs";
import {
  type CedarEngine,
  type Checked,
  type CheckedPolicies,
  newPolicySetKey,
  sharedCedar,
} from "./cedar.js";

/**
 * The schema every tool policy is validated against (Cedar's schema syntax).
 *
 * - `Agent::"<agent id>"` with `org` (the agent's org id);
 * - `Tool::"<tool name>"` with `kind` (`builtin`, `http` or `mcp`); an MCP server's tools
 *   (`<server>__<tool>`) are members of `Server::"<server>"`;
 * - `Action::"call"`, with the context: `run` (`id`, `via`: `loop` for the Assistant loop,
 *   `gateway` for a harness CLI through the tool gateway), `arguments` (the call's known
 *   arguments, typed; an argument of another name or type is only in `arguments_json`) and
 *   `arguments_json` (every argument, as JSON text).
 */
export const TOOL_POLICY_SCHEMA = `
entity Agent = { org: String };
entity Server;
entity Tool in [Server] = { kind: String };
type Run = { id: String, via: String };
type Arguments = {
  path?: String,
  content?: String,
  command?: String,
  url?: String,
  method?: String,
  body?: String,
  host?: String,
};
action "call" appliesTo {
  principal: Agent,
  resource: Tool,
  context: { run: Run, arguments: Arguments, arguments_json: String },
};
`;

/** The names and Cedar types of the typed arguments (all strings), as in TOOL_POLICY_SCHEMA. */
const TYPED_ARGUMENTS = ["path", "content", "command", "url", "method", "body", "host"] as const;

/** The longest tool policy, in bytes of UTF-8. */
export const MAX_POLICY_BYTES = 64 * 1024;
/** The deepest nesting of (), [] and {} (outside string literals and comments) in a tool policy. */
export const MAX_POLICY_DEPTH = 32;

/**
 * How deeply policy text nests its brackets: (), [] and {} counted alike, outside string
 * literals (`"..."`, where a backslash escapes the next character) and `//` comments (to the
 * end of the line). A closing bracket without an opening one counts nothing (Cedar says what
 * is wrong with it).
 */
export function nestingDepth(text: string): number {
  let depth = 0;
  let deepest = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === '"') {
      for (i++; i < text.length && text[i] !== '"'; i++) if (text[i] === "\\") i++;
    } else if (c === "/" && text[i + 1] === "/") {
      while (i < text.length && text[i] !== "\n") i++;
    } else if (c === "(" || c === "[" || c === "{") {
      depth++;
      if (depth > deepest) deepest = depth;
    } else if ((c === ")" || c === "]" || c === "}") && depth > 0) depth--;
  }
  return deepest;
}

/** Why policy text is out of bounds (too long, nested too deeply), or null. Cedar never sees such text. */
export function policyBoundsProblem(text: string): string | null {
  const bytes = Buffer.byteLength(text, "utf8");
  if (bytes > MAX_POLICY_BYTES)
    return `the policy is ${bytes} bytes; at most ${MAX_POLICY_BYTES} bytes (64 KiB) are accepted`;
  const depth = nestingDepth(text);
  if (depth > MAX_POLICY_DEPTH)
    return `the policy nests brackets ${depth} deep; at most ${MAX_POLICY_DEPTH} levels of (), [] and {} are accepted`;
  return null;
}

/** Checks policy text: its bounds first, then Cedar's parse and validation against the schema. */
async function checked(text: string, engine: CedarEngine): Promise<Checked> {
  const bounds = policyBoundsProblem(text);
  if (bounds !== null) return { problem: bounds };
  return engine.check(text, TOOL_POLICY_SCHEMA);
}

/**
 * Why Cedar policy text cannot be a tool policy (out of bounds, or Cedar's parse or validation
 * messages, joined), or null when it is valid. Empty text is valid: it denies every call.
 */
export async function toolPolicyProblem(
  text: string,
  engine: CedarEngine = sharedCedar,
): Promise<string | null> {
  if (text.trim() === "") return null;
  return (await checked(text, engine)).problem;
}

/** The request of one tool call (its arguments already in their canonical form). */
export interface ToolRequest {
  agent: { id: string; orgId: string };
  tool: { name: string; kind: "builtin" | "http" | "mcp"; server?: string };
  run: { id: string; via: "loop" | "gateway" };
  arguments: unknown;
}

export interface ToolDecision {
  decision: "allow" | "deny";
  /** The ids of the policies that decided (Cedar's reasons, or a forbid that errored). */
  policies: string[];
  /** Errors Cedar met evaluating policies (a policy that errors does not apply), or why it could not decide. */
  errors: string[];
  /** Allowed by a permit annotated `@approval("required")`: the call waits for a person's decision. */
  ask?: true;
  /** Who the asking permits name to decide (`@deciders`); none: owners, admins and editors. */
  deciders?: string[];
}

/** The context of a request: typed arguments where their name and type fit, all of them as JSON. */
function contextOf(req: ToolRequest): Record<string, cedar.CedarValueJson> {
  const args: Record<string, cedar.CedarValueJson> = {};
  const given = req.arguments;
  if (given && typeof given === "object" && !Array.isArray(given)) {
    const rec = given as Record<string, unknown>;
    for (const k of TYPED_ARGUMENTS) if (typeof rec[k] === "string") args[k] = rec[k];
  }
  let json: string;
  try {
    json = JSON.stringify(given ?? null) ?? "null";
  } catch {
    json = "null";
  }
  return { run: { id: req.run.id, via: req.run.via }, arguments: args, arguments_json: json };
}

/** Compiled policies by their text, the most recently used last (runs of one agent share one). */
const COMPILED = 128;
const compiled = new Map<string, ToolPolicy>();

/** An agent's tool policy, checked once and asked for each call. */
export class ToolPolicy {
  readonly #key = newPolicySetKey();
  readonly #forbids: Set<string>;
  readonly #asks: Set<string>;

  private constructor(
    private readonly parsed: CheckedPolicies,
    /** Any problem the text had: such a policy denies every call, saying why. */
    readonly problem: string | null,
    private readonly engine: CedarEngine,
  ) {
    this.#forbids = new Set(parsed.forbids);
    this.#asks = new Set(parsed.asks);
  }

  /** Compiles policy text. Text that does not validate denies every call (its problem is kept). */
  static async compile(text: string, engine: CedarEngine = sharedCedar): Promise<ToolPolicy> {
    const known = engine === sharedCedar ? compiled.get(text) : undefined;
    if (known) {
      // the most recently used last: the first is the one to drop
      compiled.delete(text);
      compiled.set(text, known);
      return known;
    }
    const empty: CheckedPolicies = { policies: {}, forbids: [], asks: [], deciders: {} };
    const c: Checked = text.trim() === "" ? { problem: null, ...empty } : await checked(text, engine);
    const made =
      c.problem !== null ? new ToolPolicy(empty, c.problem, engine) : new ToolPolicy(c, null, engine);
    // a worker that failed on the text may have been slow only: that is not kept
    if (engine === sharedCedar && !(c.problem !== null && c.failure)) {
      compiled.set(text, made);
      if (compiled.size > COMPILED) compiled.delete(compiled.keys().next().value!);
    }
    return made;
  }

  async decide(req: ToolRequest): Promise<ToolDecision> {
    if (Object.keys(this.parsed.policies).length === 0)
      return { decision: "deny", policies: [], errors: this.problem ? [this.problem] : [] };
    const entities: cedar.EntityJson[] = [
      { uid: { type: "Agent", id: req.agent.id }, attrs: { org: req.agent.orgId }, parents: [] },
      {
        uid: { type: "Tool", id: req.tool.name },
        attrs: { kind: req.tool.kind },
        parents: req.tool.server ? [{ type: "Server", id: req.tool.server }] : [],
      },
    ];
    if (req.tool.server)
      entities.push({ uid: { type: "Server", id: req.tool.server }, attrs: {}, parents: [] });
    const answer = await this.engine.decide(
      { key: this.#key, policies: this.parsed.policies },
      {
        principal: { type: "Agent", id: req.agent.id },
        action: { type: "Action", id: "call" },
        resource: { type: "Tool", id: req.tool.name },
        context: contextOf(req),
        entities,
      },
    );
    // Cedar could not decide (a failed worker included): denied, never open
    if ("failed" in answer) return { decision: "deny", policies: [], errors: answer.failed };
    const errors = answer.errors.map((e) => `${e.policyId}: ${e.message}`);
    // A forbid that could not be evaluated denies: an error never opens a door.
    const erredForbids = answer.errors.map((e) => e.policyId).filter((id) => this.#forbids.has(id));
    if (erredForbids.length > 0) return { decision: "deny", policies: erredForbids, errors };
    const asking = answer.decision === "allow" ? answer.reason.filter((id) => this.#asks.has(id)) : [];
    const deciders = [...new Set(asking.flatMap((id) => this.parsed.deciders[id] ?? []))];
    return {
      decision: answer.decision,
      policies: answer.reason,
      errors,
      ...(asking.length > 0 ? { ask: true as const } : {}),
      ...(deciders.length > 0 ? { deciders } : {}),
    };
  }
}
