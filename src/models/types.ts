// The model gateway's seam: every model call of every run kind goes through a session of the
// gateway. The assistant loop calls it in-process; harness CLIs in the box reach its HTTP face
// (src/models/http) with the run's workload token. The real key never leaves the server.
import type { GuardedFetch } from "../net/connector.js";
import type { LanguageModelV3 } from "@ai-sdk/provider";
import type { AgentSpec, ModelRef } from "../contract/spec.js";

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

/** One model call, as counted and written to the trace as a `model_call` event. */
export interface ModelCallRecord {
  provider: string;
  model: string;
  tokens_in: number;
  tokens_out: number;
  usd: number;
  latency_ms: number;
  finish_reason: string | null;
  status: "ok" | "error";
  error?: string;
  /** Set when this call was made on a fallback: from which model and why. */
  fallback_from?: { provider: string; model: string; reason: string };
  /** Which face made it: the in-process loop, or a harness through the HTTP face. */
  via: "loop" | "http";
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
