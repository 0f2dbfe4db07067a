// The Cedar tool policy: every tool call of a run is a Cedar request (principal the agent,
// action Action::"call", resource the tool, context the run and the call's arguments) decided
// by the agent's `tool_policy`. Policies are validated against TOOL_POLICY_SCHEMA when saved;
// an empty policy permits nothing, so every call is denied.
import * as cedar from "@cedar-policy/cedar-wasm/nodejs";

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
};
action "call" appliesTo {
  principal: Agent,
  resource: Tool,
  context: { run: Run, arguments: Arguments, arguments_json: String },
};
`;

/** The names and Cedar types of the typed arguments (all strings), as in TOOL_POLICY_SCHEMA. */
const TYPED_ARGUMENTS = ["path", "content", "command", "url", "method", "body"] as const;

type DetailedError = { message: string; help?: string | null };

function describe(e: DetailedError): string {
  return e.help ? `${e.message} (${e.help})` : e.message;
}

interface PolicyParts {
  /** The policies by id: an `@id("...")` annotation, else `policy<N>` in the order written. */
  policies: Record<string, string>;
  /** The ids of the forbid policies: one that errors denies (never fails open). */
  forbids: Set<string>;
}

/** Splits policy text into its policies, or answers Cedar's parse message. */
function parts(text: string): PolicyParts | string {
  const split = cedar.policySetTextToParts(text);
  if (split.type === "failure") return split.errors.map(describe).join("; ");
  if (split.policy_templates.length > 0) return "policy templates are not supported in a tool policy";
  const policies: Record<string, string> = {};
  const forbids = new Set<string>();
  for (const [i, p] of split.policies.entries()) {
    const json = cedar.policyToJson(p);
    if (json.type === "failure") return json.errors.map(describe).join("; ");
    const id = json.json.annotations?.id ?? `policy${i}`;
    if (id in policies) return `two policies have the id "${id}"`;
    policies[id] = p;
    if (json.json.effect === "forbid") forbids.add(id);
  }
  return { policies, forbids };
}

/**
 * Why Cedar policy text cannot be a tool policy (Cedar's parse or validation messages,
 * joined), or null when it is valid. Empty text is valid: it denies every call.
 */
export function toolPolicyProblem(text: string): string | null {
  if (text.trim() === "") return null;
  const p = parts(text);
  if (typeof p === "string") return p;
  const answer = cedar.validate({
    schema: TOOL_POLICY_SCHEMA,
    policies: { staticPolicies: p.policies },
    validationSettings: { mode: "strict" },
  });
  if (answer.type === "failure") return answer.errors.map(describe).join("; ");
  if (answer.validationErrors.length > 0)
    return answer.validationErrors.map((v) => describe(v.error)).join("; ");
  return null;
}

/** The request of one tool call. */
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
  /** Errors Cedar met evaluating policies (a policy that errors does not apply). */
  errors: string[];
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

/**
 * Cedar keeps preparsed policy sets by id for the life of the process, with no way to drop
 * one: the policies of open toolsets share this many ids, each held by one ToolPolicy at a
 * time; a policy whose id was taken over by another is preparsed again under a new one.
 */
const SLOTS = 256;
const slotOwner: (ToolPolicy | undefined)[] = new Array<ToolPolicy | undefined>(SLOTS);
let nextSlot = 0;

/** Compiled policies by their text, the most recently used last (runs of one agent share one). */
const COMPILED = 128;
const compiled = new Map<string, ToolPolicy>();

/** An agent's tool policy, parsed once and asked for each call. */
export class ToolPolicy {
  #slot = -1;

  private constructor(
    private readonly parsed: PolicyParts,
    /** Any problem the text had: such a policy denies every call, saying why. */
    readonly problem: string | null,
  ) {}

  /** Compiles policy text. Text that does not validate denies every call (its problem is kept). */
  static compile(text: string): ToolPolicy {
    const known = compiled.get(text);
    if (known) {
      // the most recently used last: the first is the one to drop
      compiled.delete(text);
      compiled.set(text, known);
      return known;
    }
    const empty: PolicyParts = { policies: {}, forbids: new Set() };
    let made: ToolPolicy;
    if (text.trim() === "") made = new ToolPolicy(empty, null);
    else {
      const problem = toolPolicyProblem(text);
      const p = problem === null ? parts(text) : problem;
      made = typeof p === "string" ? new ToolPolicy(empty, p) : new ToolPolicy(p, null);
    }
    compiled.set(text, made);
    if (compiled.size > COMPILED) compiled.delete(compiled.keys().next().value!);
    return made;
  }

  decide(req: ToolRequest): ToolDecision {
    if (Object.keys(this.parsed.policies).length === 0)
      return { decision: "deny", policies: [], errors: this.problem ? [this.problem] : [] };
    const tool: cedar.EntityJson = {
      uid: { type: "Tool", id: req.tool.name },
      attrs: { kind: req.tool.kind },
      parents: req.tool.server ? [{ type: "Server", id: req.tool.server }] : [],
    };
    const entities: cedar.EntityJson[] = [
      { uid: { type: "Agent", id: req.agent.id }, attrs: { org: req.agent.orgId }, parents: [] },
      tool,
    ];
    if (req.tool.server)
      entities.push({ uid: { type: "Server", id: req.tool.server }, attrs: {}, parents: [] });
    const slot = this.#preparsed();
    if ("error" in slot) return { decision: "deny", policies: [], errors: [slot.error] };
    const answer = cedar.statefulIsAuthorized({
      principal: { type: "Agent", id: req.agent.id },
      action: { type: "Action", id: "call" },
      resource: { type: "Tool", id: req.tool.name },
      context: contextOf(req),
      preparsedPolicySetId: slot.id,
      entities,
    });
    if (answer.type === "failure")
      return { decision: "deny", policies: [], errors: answer.errors.map(describe) };
    const { decision, diagnostics } = answer.response;
    const errors = diagnostics.errors.map((e) => `${e.policyId}: ${describe(e.error)}`);
    // A forbid that could not be evaluated denies: an error never opens a door.
    const erredForbids = diagnostics.errors
      .map((e) => e.policyId)
      .filter((id) => this.parsed.forbids.has(id));
    if (erredForbids.length > 0) return { decision: "deny", policies: erredForbids, errors };
    return { decision, policies: diagnostics.reason, errors };
  }

  /** The id under which Cedar holds this policy set, preparsing it when it is not held. */
  #preparsed(): { id: string } | { error: string } {
    if (this.#slot < 0 || slotOwner[this.#slot] !== this) {
      const slot = nextSlot;
      nextSlot = (nextSlot + 1) % SLOTS;
      const done = cedar.preparsePolicySet(`tool-policy-${slot}`, { staticPolicies: this.parsed.policies });
      if (done.type === "failure") return { error: done.errors.map(describe).join("; ") };
      slotOwner[slot] = this;
      this.#slot = slot;
    }
    return { id: `tool-policy-${this.#slot}` };
  }
}
