// A run's trace as a readable timeline: each event as the time since the run's start, a short
// name and one line of what it says, and the run's summary. `warren runs trace` prints it; the
// app's run page draws it.
import type { Run } from "./types.js";

/** An event of a run's trace, as the API and the event stream carry it. */
export interface TraceEvent {
  id: number;
  at: string;
  type: string;
  data: unknown;
}

/** One line of the timeline. */
export interface TraceEntry {
  id: number;
  /** The event's own type. */
  type: string;
  /** Seconds since the first event. */
  offset_s: number;
  /** The event's short name (a model call is "model", a tool call "tool"). */
  name: string;
  /** What it says, on one line. */
  text: string;
}

const cut = (text: string, max: number): string =>
  text.length <= max ? text : `${text.slice(0, Math.max(0, max - 1))}…`;
const oneLine = (v: unknown, max = 100): string =>
  cut((typeof v === "string" ? v : JSON.stringify(v ?? null)).replace(/\s+/g, " ").trim(), max);
const str = (v: unknown): string =>
  typeof v === "string" || typeof v === "number" || typeof v === "boolean"
    ? String(v)
    : JSON.stringify(v ?? null);
const num = (v: unknown): number => (typeof v === "number" ? Math.round(v * 1e6) / 1e6 : 0);
const ms = (v: unknown): number => Math.round(num(v));
const dollars = (v: unknown): string => `$${num(v).toFixed(6)}`;

/** One event of a run's trace as a line of its timeline (without the time). */
function traceLine(type: string, d: Record<string, unknown>): string {
  switch (type) {
    case "started":
      return d.kind
        ? `${str(d.kind)}, model ${str(d.model)}, spec v${str(d.spec_version ?? "-")}, ${num(d.input_bytes)} B in, limit ${num(d.timeout_s)} s`
        : `${oneLine(d.argv)}, uid ${str(d.uid)}, ${num(d.input_bytes)} B in, limit ${num(d.timeout_s)} s`;
    case "models":
      return Array.isArray(d.candidates) ? (d.candidates as unknown[]).map(str).join(", then ") : oneLine(d);
    case "prompt":
      return `system prompt ${typeof d.system === "string" ? d.system.length : 0} chars; user: ${oneLine(d.user, 80)}`;
    case "model_call": {
      const from = d.fallback_from as { provider: string; model: string; reason: string } | undefined;
      const head = `${str(d.provider)}:${str(d.model)} ${str(d.status)}`;
      const fb = from ? `  (fallback from ${from.provider}:${from.model}: ${from.reason})` : "";
      if (d.status !== "ok") return `${head}  ${ms(d.latency_ms)} ms  ${oneLine(d.error, 80)}${fb}`;
      return `${head}  ${num(d.tokens_in)}→${num(d.tokens_out)} tok  ${dollars(d.usd)}  ${ms(d.latency_ms)} ms  ${str(d.finish_reason)}${fb}`;
    }
    case "completion": {
      const calls = Array.isArray(d.tool_calls) ? (d.tool_calls as { name: string; input: unknown }[]) : [];
      const asks = calls.map((c) => `${c.name} ${oneLine(c.input, 60)}`).join("; ");
      return `step ${num(d.step)}: ${d.text ? oneLine(d.text, 80) : "(no text)"}${asks ? ` → ${asks}` : ""}`;
    }
    case "tool_call": {
      const policies =
        Array.isArray(d.policies) && d.policies.length ? (d.policies as string[]).join(",") : "no policy";
      const err = d.error ? `  error: ${oneLine(d.error, 60)}` : "";
      return `${str(d.tool)} ${str(d.decision).toUpperCase()} (${policies})  ${oneLine(d.arguments, 60)}  ${num(d.result_bytes)} B  ${ms(d.duration_ms)} ms${err}`;
    }
    case "budget":
      return `${str(d.limit)} ${str(d.used)} of ${str(d.max)} reached: ${str(d.on_limit)}`;
    case "output":
      return `${str(d.stream)}: ${oneLine(d.data)}`;
    case "exit":
      return d.status ? `${str(d.status)}${d.reason ? ` (${str(d.reason)})` : ""}` : oneLine(d);
    default:
      return oneLine(d);
  }
}

const NAMES: Record<string, string> = { model_call: "model", tool_call: "tool" };

/** A run's events as the lines of its timeline, in their order. */
export function traceEntries(events: readonly TraceEvent[]): TraceEntry[] {
  const t0 = events[0] ? Date.parse(events[0].at) : 0;
  return events.map((e) => ({
    id: e.id,
    type: e.type,
    offset_s: (Date.parse(e.at) - t0) / 1000,
    name: NAMES[e.type] ?? e.type,
    text: traceLine(e.type, (e.data ?? {}) as Record<string, unknown>),
  }));
}

/** The run's end in one line: its status, and what it used when it has a usage. */
export function traceSummary(run: Pick<Run, "status" | "usage">): string {
  const u = run.usage;
  return u
    ? `${run.status}: ${u.steps} steps, ${u.tool_calls} tool calls (${u.tool_refusals} refused), ${u.tokens_in}→${u.tokens_out} tokens, ${dollars(u.usd)}`
    : run.status;
}
