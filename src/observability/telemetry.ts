// OpenTelemetry's SDK for the server: traces (tracing.ts makes the spans) and metrics (runs,
// tokens, dollars, exec latency, beside the Prometheus ones of metrics.ts), each exported over
// OTLP/HTTP (JSON) to OTEL_EXPORTER_OTLP_ENDPOINT or its per-signal endpoint, with the standard
// variables (OTEL_SERVICE_NAME, OTEL_EXPORTER_OTLP_HEADERS, OTEL_TRACES_EXPORTER=none, ...).
// Off when no endpoint is set: nothing is started and every span helper is a plain call.
// Every string a span carries is passed through the redaction of every secret value the server
// holds as the span ends, before any exporter sees it.
import {
  context,
  propagation,
  SpanStatusCode,
  trace,
  type Attributes,
  type Histogram,
} from "@opentelemetry/api";
import type { Counter } from "@opentelemetry/api";
import type { ModelCallRecord } from "../contract/runs.js";
import { OTLPMetricExporter } from "@opentelemetry/exporter-metrics-otlp-http";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { resourceFromAttributes } from "@opentelemetry/resources";
import { MeterProvider, PeriodicExportingMetricReader } from "@opentelemetry/sdk-metrics";
import { BatchSpanProcessor, type Span, type SpanProcessor } from "@opentelemetry/sdk-trace-base";
import { NodeTracerProvider } from "@opentelemetry/sdk-trace-node";
import { ATTR_SERVICE_NAME, ATTR_SERVICE_VERSION } from "@opentelemetry/semantic-conventions";
import type { Config } from "../config/index.js";
import type { Logger } from "./log.js";
import { contextOfRun, spanBetween, tracing } from "./tracing.js";

export type TelemetryConfig = Pick<
  Config,
  | "OTEL_SDK_DISABLED"
  | "OTEL_SERVICE_NAME"
  | "OTEL_EXPORTER_OTLP_ENDPOINT"
  | "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
  | "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT"
  | "OTEL_EXPORTER_OTLP_HEADERS"
  | "OTEL_TRACES_EXPORTER"
  | "OTEL_METRICS_EXPORTER"
  | "OTEL_METRIC_EXPORT_INTERVAL"
>;

/** `k=v,k2=v2` (values percent-encoded), as OTEL_EXPORTER_OTLP_HEADERS spells headers. */
export function parseOtlpHeaders(text: string | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const pair of (text ?? "").split(",")) {
    const at = pair.indexOf("=");
    if (at <= 0) continue;
    const key = pair.slice(0, at).trim();
    const raw = pair.slice(at + 1).trim();
    let value = raw;
    try {
      value = decodeURIComponent(raw);
    } catch {
      // a value that is not percent-encoded is sent as written
    }
    if (key) out[key] = value;
  }
  return out;
}

/** Where a signal goes: its own endpoint as given, else the base endpoint's /v1/<signal>; null: not exported. */
function endpointOf(c: TelemetryConfig, signal: "traces" | "metrics"): string | null {
  if (c.OTEL_SDK_DISABLED) return null;
  if ((signal === "traces" ? c.OTEL_TRACES_EXPORTER : c.OTEL_METRICS_EXPORTER) === "none") return null;
  const own =
    signal === "traces" ? c.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT : c.OTEL_EXPORTER_OTLP_METRICS_ENDPOINT;
  if (own) return own;
  const base = c.OTEL_EXPORTER_OTLP_ENDPOINT;
  return base ? `${base.replace(/\/+$/, "")}/v1/${signal}` : null;
}

/** Passes every string of a span (attributes, status) through `redact` as it ends, before export. */
class Redacting implements SpanProcessor {
  constructor(private readonly redact: (text: string) => string) {}
  onStart(): void {}
  onEnding(span: Span): void {
    for (const [key, value] of Object.entries(span.attributes)) {
      if (typeof value === "string") {
        const r = this.redact(value);
        if (r !== value) span.setAttribute(key, r);
      } else if (Array.isArray(value) && value.some((v) => typeof v === "string")) {
        const r = (value as string[]).map((v) => (typeof v === "string" ? this.redact(v) : v));
        if (r.some((v, i) => v !== value[i])) span.setAttribute(key, r);
      }
    }
    const message = span.status.message;
    if (message) span.setStatus({ code: SpanStatusCode.ERROR, message: this.redact(message) });
  }
  onEnd(): void {}
  forceFlush(): Promise<void> {
    return Promise.resolve();
  }
  shutdown(): Promise<void> {
    return Promise.resolve();
  }
}

/** The OTLP metrics: null while none are exported. */
let meters: {
  runs: Counter;
  tokens: Histogram;
  usd: Counter;
  modelCalls: Histogram;
  execs: Histogram;
} | null = null;

/** A run ended: counted by kind and status. */
export function countRun(kind: string, status: string): void {
  meters?.runs.add(1, { "warren.run.kind": kind, "warren.run.status": status });
}

/**
 * A model call the gateway counted: its tokens (gen_ai.client.token.usage), dollars and duration
 * as metrics; a harness's call through the HTTP face is also a span of its run (the loop's
 * calls are spans of their own, models/fallback.ts).
 */
export function modelCallTold(c: ModelCallRecord, runId: string): void {
  const at: Attributes = {
    "gen_ai.operation.name": "chat",
    "gen_ai.provider.name": c.provider,
    "gen_ai.request.model": c.model,
  };
  if (meters) {
    meters.tokens.record(c.tokens_in, { ...at, "gen_ai.token.type": "input" });
    meters.tokens.record(c.tokens_out, { ...at, "gen_ai.token.type": "output" });
    if (c.usd > 0) meters.usd.add(c.usd, at);
    meters.modelCalls.record(c.latency_ms / 1000, c.status === "ok" ? at : { ...at, "error.type": "error" });
  }
  if (c.via !== "http" || !tracing.on) return;
  const end = Date.now();
  const attributes: Attributes = {
    ...at,
    "gen_ai.usage.input_tokens": c.tokens_in,
    "gen_ai.usage.output_tokens": c.tokens_out,
    "warren.model.via": "http",
    ...(c.finish_reason ? { "gen_ai.response.finish_reasons": [c.finish_reason] } : {}),
    ...(c.status === "error" ? { "error.type": "error" } : {}),
  };
  spanBetween(`chat ${c.model}`, attributes, end - c.latency_ms, end, contextOfRun(runId));
}

/** Whether the OTLP metrics are exported (an exec is timed only then, or when traced). */
export const metering = (): boolean => meters !== null;

/** A command in a box answered: its latency by outcome. */
export function observeExec(seconds: number, outcome: string): void {
  meters?.execs.record(seconds, { "warren.exec.outcome": outcome });
}

export interface Telemetry {
  /** Whether traces and metrics are exported. */
  traces: boolean;
  metrics: boolean;
  /** Exports what is left and stops. */
  stop(): Promise<void>;
}

/** Holders of the process's telemetry (servers in one process share it), and how to stop it. */
let running: { holders: number; stop: () => Promise<void> } | null = null;

/**
 * Starts the exporters the configuration asks for (none when no endpoint is set). The SDK is
 * the process's: a second server in the same process shares the first's until both stop.
 */
export function startTelemetry(
  c: TelemetryConfig,
  o: { version: string; redact: (text: string) => string; logger: Logger },
): Telemetry {
  const tracesAt = endpointOf(c, "traces");
  const metricsAt = endpointOf(c, "metrics");
  const off: Telemetry = { traces: false, metrics: false, stop: async () => {} };
  if (!tracesAt && !metricsAt) return off;
  const headers = parseOtlpHeaders(c.OTEL_EXPORTER_OTLP_HEADERS);
  if (!running) {
    const resource = resourceFromAttributes({
      [ATTR_SERVICE_NAME]: c.OTEL_SERVICE_NAME,
      [ATTR_SERVICE_VERSION]: o.version,
    });
    let tracer: NodeTracerProvider | null = null;
    if (tracesAt) {
      const exporter = new OTLPTraceExporter({ url: tracesAt, headers });
      tracer = new NodeTracerProvider({
        resource,
        spanProcessors: [new Redacting(o.redact), new BatchSpanProcessor(exporter)],
      });
      tracer.register();
      tracing.on = true;
    }
    let meter: MeterProvider | null = null;
    if (metricsAt) {
      const reader = new PeriodicExportingMetricReader({
        exporter: new OTLPMetricExporter({ url: metricsAt, headers }),
        exportIntervalMillis: c.OTEL_METRIC_EXPORT_INTERVAL,
      });
      meter = new MeterProvider({ resource, readers: [reader] });
      const m = meter.getMeter("warren", o.version);
      meters = {
        runs: m.createCounter("warren.runs", { description: "Runs ended, by kind and status" }),
        tokens: m.createHistogram("gen_ai.client.token.usage", {
          description: "Tokens of each model call, by token type and model",
          unit: "{token}",
        }),
        usd: m.createCounter("warren.model.cost", { description: "Dollars of model calls", unit: "USD" }),
        modelCalls: m.createHistogram("gen_ai.client.operation.duration", {
          description: "Model calls' duration",
          unit: "s",
        }),
        execs: m.createHistogram("warren.exec.duration", {
          description: "Commands in boxes, from the runtime taking them to boxd's answer",
          unit: "s",
        }),
      };
    }
    running = {
      holders: 0,
      stop: async () => {
        tracing.on = false;
        meters = null;
        await Promise.allSettled([tracer?.shutdown(), meter?.shutdown()]);
        trace.disable();
        context.disable();
        propagation.disable();
      },
    };
    o.logger.info(
      { traces: tracesAt !== null, metrics: metricsAt !== null, service: c.OTEL_SERVICE_NAME },
      "exporting OpenTelemetry over OTLP/HTTP",
    );
  }
  const held = running;
  held.holders++;
  let stopped = false;
  return {
    traces: tracesAt !== null,
    metrics: metricsAt !== null,
    stop: async () => {
      if (stopped) return;
      stopped = true;
      if (--held.holders > 0) return;
      if (running === held) running = null;
      await held.stop();
    },
  };
}
