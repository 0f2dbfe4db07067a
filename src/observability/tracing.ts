// Spans of warren's work for OpenTelemetry: an API request, a run, a conversation's turn, a
// model call, a tool call, a command in a box with boxd's phases, an egress connection. The
// SDK and its exporters are started by telemetry.ts when an OTLP endpoint is configured; until
// then `tracing.on` is false and every helper here is a plain call (no span, no context).
// What a span carries is passed through the redaction of every secret value the server holds
// before it is exported (telemetry.ts), and callers put no command line, input or output in one.
import {
  context,
  INVALID_SPAN_CONTEXT,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  type Attributes,
  type Context,
  type Span,
} from "@opentelemetry/api";
import { W3CTraceContextPropagator } from "@opentelemetry/core";

export { SpanKind };
export type { Span };
/** Where a span stands in a trace (its parent's context), to carry across a queue or a callback. */
export type TraceContext = Context;

/** Whether spans are made (telemetry.ts sets it while an exporter runs). */
export const tracing = { on: false };

/** The span handed to a callback while tracing is off: it records nothing. */
const NOOP: Span = trace.wrapSpanContext(INVALID_SPAN_CONTEXT);
const tracer = () => trace.getTracer("warren");
const w3c = new W3CTraceContextPropagator();

/** The error of a span that failed: its status and `error.type` (the message is redacted on export). */
export function failed(span: Span, err: unknown, type?: string): void {
  const e = err instanceof Error ? err : null;
  span.setStatus({ code: SpanStatusCode.ERROR, message: (e?.message ?? String(err)).slice(0, 500) });
  span.setAttribute("error.type", type ?? e?.name ?? "error");
}

/**
 * Runs `fn` in a new span, the active one while it runs (what it starts nests under it); the
 * span ends when `fn` settles, failed when it throws. `parent`: another context than the active one.
 */
export function inSpan<T>(
  name: string,
  attributes: Attributes,
  fn: (span: Span) => Promise<T>,
  o: { kind?: SpanKind; parent?: TraceContext | undefined } = {},
): Promise<T> {
  if (!tracing.on) return fn(NOOP);
  const options = { kind: o.kind ?? SpanKind.INTERNAL, attributes };
  return tracer().startActiveSpan(name, options, o.parent ?? context.active(), async (span) => {
    try {
      return await fn(span);
    } catch (err) {
      failed(span, err);
      throw err;
    } finally {
      span.end();
    }
  });
}

/** A span started now (not made active): the caller ends it. */
export function openSpan(
  name: string,
  attributes: Attributes,
  o: { kind?: SpanKind; parent?: TraceContext | undefined } = {},
): Span {
  if (!tracing.on) return NOOP;
  return tracer().startSpan(
    name,
    { kind: o.kind ?? SpanKind.INTERNAL, attributes },
    o.parent ?? context.active(),
  );
}

/** A span of what already happened, from `startMs` to `endMs` (epoch ms), under `parent` (else the active context). */
export function spanBetween(
  name: string,
  attributes: Attributes,
  startMs: number,
  endMs: number,
  parent?: TraceContext,
): void {
  if (!tracing.on) return;
  const span = tracer().startSpan(name, { attributes, startTime: startMs }, parent ?? context.active());
  span.end(Math.max(startMs, endMs));
}

/** The context of `span` under the active one: what runs in it nests under the span (undefined: tracing is off). */
export const contextOf = (span: Span): TraceContext | undefined =>
  tracing.on ? trace.setSpan(context.active(), span) : undefined;

/** Runs `fn` in `ctx` (when given and tracing is on). */
export function withContext<T>(ctx: TraceContext | undefined, fn: () => T): T {
  return tracing.on && ctx ? context.with(ctx, fn) : fn();
}

/** `fn`, to run later in the context it was bound in (a queued run starts under its request). */
export function bindActive<A extends unknown[], R>(fn: (...args: A) => R): (...args: A) => R {
  return tracing.on ? context.bind(context.active(), fn) : fn;
}

/**
 * The span of an API request (kind server) under the trace its W3C `traceparent` (and
 * `tracestate`) header names, else a new trace; with the context its handler runs in.
 */
export function requestSpan(
  name: string,
  attributes: Attributes,
  headers: Record<string, string | string[] | undefined>,
): { span: Span; ctx: TraceContext } {
  const parent = w3c.extract(ROOT_CONTEXT, headers, {
    keys: (carrier) => Object.keys(carrier),
    get: (carrier, key) => carrier[key],
  });
  const span = tracer().startSpan(name, { kind: SpanKind.SERVER, attributes }, parent);
  return { span, ctx: trace.setSpan(parent, span) };
}

/** Ends an API request's span with its status (a 5xx is an error; a 4xx is the client's). */
export function endRequestSpan(span: Span, status: number): void {
  span.setAttribute("http.response.status_code", status);
  if (status >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
  span.end();
}

// The run each span of a run's work nests under, by run id: what happens outside its calls (an
// egress connection its commands open, a harness's model call through the gateway's HTTP face).
const runs = new Map<string, TraceContext>();

/** Keeps `ctx` as the context of the run until `forgetRun`. */
export function rememberRun(runId: string, ctx: TraceContext | undefined): void {
  if (ctx) runs.set(runId, ctx);
}

export function forgetRun(runId: string): void {
  runs.delete(runId);
}

/** The context of a run going on, when tracing and known. */
export const contextOfRun = (runId: string | null | undefined): TraceContext | undefined =>
  runId ? runs.get(runId) : undefined;

/** One of boxd's phases of an exec: its name and its µs of CLOCK_MONOTONIC (process.hrtime's clock). */
export interface Phase {
  name: string;
  startUs: number;
  endUs: number;
}

/** The phases of an exec as children of `parent`, the monotonic clock read against the wall clock once. */
export function phaseSpans(parent: Span, phases: Phase[]): void {
  if (!tracing.on || phases.length === 0) return;
  const wallUs = (performance.timeOrigin + performance.now()) * 1000;
  const offsetUs = wallUs - Number(process.hrtime.bigint() / 1000n);
  const ctx = trace.setSpan(context.active(), parent);
  for (const p of phases) {
    if (!(p.startUs > 0 && p.endUs >= p.startUs)) continue;
    spanBetween(`boxd.${p.name}`, {}, (p.startUs + offsetUs) / 1000, (p.endUs + offsetUs) / 1000, ctx);
  }
}

/**
 * An egress connection's decision, a span of the run that was going on (else a trace of its
 * own): its host and port, allowed or refused and why, the bytes each way. No path goes in it.
 */
export function egressSpan(r: {
  runId: string | null;
  agentId: string;
  at: Date;
  decision: string;
  reason: string;
  host: string;
  port: number;
  method: string | null;
  bytesOut: number;
  bytesIn: number;
  durationMs: number;
}): void {
  if (!tracing.on) return;
  const start = r.at.getTime();
  const attributes: Attributes = {
    "server.address": r.host,
    "server.port": r.port,
    "warren.agent.id": r.agentId,
    "warren.egress.decision": r.decision,
    "warren.egress.reason": r.reason,
    "warren.egress.bytes_out": r.bytesOut,
    "warren.egress.bytes_in": r.bytesIn,
    ...(r.method ? { "http.request.method": r.method } : {}),
    ...(r.runId ? { "warren.run.id": r.runId } : {}),
  };
  spanBetween(
    "egress.connection",
    attributes,
    start,
    start + r.durationMs,
    contextOfRun(r.runId) ?? ROOT_CONTEXT,
  );
}
