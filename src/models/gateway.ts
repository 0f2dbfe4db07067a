// The model gateway: every model call of every run goes through a session of it. It holds the
// real keys (the secrets of use model granted to the agent, which no box ever sees), knows a run by its short-lived
// workload token, counts tokens and dollars against the run's budget, routes the run to a
// model, falls back on a provider error or a 429, and writes every call to the run's trace.
import { randomBytes } from "node:crypto";
import { createAnthropic } from "@ai-sdk/anthropic";
import { createOpenAI } from "@ai-sdk/openai";
import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import type { ModelCallRecord } from "../contract/runs.js";
import type { LanguageModelV3 } from "@ai-sdk/provider";
import type { ModelRef, ModelSpec } from "../contract/spec.js";
import type { SecretUse } from "../contract/types.js";
import { OFFICIAL_MODEL_HOSTS, SECRET_VALUE_MIN_BYTES } from "../contract/secrets.js";
import { WarrenError } from "../errors.js";
import { Redactor } from "../secrets/redact.js";
import { modelCallTold } from "../observability/telemetry.js";
import type { GuardedFetch } from "../net/connector.js";
import type { Prices } from "./prices.js";
import { parseScript, ScriptModel, type ScriptTurn } from "./script.js";
import type {
  Admission,
  BudgetState,
  CallEstimate,
  GatewayOpen,
  GatewaySession,
  ModelGateway,
  ModelUsage,
  ResolvedModel,
  RunEventSink,
  WireProtocol,
} from "./types.js";
import type { BudgetRefusal, OrgBudgetLedger } from "../budgets/types.js";

export { BudgetStop, budgetName, callWithFallback, failureOf } from "./fallback.js";

export const DEFAULT_BASE_URL = {
  anthropic: "https://api.anthropic.com/v1",
  openai: "https://api.openai.com/v1",
} as const;

export interface GatewayDeps {
  /** The secrets that reach the agent now, by name, with their use (Secrets.keysFor). */
  keysOf(agent: {
    id: string;
    orgId: string;
  }): Promise<Record<string, { use: SecretUse; value: string; hosts?: string[] }>>;
  /** A file of the agent's home, read by the home file rules (a script's turns). */
  readHome(agent: { id: string; machineId: string }, path: string): Promise<Buffer>;
  prices: Prices;
  /**
   * The guarded connector every provider call goes through (official APIs and base_urls alike):
   * a base_url at a loopback or private address is reached only inside the operator's bound.
   */
  fetch: GuardedFetch;
  /** A workload token outlives its run's time limit by this much at most (default 60 s). */
  tokenMarginS?: number;
  /** The organisations' budgets (per day and month, of the organisation and per agent), if any. */
  budgets?: OrgBudgetLedger;
}

const round9 = (x: number): number => Math.round(x * 1e9) / 1e9;

const protocolOf = (provider: ModelRef["provider"]): WireProtocol =>
  provider === "anthropic" ? "anthropic" : provider === "script" ? "script" : "openai";

/** The model a run's input routes to: the first rule that matches, else the spec's own model. */
export function routeModel(spec: ModelSpec, input: string): ModelRef {
  for (const r of spec.routes ?? []) {
    const w = r.when;
    const contains = w.input_contains === undefined || input.includes(w.input_contains);
    const longer = w.input_longer_than === undefined || input.length > w.input_longer_than;
    if (contains && longer && (w.input_contains !== undefined || w.input_longer_than !== undefined))
      return r.model;
  }
  const { provider, name, base_url, key_secret } = spec;
  return {
    provider,
    name,
    ...(base_url !== undefined ? { base_url } : {}),
    ...(key_secret !== undefined ? { key_secret } : {}),
  };
}

/**
 * Whether a key may be sent to a base URL: its host (with the port when it is not the
 * scheme's default) is one of the key's hosts, or, when the key has none, the official API
 * host of the model's provider. Answers the host the URL names.
 */
export function keyMayGo(
  baseUrl: string,
  provider: string,
  hosts: readonly string[],
): { ok: boolean; host: string; allowed: readonly string[] } {
  let u: URL;
  try {
    u = new URL(baseUrl);
  } catch {
    return { ok: false, host: baseUrl, allowed: hosts };
  }
  const hostname = u.hostname.toLowerCase().replace(/\.$/, "");
  const port = u.port || (u.protocol === "https:" ? "443" : u.protocol === "http:" ? "80" : "");
  const defaultPort = u.port === "";
  const host = defaultPort ? hostname : `${hostname}:${port}`;
  const allowed = hosts.length > 0 ? hosts : (OFFICIAL_MODEL_HOSTS[provider] ?? []);
  // an official host is reached over https only
  if (hosts.length === 0 && u.protocol !== "https:") return { ok: false, host, allowed };
  const ok = allowed.some((h) => h === `${hostname}:${port}` || (defaultPort && h === hostname));
  return { ok, host, allowed };
}

/** At most this many `budget` events of refused calls per run (a client may go on asking). */
const REFUSAL_EVENTS = 10;

/**
 * The least max output a call is sent with near the budget's end (less is refused), and what
 * the one last call of `on_limit: finish` gets whatever is left.
 */
const MIN_OUTPUT_TOKENS = 512;

/**
 * What a call that gives no max output tokens reserves; below what is left of the budget it
 * is sent with what is left as its max: a size every model takes as a max output.
 */
const NO_MAX_RESERVE = 16_384;

class Session implements GatewaySession {
  readonly #usage: ModelUsage = { tokens_in: 0, tokens_out: 0, usd: 0, calls: 0 };
  /** What the calls under way may still cost at most (their reservations). */
  readonly #reserved = { tokens: 0, usd: 0 };
  #refusals = 0;
  /** The last call the budget refused. */
  #refused: BudgetRefusal | null = null;
  /** Whether the one last call of `on_limit: finish` was made. */
  #finished = false;
  /** The calls under way (reserved, not yet recorded), and who waits for none. */
  #underWay = 0;
  #idle: (() => void)[] = [];
  #closed = false;

  constructor(
    readonly runId: string,
    readonly token: string,
    readonly expiresAt: number,
    private readonly models: ResolvedModel[],
    private readonly scripts: Map<string, ScriptTurn[]>,
    private readonly limits: GatewayOpen["spec"]["limits"],
    private readonly events: RunEventSink,
    private readonly prices: Prices,
    private readonly onClose: (s: Session) => void,
    /** Every model key the gateway holds for the run: cut from whatever it hands a box. */
    readonly redactor: Redactor,
    readonly fetch: GuardedFetch,
    /** The organisation's budgets every call is also reserved in, and the agent it counts for. */
    private readonly ledger: OrgBudgetLedger | null,
    private readonly owner: { orgId: string; agentId: string },
  ) {}

  get open(): boolean {
    return !this.#closed && Date.now() < this.expiresAt;
  }

  candidates(): ResolvedModel[] {
    return [...this.models];
  }

  languageModel(m: ResolvedModel): LanguageModelV3 {
    const name = m.ref.name;
    switch (m.ref.provider) {
      case "anthropic":
        return createAnthropic({ baseURL: m.baseUrl, apiKey: m.apiKey ?? "", fetch: this.fetch })(name);
      case "openai":
        return createOpenAI({ baseURL: m.baseUrl, apiKey: m.apiKey ?? "", fetch: this.fetch }).chat(name);
      case "openai-compatible":
        return createOpenAICompatible({
          name: "openai-compatible",
          baseURL: m.baseUrl,
          ...(m.apiKey !== null ? { apiKey: m.apiKey } : {}),
          includeUsage: true,
          fetch: this.fetch,
        }).chatModel(name);
      case "script": {
        const turns = this.scripts.get(name);
        if (!turns) throw new Error(`the script ${name} was not read at the run's start`);
        return new ScriptModel(name, turns);
      }
    }
  }

  async record(call: ModelCallRecord): Promise<void> {
    const usd = call.usd || this.prices.usd(call.provider, call.model, call.tokens_in, call.tokens_out);
    this.#usage.tokens_in += call.tokens_in;
    this.#usage.tokens_out += call.tokens_out;
    this.#usage.usd += usd;
    this.#usage.calls++;
    await this.ledger?.spend(this.owner, { tokens: call.tokens_in + call.tokens_out, usd });
    const priced = this.prices.lookup(call.provider, call.model) !== null;
    // its OTLP metrics, and a span of a harness's call through the HTTP face (the loop's: fallback.ts)
    modelCallTold({ ...call, usd }, this.runId);
    await this.events("model_call", { ...call, usd, ...(priced ? {} : { unpriced: true }) });
  }

  usage(): ModelUsage {
    return { ...this.#usage };
  }

  budget(): BudgetState {
    const l = this.limits;
    const tokens = this.#usage.tokens_in + this.#usage.tokens_out;
    if (l.max_tokens !== undefined && tokens >= l.max_tokens)
      return { ok: false, limit: "tokens", max: l.max_tokens, used: tokens, on_limit: l.on_limit };
    if (l.max_usd !== undefined && this.#usage.usd >= l.max_usd)
      return {
        ok: false,
        limit: "usd",
        max: l.max_usd,
        used: round9(this.#usage.usd),
        on_limit: l.on_limit,
      };
    return { ok: true };
  }

  reached(): BudgetState {
    const b = this.budget();
    if (!b.ok || !this.#refused) return b;
    const { limit, max, used, on_limit } = this.#refused;
    return { ok: false, limit, max, used, on_limit };
  }

  /**
   * Reserves a call's maximum cost before it is sent: answers the release (called once the
   * call is recorded), or the budget state that refuses it (written as a `budget` event)
   * when what was used, what the calls under way may still use and this call's maximum
   * would together cross `max_tokens` or `max_usd` (unless forced: the last call).
   */
  async #reserve(
    est: { provider: string; model: string; tokensIn: number; tokensOut: number },
    force = false,
  ): Promise<{ ok: true; release: () => void } | { ok: false; state: BudgetRefusal }> {
    const l = this.limits;
    const tokens = est.tokensIn + est.tokensOut;
    const usd = this.prices.usd(est.provider, est.model, est.tokensIn, est.tokensOut);
    const usedTokens = this.#usage.tokens_in + this.#usage.tokens_out;
    let refusal: BudgetRefusal | null = null;
    if (l.max_tokens !== undefined && usedTokens + this.#reserved.tokens + tokens > l.max_tokens)
      refusal = {
        ok: false,
        limit: "tokens",
        max: l.max_tokens,
        used: usedTokens,
        reserved: this.#reserved.tokens,
        call_max: tokens,
        on_limit: l.on_limit,
      };
    else if (l.max_usd !== undefined && this.#usage.usd + this.#reserved.usd + usd > l.max_usd)
      refusal = {
        ok: false,
        limit: "usd",
        max: l.max_usd,
        used: round9(this.#usage.usd),
        reserved: round9(this.#reserved.usd),
        call_max: round9(usd),
        on_limit: l.on_limit,
      };
    if (refusal && !force) {
      this.#refused = refusal;
      if (this.#refusals++ < REFUSAL_EVENTS)
        await this.events("budget", { ...refusal, refused: true, model: `${est.provider}:${est.model}` });
      return { ok: false, state: refusal };
    }
    this.#reserved.tokens += tokens;
    this.#reserved.usd += usd;
    this.#underWay++;
    let released = false;
    return {
      ok: true,
      release: () => {
        if (released) return;
        released = true;
        this.#reserved.tokens -= tokens;
        this.#reserved.usd -= usd;
        if (--this.#underWay === 0) for (const fn of this.#idle.splice(0)) fn();
      },
    };
  }

  async admit(est: CallEstimate): Promise<Admission> {
    const budget = this.budget();
    const room = this.#room(est.provider, est.model, est.tokensIn);
    let lastCall = false;
    let maxOut = est.maxOut;
    let release = () => {};
    /** The output tokens the call is reserved for. */
    let out = 0;
    if (!budget.ok) {
      if (budget.on_limit === "stop" || this.#finished) return { ok: false, spent: budget };
      lastCall = true;
    } else {
      // without its own max a call reserves NO_MAX_RESERVE; near the budget's end it is sent
      // with what is left as its max, when that is at least MIN_OUTPUT_TOKENS
      let most = est.maxOut ?? NO_MAX_RESERVE;
      if (est.maxOut === undefined && room !== null && room < NO_MAX_RESERVE) {
        most = Math.max(room, MIN_OUTPUT_TOKENS);
        if (room >= MIN_OUTPUT_TOKENS) maxOut = room;
      }
      const r = await this.#reserve({ ...est, tokensOut: most });
      out = most;
      if (r.ok) release = r.release;
      else if (r.state.on_limit === "finish" && !this.#finished) lastCall = true;
      else return { ok: false, refused: r.state, tokensOut: most };
    }
    if (lastCall) {
      // the one last call: its output held to what is left (at least MIN_OUTPUT_TOKENS)
      this.#finished = true;
      const most = Math.max(MIN_OUTPUT_TOKENS, room ?? 0);
      if ((est.maxOut ?? Infinity) > most) maxOut = most;
      out = maxOut ?? most;
      const r = await this.#reserve({ ...est, tokensOut: out }, true);
      if (r.ok) release = r.release;
    }
    if (!this.ledger) return { ok: true, maxOut, lastCall, release: async () => release() };
    // the organisation's budgets (and the agent's there): held in the database, all or nothing
    const org = await this.ledger.reserve(this.owner, {
      tokens: est.tokensIn + out,
      usd: this.prices.usd(est.provider, est.model, est.tokensIn, out),
    });
    if (!org.ok) {
      release();
      this.#refused = org.refusal;
      if (this.#refusals++ < REFUSAL_EVENTS)
        await this.events("budget", { ...org.refusal, refused: true, model: `${est.provider}:${est.model}` });
      return { ok: false, refused: org.refusal, tokensOut: out };
    }
    return {
      ok: true,
      maxOut,
      lastCall,
      release: async () => {
        release();
        await org.release();
      },
    };
  }

  /** The most output tokens a call to a model may have within what is left; null: no limit. */
  #room(provider: string, model: string, tokensIn: number): number | null {
    const left = this.left();
    let room: number | null = left.tokens !== null ? left.tokens - tokensIn : null;
    if (left.usd !== null) {
      const perMillionOut = this.prices.usd(provider, model, 0, 1_000_000);
      if (perMillionOut > 0) {
        const inUsd = this.prices.usd(provider, model, tokensIn, 0);
        const byUsd = Math.floor(((left.usd - inUsd) / perMillionOut) * 1_000_000);
        room = room === null ? byUsd : Math.min(room, byUsd);
      }
    }
    return room;
  }

  /** Resolves once no call is under way (each recorded), or after `timeoutMs`. */
  async idle(timeoutMs: number): Promise<void> {
    if (this.#underWay === 0) return;
    let timer: NodeJS.Timeout | undefined;
    await new Promise<void>((resolve) => {
      this.#idle.push(resolve);
      timer = setTimeout(resolve, timeoutMs);
    });
    clearTimeout(timer);
  }

  /** What is left of the budget now (used and reserved taken off), by limit; null: no limit. */
  left(): { tokens: number | null; usd: number | null } {
    const l = this.limits;
    const usedTokens = this.#usage.tokens_in + this.#usage.tokens_out;
    return {
      tokens: l.max_tokens !== undefined ? l.max_tokens - usedTokens - this.#reserved.tokens : null,
      usd: l.max_usd !== undefined ? l.max_usd - this.#usage.usd - this.#reserved.usd : null,
    };
  }

  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.onClose(this);
  }
}

export class Gateway implements ModelGateway {
  readonly #byToken = new Map<string, Session>();

  constructor(private readonly deps: GatewayDeps) {}

  async open(run: GatewayOpen): Promise<GatewaySession> {
    const spec = run.spec.model;
    if (!spec) throw new WarrenError("request.invalid", `model: is required for kind ${run.spec.kind}`);
    const refs = [routeModel(spec, run.input), ...(spec.fallback ? [spec.fallback] : [])];
    const needsSecrets = refs.some((r) => r.key_secret !== undefined);
    const values = needsSecrets ? await this.deps.keysOf(run.agent) : {};
    const scripts = new Map<string, ScriptTurn[]>();
    const models: ResolvedModel[] = [];
    const keys = new Set<string>();
    for (const v of Object.values(values)) if (v.use === "model") keys.add(v.value);
    for (const ref of refs) {
      let apiKey: string | null = null;
      if (ref.key_secret !== undefined) {
        const v = values[ref.key_secret];
        if (v === undefined)
          throw new Error(
            `the secret ${ref.key_secret} (the key of ${ref.provider}:${ref.name}) does not reach this agent; grant it to the agent, one of its guilds or its organisation`,
          );
        // a secret of use env is in every command's environment, so in the box: never a key
        if (v.use !== "model")
          throw new Error(
            `the secret ${ref.key_secret} (the key of ${ref.provider}:${ref.name}) has use "${v.use}": it reaches the agent's commands, so it cannot be a model's key; create the key as a secret with use "model" (warren secrets create ${ref.key_secret} --use model ...)`,
          );
        apiKey = v.value;
        keys.add(v.value);
      } else if (ref.provider === "anthropic" || ref.provider === "openai") {
        throw new Error(`${ref.provider}:${ref.name} needs key_secret: the secret that holds its key`);
      }
      if (ref.provider === "script" && !scripts.has(ref.name)) {
        const text = await this.deps.readHome(run.agent, ref.name).catch((err: unknown) => {
          throw new Error(
            `the script ${ref.name} could not be read from the home: ${(err as Error).message}`,
          );
        });
        scripts.set(ref.name, parseScript(text.toString("utf8"), ref.name));
      }
      const protocol = protocolOf(ref.provider);
      const baseUrl =
        ref.base_url ??
        (ref.provider === "anthropic"
          ? DEFAULT_BASE_URL.anthropic
          : ref.provider === "openai"
            ? DEFAULT_BASE_URL.openai
            : "");
      // a key goes only where its secret says, checked before any call of the run
      if (apiKey !== null && ref.key_secret !== undefined) {
        const go = keyMayGo(baseUrl, ref.provider, values[ref.key_secret]?.hosts ?? []);
        if (!go.ok)
          throw new Error(
            `the key ${ref.key_secret} of ${ref.provider}:${ref.name} may be sent only to ${go.allowed.length > 0 ? go.allowed.join(", ") : "the hosts an owner or admin gives it (it has none, and " + ref.provider + " has no official host)"}${go.allowed.length > 0 && (values[ref.key_secret]?.hosts ?? []).length === 0 ? " (over https)" : ""}, not to ${go.host} (base_url ${baseUrl}); nothing was sent. An owner or admin adds the host to the secret (PATCH /api/secrets/:id {"hosts": [...]}, warren secrets hosts <secret id> --host ${go.host}), or the model uses a key meant for that host`,
          );
      }
      models.push({
        ref,
        protocol,
        baseUrl: baseUrl.replace(/\/+$/, ""),
        apiKey,
        label: `${ref.provider}:${ref.name}`,
      });
    }
    const token = `wrk_${randomBytes(32).toString("base64url")}`;
    const ttlS = run.spec.limits.max_run_s + (this.deps.tokenMarginS ?? 60);
    const s = new Session(
      run.runId,
      token,
      Date.now() + ttlS * 1000,
      models,
      scripts,
      run.spec.limits,
      run.events,
      this.deps.prices,
      (x) => this.#byToken.delete(x.token),
      new Redactor(keys, SECRET_VALUE_MIN_BYTES),
      this.deps.fetch,
      this.deps.budgets ?? null,
      { orgId: run.agent.orgId, agentId: run.agent.id },
    );
    this.#byToken.set(token, s);
    return s;
  }

  byToken(token: string): GatewaySession | null {
    const s = this.#byToken.get(token);
    if (!s) return null;
    if (!s.open) {
      s.close();
      return null;
    }
    return s;
  }

  price(provider: string, model: string, tokensIn: number, tokensOut: number): number {
    return this.deps.prices.usd(provider, model, tokensIn, tokensOut);
  }
}
