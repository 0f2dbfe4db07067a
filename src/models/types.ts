// The model gateway's seam: every model call of every run kind goes through a session of the
// gateway. The assistant loop calls it in-process; harness CLIs in the box reach its HTTP face
// (src/models/http) with the run's workload token. The real key never leaves the server.
import type { GuardedFetch } from "../net/connector.js";
import type { LanguageModelV3 } from "@ai-sdk/provider";
import type { ModelCallRecord } from "../contract/runs.js";
import type { AgentSpec, ModelRef } from "../contract/spec.js";
import type { Redactor } from "../secrets/redact.js";
import type { BudgetRefusal } from "../budgets/types.js";

/** How a provider is spoken to on the wire. */
export type WireProtocol = "anthropic" | "openai" | "script";

/** A model the gateway may call for a run, with what it needs to call it (never shown). */
export interface ResolvedModel {
  ref: ModelRef;
  protocol: WireProtocol;
  /** The provider's base URL (for script: unused). */
  baseUrl: string;
  /** The provider's key, from the model's key_secret; null when it needs none. */
  apiKey: string | null;
  /** `provider:name`, as the trace and the receipt name it. */
  label: string;
}

export interface ModelUsage {
  tokens_in: number;
  tokens_out: number;
  usd: number;
  calls: number;
}

export type BudgetState =
  | { ok: true }
  | { ok: false; limit: "tokens" | "usd"; max: number; used: number; on_limit: "stop" | "finish" };

/** A call about to be sent, as the budget sees it. */
export interface CallEstimate {
  provider: string;
  model: string;
  /** The input's estimate (its bytes / 4). */
  tokensIn: number;
  /** The call's own max output tokens, when it gives one. */
  maxOut?: number;
}

/**
 * What the budget makes of a call about to be sent: sent (its reservation held until
 * `release`, after the call is recorded), with `maxOut` the max output tokens to send it with
 * (undefined: as it is) and `lastCall` when it is the one last call of `on_limit: finish`
 * (to be sent without tools); or not sent, the budget being `spent` or its maximum
 * `refused` (a `budget` event was written; `tokensOut`: the output it was held to).
 */
export type Admission =
  | { ok: true; maxOut: number | undefined; lastCall: boolean; release: () => Promise<void> }
  | { ok: false; spent: Extract<BudgetState, { ok: false }> }
  | { ok: false; refused: BudgetRefusal; tokensOut: number; spent?: undefined };

/** What a run writes to its trace: one event of a type with its data (redacted by the sink). */
export type RunEventSink = (type: string, data: Record<string, unknown>) => Promise<void>;

/** A run's hold on the gateway, open from the run's start to its end. */
export interface GatewaySession {
  readonly runId: string;
  /** The run's workload token: its only key, valid until close(). */
  readonly token: string;
  /** The models to try, in order: the routed model, then its fallback. */
  candidates(): ResolvedModel[];
  /** The AI SDK model that calls one of the candidates with its real key (or replays its script). */
  languageModel(m: ResolvedModel): LanguageModelV3;
  /** The guarded fetch every call to a provider goes through (the address rule's connector). */
  readonly fetch: GuardedFetch;
  /** Counts a finished call against the budget and writes its `model_call` event. */
  record(call: ModelCallRecord): Promise<void>;
  usage(): ModelUsage;
  budget(): BudgetState;
  /**
   * Whether the budget was reached: budget() once the limit is used up, else the last call it
   * refused (what was used then, of which limit); ok when neither.
   */
  reached(): BudgetState;
  /**
   * Admits a call against the budget before it is sent, reserving its maximum cost (its
   * input's estimate and the max output it is sent with, priced for max_usd) until released.
   * A call without its own max is sent with what is left once that is less than it would
   * reserve; one the budget cannot hold (with at least MIN_OUTPUT_TOKENS out) is refused, or,
   * with `on_limit: finish`, becomes the run's one last call. Both faces go through it.
   */
  admit(est: CallEstimate): Promise<Admission>;
  /**
   * Resolves once no call is under way (a call whose client hung up is still read to its end
   * and recorded), or after `timeoutMs`: a run counts its last calls before it ends.
   */
  idle(timeoutMs: number): Promise<void>;
  /** What is left of the budget (used and reserved taken off); null where there is no limit. */
  left(): { tokens: number | null; usd: number | null };
  /** Every model key the gateway holds for the run, to cut from whatever reaches a box. */
  readonly redactor: Redactor;
  close(): void;
}

export interface GatewayOpen {
  runId: string;
  agent: { id: string; orgId: string; machineId: string };
  spec: AgentSpec;
  /** The run's input, for routing rules. */
  input: string;
  events: RunEventSink;
}

export interface ModelGateway {
  open(run: GatewayOpen): Promise<GatewaySession>;
  /** The open session a workload token belongs to, or null (unknown, expired or closed). */
  byToken(token: string): GatewaySession | null;
  /** Dollars for a call, by the price table (config may override it). */
  price(provider: string, model: string, tokensIn: number, tokensOut: number): number;
}
