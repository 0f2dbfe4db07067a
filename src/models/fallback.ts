// A call with fallback: the session's candidates in order until one answers, each attempt
// admitted by the run's budget first, each failure and each move written to the trace.
import type { ModelCallRecord } from "../contract/runs.js";
import type { LanguageModelV3 } from "@ai-sdk/provider";
import { addressRefusedIn } from "../net/connector.js";
import {
  contextOf,
  failed,
  openSpan,
  SpanKind,
  withContext,
  type TraceContext,
} from "../observability/tracing.js";
import type { BudgetState, GatewaySession, ResolvedModel } from "./types.js";
import type { BudgetRefusal } from "../budgets/types.js";

/** Whether a failed call may move to the fallback: anything but the run's own abort. */
function movable(err: unknown, signal: AbortSignal | undefined): boolean {
  if (signal?.aborted) return false;
  return !(err instanceof Error && err.name === "AbortError");
}

/** A short, key-free account of a provider's failure. */
export function failureOf(err: unknown): { status: number | null; message: string } {
  const refused = addressRefusedIn(err);
  if (refused)
    return { status: null, message: `the address rule refused the model's address: ${refused.message}` };
  const e = err as { statusCode?: unknown; message?: unknown; name?: unknown };
  const status = typeof e?.statusCode === "number" ? e.statusCode : null;
  const message = typeof e?.message === "string" ? e.message : String(err);
  return { status, message: message.slice(0, 500) };
}

/** What one attempt at a call gives back, to be counted (null: the answer did not say). */
export interface Attempt<T> {
  value: T;
  tokensIn: number | null;
  tokensOut: number | null;
  finishReason: string | null;
}

/** What the budget says an attempt is sent with, and what it streamed (for an estimate). */
export interface AttemptPlan {
  /** The max output tokens to send the call with; undefined: the call's own. */
  maxOut: number | undefined;
  /** The one last call of `on_limit: finish`: to be sent without tools. */
  lastCall: boolean;
  /** The characters of text, reasoning and tool input streamed so far: the attempt counts them. */
  chars: number;
}

/**
 * Which budget a state is of, for people: the run's own, or an organisation's daily or monthly
 * budget (of the organisation as a whole, or of the agent there).
 */
export function budgetName(state: { limit: "tokens" | "usd"; scope?: string; period?: string }): string {
  const unit = state.limit === "tokens" ? "token" : "dollar";
  const per = state.period === "month" ? "monthly" : "daily";
  if (state.scope === "organisation") return `the organisation's ${per} ${unit} budget`;
  if (state.scope === "agent") return `the agent's ${per} ${unit} budget in its organisation`;
  return `the run's ${unit} budget`;
}

/** A call the budget did not let go: the budget is spent, or cannot hold the call's maximum. */
export class BudgetStop extends Error {
  constructor(readonly state: Extract<BudgetState, { ok: false }> | BudgetRefusal) {
    super(
      `${budgetName(state)} ${"call_max" in state ? `cannot hold the next call (${state.used} used and ${state.reserved} held of ${state.max}; it may use up to ${state.call_max})` : `is spent (${state.used} of ${state.max})`}`,
    );
    this.name = "BudgetStop";
  }
}

/**
 * Calls the session's candidates in order until one answers: a provider error or a 429 moves
 * to the next (each failure and each move is a `model_call` event); the run's abort does not.
 * Each attempt is first admitted by the budget (Session.admit, as the HTTP face's calls are):
 * one it does not let go throws BudgetStop, never sent. An attempt cut before its usage is
 * counted by what it streamed (about 4 characters a token, the input by its estimate).
 * Each attempt is a span (GenAI's chat: model, tokens, finish reason); the answer carries the
 * context of the one that answered, for the tool calls it asked for to nest under.
 * Throws the last failure when none answered.
 */
export async function callWithFallback<T>(
  session: GatewaySession,
  via: ModelCallRecord["via"],
  signal: AbortSignal | undefined,
  call: { tokensIn: number; maxOut?: number },
  attempt: (model: LanguageModelV3, m: ResolvedModel, plan: AttemptPlan) => Promise<Attempt<T>>,
): Promise<{ value: T; model: ResolvedModel; lastCall: boolean; trace?: TraceContext | undefined }> {
  const list = session.candidates();
  let from: ModelCallRecord["fallback_from"];
  let last: unknown = new Error("no model to call");
  for (const m of list) {
    const admitted = await session.admit({
      provider: m.ref.provider,
      model: m.ref.name,
      tokensIn: call.tokensIn,
      ...(call.maxOut !== undefined ? { maxOut: call.maxOut } : {}),
    });
    if (!admitted.ok) throw new BudgetStop(admitted.spent ?? admitted.refused);
    const plan: AttemptPlan = { maxOut: admitted.maxOut, lastCall: admitted.lastCall, chars: 0 };
    const t0 = performance.now();
    const base = {
      provider: m.ref.provider,
      model: m.ref.name,
      via,
      ...(from ? { fallback_from: from } : {}),
    };
    const flowed = () => (plan.chars > 0 ? Math.ceil(plan.chars / 4) : null);
    const span = openSpan(
      `chat ${m.ref.name}`,
      {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": m.ref.provider,
        "gen_ai.request.model": m.ref.name,
        "warren.model.via": via,
        ...(plan.maxOut !== undefined ? { "gen_ai.request.max_tokens": plan.maxOut } : {}),
        ...(from ? { "warren.model.fallback_from": `${from.provider}:${from.model}` } : {}),
      },
      { kind: SpanKind.CLIENT },
    );
    const trace = contextOf(span);
    try {
      const r = await withContext(trace, () => attempt(session.languageModel(m), m, plan));
      const estimated = r.tokensIn === null || r.tokensOut === null;
      span.setAttributes({
        "gen_ai.response.model": m.ref.name,
        "gen_ai.usage.input_tokens": r.tokensIn ?? call.tokensIn,
        "gen_ai.usage.output_tokens": r.tokensOut ?? flowed() ?? 0,
        ...(r.finishReason !== null ? { "gen_ai.response.finish_reasons": [r.finishReason] } : {}),
        ...(estimated ? { "warren.usage.estimated": true } : {}),
      });
      await session.record({
        ...base,
        tokens_in: r.tokensIn ?? call.tokensIn,
        tokens_out: r.tokensOut ?? flowed() ?? 0,
        usd: 0,
        latency_ms: Math.round(performance.now() - t0),
        finish_reason: r.finishReason,
        status: "ok",
        ...(estimated ? { estimated: true } : {}),
      });
      return { value: r.value, model: m, lastCall: admitted.lastCall, trace };
    } catch (err) {
      last = err;
      const f = failureOf(err);
      failed(span, new Error(f.message), f.status !== null ? String(f.status) : undefined);
      // cut after something streamed: counted by what flowed, never 0
      const out = flowed();
      await session.record({
        ...base,
        tokens_in: out !== null ? call.tokensIn : 0,
        tokens_out: out ?? 0,
        usd: 0,
        latency_ms: Math.round(performance.now() - t0),
        finish_reason: null,
        status: "error",
        error: f.status !== null ? `${f.status}: ${f.message}` : f.message,
        ...(out !== null ? { estimated: true } : {}),
      });
      if (!movable(err, signal)) throw err;
      from = {
        provider: m.ref.provider,
        model: m.ref.name,
        reason:
          f.status === 429
            ? "429 rate limited"
            : f.status !== null
              ? `provider error ${f.status}`
              : "provider error",
      };
    } finally {
      span.end();
      await admitted.release();
    }
  }
  throw last;
}
