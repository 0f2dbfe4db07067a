// Opens a run's toolset from its agent's spec: the builtins it lists, its http tools and the
// tools of its MCP servers. Every call is decided first by the agent's Cedar tool policy, then
// run; a refusal or a failure is the answer the model gets, never a thrown error. Every call is
// recorded (tool, arguments, decision and deciding policies, result size, duration, error).
import type { Artifacts } from "../artifacts/index.js";
import { createHash, randomUUID } from "node:crypto";
import type { HomeLayout } from "../boxes/index.js";
import { WarrenError } from "../errors.js";
import type { Egress } from "../egress/service.js";
import { addressRefusedIn, type GuardedFetch } from "../net/connector.js";
import { uidOf } from "../machines/placement.js";
import type { Logger } from "../observability/log.js";
import { failed, inSpan } from "../observability/tracing.js";
import type { Secrets, ToolHeaderValues } from "../secrets/service.js";
import { builtinTool } from "./builtins.js";
import type { BrowserDriver } from "./browser.js";
import type { Environments } from "../machines/environment.js";
import { viaConnection, type ConnectionTokens } from "./connected.js";
import { httpTool } from "./http.js";
import { bounded, ToolFailure, type ToolImpl } from "./impl.js";
import { connectMcp, type McpConnection } from "./mcp.js";
import { ToolPolicy } from "../policy/tool-policy.js";
import type { ApprovalDoor, KeepWaiting } from "../approvals/types.js";
import type {
  RunTool,
  ToolCallRecord,
  ToolOutcome,
  ToolRunContext,
  Toolset,
  ToolsetFactory,
} from "./types.js";

export interface ToolsOptions {
  layout: HomeLayout;
  /** The values of tools' headers (secrets of use tool), read in the server, never put in a box. */
  secrets: Pick<Secrets, "toolHeadersFor" | "resolve">;
  /** How long a secret_request waits for a person (ms). */
  secretRequestWaitMs?: number | undefined;
  logger: Logger;
  /** The egress proxy: web_fetch goes out through it, decided and recorded like the box's connections. */
  egress: Pick<Egress, "handler">;
  /** The guarded connector the http and MCP tools fetch through (the address rule's). */
  fetch: GuardedFetch;
  /**
   * The connector an organisation's agents' http and MCP tools fetch through: `fetch` bounded
   * by the organisation's network deny list (what its sandbox policies are bounded by too).
   */
  fetchFor?: (orgId: string) => GuardedFetch;
  /** The access tokens of connections, added by the server to the calls of tools that name one. */
  connections?: ConnectionTokens;
  /** The agents' browsers, which the browser tools drive. */
  browsers?: BrowserDriver | undefined;
  /** The artifact store, which the note, memory, record and script tools reach as the agent. */
  artifacts: Pick<Artifacts, "forAgent">;
  /** Machines' environments: env_propose makes its proposal there. */
  environments?: Pick<Environments, "propose"> | undefined;
  /** Where a call a permit asks approval for waits for a person's decision; without it, such a call is refused. */
  approvals?: ApprovalDoor | undefined;
  /**
   * The organisation's guardrail, as the policy it is decided by (null: none): every call the
   * agent's policy allows must pass it too.
   */
  guardrailOf?: (orgId: string) => Promise<string | null>;
}

/** JSON with every object's keys in order: the same arguments, the same text, the same digest. */
function stableJson(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(stableJson).join(",")}]`;
  if (v && typeof v === "object")
    return `{${Object.keys(v)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${stableJson((v as Record<string, unknown>)[k])}`)
      .join(",")}}`;
  return JSON.stringify(v ?? null);
}

/** SHA-256 (hex) of a call's canonical arguments: what an approval's decision must carry. */
export const argsDigest = (args: unknown): string =>
  createHash("sha256").update(stableJson(args)).digest("hex");

/** The arguments with each one a policy can test in its canonical form (canonical.ts); throws ToolFailure. */
function canonicalArguments(impl: ToolImpl, args: Record<string, unknown>): Record<string, unknown> {
  const out = { ...args };
  for (const [name, canonicalise] of Object.entries(impl.canonical ?? {})) {
    const v = canonicalise(args[name], name);
    if (v === undefined) delete out[name];
    else out[name] = v;
  }
  return out;
}

function messageOf(err: unknown): string {
  const refused = addressRefusedIn(err);
  if (refused) return `${refused.code}: ${refused.message}`;
  if (err instanceof ToolFailure || err instanceof WarrenError) return err.message;
  if (err instanceof Error) {
    if (err.name === "TimeoutError") return "the call took too long and was stopped";
    if (err.name === "AbortError") return "the call was cancelled";
    const cause = (err as { cause?: unknown }).cause;
    const code = (err as { code?: unknown }).code;
    const own =
      err.message || (typeof code === "string" ? code : `${err.name || "an error"} without a message`);
    return cause instanceof Error && cause.message ? `${own}: ${cause.message}` : own;
  }
  return String(err);
}

/** A string argument longer than this is cut in the record (a file's content, say). */
const RECORD_STRING_BYTES = 4096;

/** A value as the record keeps it: every string (keys too) redacted, long ones cut. */
function shownValue(v: unknown, hide: (t: string) => string): unknown {
  if (typeof v === "string") {
    const h = hide(v);
    const bytes = Buffer.byteLength(h);
    if (bytes <= RECORD_STRING_BYTES) return h;
    const kept = Buffer.from(h)
      .subarray(0, RECORD_STRING_BYTES)
      .toString("utf8")
      .replace(/\uFFFD$/, "");
    return `${kept}[... ${bytes - Buffer.byteLength(kept)} more bytes]`;
  }
  if (Array.isArray(v)) return v.map((x) => shownValue(x, hide));
  if (v && typeof v === "object")
    return Object.fromEntries(Object.entries(v).map(([k, x]) => [hide(k), shownValue(x, hide)]));
  return v;
}

class RunToolset implements Toolset {
  readonly tools: readonly RunTool[];
  readonly #byName: Map<string, ToolImpl>;
  #closed = false;

  constructor(
    private readonly ctx: ToolRunContext,
    impls: ToolImpl[],
    private readonly policy: ToolPolicy,
    private readonly hide: (text: string) => string,
    private readonly connections: McpConnection[],
    readonly warnings: readonly string[],
    private readonly onClose: () => void,
    private readonly logger: Logger,
    private readonly approvals: ApprovalDoor | undefined,
    /** The organisation's guardrail as it is now (read at every call, never kept for the run). */
    private readonly guardrailNow: () => Promise<ToolPolicy | null>,
  ) {
    this.#byName = new Map(impls.map((i) => [i.tool.name, i]));
    this.tools = impls.map((i) => i.tool);
  }

  /** The organisation's guardrail's refusal of a call, or null when it passes (or there is none). */
  async #guard(
    name: string,
    impl: ToolImpl,
    canonical: Record<string, unknown>,
  ): Promise<{ output: string; policies: string[] } | null> {
    const guardrail = await this.guardrailNow();
    if (!guardrail) return null;
    const g = await guardrail.decide({
      agent: { id: this.ctx.workload.agent.id, orgId: this.ctx.workload.agent.orgId },
      tool: { name, kind: impl.kind, ...(impl.server ? { server: impl.server } : {}) },
      run: { id: this.ctx.runId, via: this.ctx.via ?? "loop" },
      arguments: canonical,
    });
    if (g.decision === "allow") return null;
    const why = g.policies.length > 0 ? `forbidden by ${g.policies.join(", ")}` : g.errors.join("; ");
    return {
      output: `the call was refused by the organisation's guardrail (${why}); the agent's own policy cannot allow it`,
      policies: g.policies,
    };
  }

  /**
   * A call, a span of the run's trace (GenAI's execute_tool: the tool, its call id, the
   * decision and the deciding policies; an approval's wait a span under it). No argument or
   * answer goes in it.
   */
  call(name: string, given: unknown, callId?: string, keep?: KeepWaiting): Promise<ToolOutcome> {
    const kind = this.#byName.get(name)?.kind;
    const attributes = {
      "gen_ai.operation.name": "execute_tool",
      "gen_ai.tool.name": name,
      ...(callId !== undefined ? { "gen_ai.tool.call.id": callId } : {}),
      ...(kind ? { "warren.tool.kind": kind } : {}),
    };
    return inSpan(`execute_tool ${name}`, attributes, async (span) => {
      const out = await this.#call(name, given, callId, keep);
      const r = out.record;
      span.setAttributes({ "warren.tool.decision": r.decision, "warren.tool.policies": r.policies });
      if (r.error !== undefined) failed(span, new Error(r.error), r.code ?? "tool_error");
      return out;
    });
  }

  async #call(name: string, given: unknown, callId?: string, keep?: KeepWaiting): Promise<ToolOutcome> {
    const started = performance.now();
    // some providers hand the arguments over as JSON text
    let args = given;
    if (typeof given === "string") {
      try {
        args = given.trim() === "" ? {} : (JSON.parse(given) as unknown);
      } catch {
        args = given;
      }
    }
    const impl = this.#byName.get(name);
    // the record keeps the arguments decided on (canonical), or those given when refused before
    let shownArgs = this.#redactedArgs(args);
    const finish = async (
      output: string,
      decision: "allow" | "deny",
      policies: string[],
      error?: string,
      code?: string,
    ): Promise<ToolOutcome> => {
      const shown = this.hide(output);
      const record: ToolCallRecord = {
        tool: name,
        arguments: shownArgs,
        decision,
        policies,
        result_bytes: Buffer.byteLength(shown),
        duration_ms: Math.round((performance.now() - started) * 1000) / 1000,
        ...(error !== undefined ? { error: this.hide(error) } : {}),
        ...(code !== undefined ? { code } : {}),
      };
      // a record that cannot be written is the server's trouble, not the model's: logged, and the call answered
      await this.ctx
        .record?.(record)
        .catch((err: unknown) =>
          this.logger.error({ err, runId: this.ctx.runId, tool: name }, "a tool call could not be recorded"),
        );
      return { output: shown, record };
    };

    if (this.#closed) return finish("the run's tools are closed", "deny", [], "closed");
    if (!impl) {
      const known = [...this.#byName.keys()].join(", ") || "none";
      return finish(`there is no tool named ${name} (tools: ${known})`, "deny", [], "unknown tool");
    }
    if (args !== undefined && args !== null && (typeof args !== "object" || Array.isArray(args)))
      return finish("the arguments must be a JSON object", "deny", [], "bad arguments");
    // the policy decides on the canonical arguments, and the tool is given exactly those
    let canonical: Record<string, unknown>;
    try {
      canonical = canonicalArguments(impl, (args ?? {}) as Record<string, unknown>);
    } catch (err) {
      if (!(err instanceof ToolFailure)) throw err;
      return finish(
        `the call was refused before the tool policy: ${err.message}`,
        "deny",
        [],
        `bad arguments: ${err.message}`,
      );
    }
    shownArgs = this.#redactedArgs(canonical);
    const d = await this.policy.decide({
      agent: { id: this.ctx.workload.agent.id, orgId: this.ctx.workload.agent.orgId },
      tool: { name, kind: impl.kind, ...(impl.server ? { server: impl.server } : {}) },
      run: { id: this.ctx.runId, via: this.ctx.via ?? "loop" },
      arguments: canonical,
    });
    if (d.decision === "deny") {
      const why =
        d.policies.length > 0
          ? `forbidden by the policy ${d.policies.join(", ")}`
          : d.errors.length > 0
            ? `the policy could not decide it (${d.errors.join("; ")})`
            : "no policy permits it (the tool policy permits only what it names)";
      return finish(
        `the call was refused by the agent's tool policy: ${why}`,
        "deny",
        d.policies,
        "denied by policy",
      );
    }
    const guarded = await this.#guard(name, impl, canonical);
    if (guarded) return finish(guarded.output, "deny", guarded.policies, "denied by guardrail");
    if (d.ask) {
      // a permit asks a person first: the call waits for a decision on exactly these arguments
      const door = this.approvals;
      if (!door)
        return finish(
          "the call needs a person's approval, which this run cannot wait for",
          "deny",
          d.policies,
          "approval unavailable",
        );
      const answer = await inSpan("approval.wait", { "gen_ai.tool.name": name }, async (span) => {
        const a = await door.ask(
          {
            runId: this.ctx.runId,
            toolCallId: callId ?? randomUUID(),
            tool: name,
            arguments: shownArgs,
            argsSha256: argsDigest(canonical),
            policies: d.policies,
            deciders: d.deciders ?? [],
          },
          this.ctx.signal,
          keep,
        );
        span.setAttribute("warren.approval.decision", a.decision);
        return a;
      });
      if (answer.decision === "deny") {
        const said = answer.message ? `: ${answer.message}` : "";
        // no decider: the call could not wait for one (its run ended, its arguments were not restored)
        const why = answer.decidedBy ? `was declined by ${answer.decidedBy}` : "was not run";
        return finish(`the call ${why}${said}`, "deny", d.policies, "declined");
      }
      // at execution the policy decides again: what it allows now, and nothing else, runs
      const again = await this.policy.decide({
        agent: { id: this.ctx.workload.agent.id, orgId: this.ctx.workload.agent.orgId },
        tool: { name, kind: impl.kind, ...(impl.server ? { server: impl.server } : {}) },
        run: { id: this.ctx.runId, via: this.ctx.via ?? "loop" },
        arguments: canonical,
      });
      if (again.decision === "deny")
        return finish(
          "the call was approved, but the tool policy no longer allows it",
          "deny",
          again.policies,
          "denied by policy",
        );
      const guardedNow = await this.#guard(name, impl, canonical);
      if (guardedNow) return finish(guardedNow.output, "deny", guardedNow.policies, "denied by guardrail");
    }
    try {
      const out = await impl.run(canonical, this.ctx.signal, {
        callId: callId ?? randomUUID(),
        argsSha256: argsDigest(canonical),
        keep,
      });
      return await finish(bounded(out), "allow", d.policies);
    } catch (err) {
      const msg = messageOf(err);
      // the rule refused the fetch's address before anything was sent: the tool's answer, and the run goes on
      const refused = addressRefusedIn(err);
      if (refused)
        return finish(
          `the call was refused (${refused.code}): ${refused.message}; the server reaches no loopback or private address outside the operator's bound, and never its own endpoints or the metadata service`,
          "allow",
          d.policies,
          msg,
          refused.code,
        );
      return finish(`the call failed: ${msg}`, "allow", d.policies, msg);
    }
  }

  /** The arguments as the record keeps them: secrets redacted, long strings cut. */
  #redactedArgs(args: unknown): unknown {
    try {
      // through JSON first: only what JSON can say (no functions, cycles refused)
      return shownValue(JSON.parse(JSON.stringify(args ?? {})) as unknown, this.hide);
    } catch {
      return "[arguments that are not JSON]";
    }
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.onClose();
    await Promise.allSettled(this.connections.map((c) => c.close()));
  }
}

/**
 * What a tool whose headers name secrets of use env is told: it still runs (what was saved
 * before use tool existed), but those values are in every command's environment too.
 */
export function legacyHeaderWarnings(
  spec: { name: string; headers?: Record<string, string> | undefined },
  values: ToolHeaderValues,
): string[] {
  return Object.entries(spec.headers ?? {})
    .filter(([, secret]) => values[secret]?.use === "env")
    .map(
      ([header, secret]) =>
        `the header ${header} of the tool ${spec.name} carries the secret ${secret}, of use env: every command of the agent can read it; move it to use tool (PATCH /api/secrets/:id {"use": "tool"}, warren secrets update <secret> --use tool)`,
    );
}

/** Opens runs' toolsets, and finds the open one of a run (for the tool gateway). */
export class Tools implements ToolsetFactory {
  readonly #open = new Map<string, RunToolset>();
  /** Guardrails compiled, by their text (an edit is a new text; the oldest are let go). */
  readonly #compiled = new Map<string, Promise<ToolPolicy>>();

  constructor(private readonly o: ToolsOptions) {}

  /** The open toolset of a run, if any. */
  forRun(runId: string): Toolset | undefined {
    return this.#open.get(runId);
  }

  async open(ctx: ToolRunContext): Promise<Toolset> {
    const o = this.o;
    // the run's door holds the agent, its machine's trust and its secrets, loaded once for the run
    const work = ctx.workload;
    const { agent, secrets } = work;
    // the values of the tools' headers: read here, in the server, never put in a box
    const headerValues = await o.secrets.toolHeadersFor(agent);
    const hide = (t: string) => secrets.redactor.redactText(t);
    const env = {
      agent,
      trust: work.trust,
      layout: o.layout,
      workload: work,
      secrets,
      runId: ctx.runId,
      artifacts: o.artifacts.forAgent({ id: agent.id, orgId: agent.orgId }),
      environments: o.environments,
      approvals: o.approvals,
      resolveSecrets: (a: { id: string; orgId: string }) => o.secrets.resolve(a),
      browsers: o.browsers,
      secretRequestWaitMs: o.secretRequestWaitMs,
      egress: {
        handler: o.egress.handler,
        who: { machineId: agent.machineId, agentId: agent.id, uid: uidOf(agent.slot) },
      },
    };

    const fetch = o.fetchFor?.(agent.orgId) ?? o.fetch;
    const impls: ToolImpl[] = [];
    const connections: McpConnection[] = [];
    const warnings: string[] = [];
    for (const spec of ctx.spec.tools) {
      if (spec.type !== "builtin") for (const w of legacyHeaderWarnings(spec, headerValues)) warnings.push(w);
      if (spec.type === "builtin") impls.push(builtinTool(spec.name, env));
      else if (spec.type === "http") {
        const via = viaConnection(spec, agent, { fetch, secrets }, o.connections);
        impls.push(httpTool(spec, headerValues, via.secrets, via.fetch));
      } else {
        try {
          const via = viaConnection(spec, agent, { fetch, secrets }, o.connections);
          const c = await connectMcp(spec, headerValues, via.secrets, ctx.signal, via.fetch);
          connections.push(c);
          impls.push(...c.tools);
        } catch (err) {
          const msg = hide(
            addressRefusedIn(err)
              ? `MCP server ${spec.name} (${spec.url}) is unavailable, its tools are left out: ${messageOf(err)}`
              : `MCP server ${spec.name} (${spec.url}) could not be listed: ${messageOf(err)}`,
          );
          warnings.push(msg);
          o.logger.warn({ runId: ctx.runId, server: spec.name }, msg);
        }
      }
    }
    const policy = await ToolPolicy.compile(ctx.spec.tool_policy);
    const guardrailOf = o.guardrailOf;
    // decided by the guardrail as it is when each call executes: one added while a call waits
    // for its approval, or while the run goes on, applies to that call and every later one
    const guardrailNow = async (): Promise<ToolPolicy | null> => {
      const text = guardrailOf ? await guardrailOf(agent.orgId) : null;
      return text === null ? null : this.#compile(text);
    };
    if (policy.problem)
      warnings.push(`the tool policy does not validate, so every call is denied: ${policy.problem}`);
    const set = new RunToolset(
      ctx,
      impls,
      policy,
      hide,
      connections,
      warnings,
      () => {
        if (this.#open.get(ctx.runId) === set) this.#open.delete(ctx.runId);
      },
      o.logger,
      o.approvals,
      guardrailNow,
    );
    this.#open.set(ctx.runId, set);
    return set;
  }

  #compile(text: string): Promise<ToolPolicy> {
    let p = this.#compiled.get(text);
    if (!p) {
      if (this.#compiled.size >= 64) this.#compiled.delete(this.#compiled.keys().next().value ?? "");
      p = ToolPolicy.compile(text);
      this.#compiled.set(text, p);
      p.catch(() => this.#compiled.delete(text));
    }
    return p;
  }
}
