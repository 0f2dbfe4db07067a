// Server-sent events: the wire format read from a byte stream, and a stream of a conversation's
// or a run's events that reconnects after a dropped connection, resuming with Last-Event-ID so
// that no event is lost or given twice.
import { WarrenApiError } from "./errors.js";
import { pause, type RequestOptions, type Transport } from "./transport.js";

/** One message of the wire format, as the server wrote it. */
export interface SseMessage {
  /** The `id:` field, when the message had one. */
  id: string | undefined;
  /** The `event:` field; `message` when absent. */
  event: string;
  /** The `data:` lines, joined by newlines. */
  data: string;
  /** The `retry:` field (ms), when the message had one. */
  retry: number | undefined;
}

/** One event of a stream: its id (what resumes after it), its type, and what it says. */
export interface StreamEvent<T = unknown> {
  /** Given back as `after` (Last-Event-ID) to resume after this event. */
  id: string;
  /** `message`, `output`, `model_call`, `tool_call`, `approval`, `exit`, ... */
  type: string;
  /** When it happened, when the server said. */
  at: string | undefined;
  /** The run (a conversation's turn) it belongs to, when the server said. */
  run_id: string | undefined;
  data: T;
}

export interface StreamOptions extends RequestOptions {
  /** Resume after this event id (sent as Last-Event-ID); default: from the first event. */
  after?: string | undefined;
  /**
   * How many times in a row a dropped or refused connection is tried again before the stream
   * fails with a `network` error (default 8; 0: never). Every event received resets the count.
   */
  reconnects?: number;
}

/** Parses the event-stream format from `body`, yielding each complete message. */
export async function* sseMessages(body: ReadableStream<Uint8Array>): AsyncGenerator<SseMessage, void> {
  const reader = body.getReader();
  const decoder = new TextDecoder("utf-8");
  let buffered = "";
  let data: string[] = [];
  let event = "";
  let id: string | undefined;
  let retry: number | undefined;
  let done = false;
  const field = (line: string): SseMessage | undefined => {
    if (line === "") {
      const message =
        data.length > 0 ? { id, event: event || "message", data: data.join("\n"), retry } : undefined;
      data = [];
      event = "";
      retry = undefined;
      return message;
    }
    if (line.startsWith(":")) return undefined;
    const colon = line.indexOf(":");
    const name = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (name === "data") data.push(value);
    else if (name === "event") event = value;
    else if (name === "id" && !value.includes("\0")) id = value;
    else if (name === "retry" && /^\d+$/.test(value)) retry = Number(value);
    return undefined;
  };
  try {
    while (!done) {
      const chunk = await reader.read();
      done = chunk.done;
      buffered += chunk.done ? decoder.decode() : decoder.decode(chunk.value, { stream: true });
      // a line ends at CRLF, LF or CR; a CR last in the buffer may be the first half of a CRLF
      for (;;) {
        const m = /\r\n|\n|\r/.exec(buffered);
        if (!m || (m[0] === "\r" && m.index === buffered.length - 1 && !done)) break;
        const line = buffered.slice(0, m.index);
        buffered = buffered.slice(m.index + m[0].length);
        const message = field(line);
        if (message) yield message;
      }
    }
  } finally {
    // Leaving early (a consumer's break) closes the answer.
    if (!done) await reader.cancel().catch(() => undefined);
    reader.releaseLock();
  }
}

/** The event a message carries: its JSON data, with the type and id of the message when the data lacks them. */
export function streamEventOf(message: SseMessage): StreamEvent {
  let parsed: unknown;
  try {
    parsed = JSON.parse(message.data);
  } catch (err) {
    throw new WarrenApiError(
      0,
      "response.invalid",
      `an event's data is not JSON: ${message.data.slice(0, 120)}`,
      { cause: err },
    );
  }
  const o = typeof parsed === "object" && parsed !== null ? (parsed as Record<string, unknown>) : {};
  const text = (v: unknown): string | undefined =>
    typeof v === "string" ? v : typeof v === "number" ? String(v) : undefined;
  // the whole event ({id, type, at, data, ...}) or only what it says
  const whole = typeof o.type === "string" && "data" in o;
  return {
    id: message.id ?? text(o.id) ?? "",
    type: whole ? (o.type as string) : message.event,
    at: text(o.at),
    run_id: text(o.run_id),
    data: whole ? o.data : parsed,
  };
}

/** How a stream's reader knows it is over. */
export interface StreamEnd {
  /** Called with each event before it is yielded. */
  seen?: (event: StreamEvent) => void;
  /** Asked when the server ends the answer: true means the stream is over, false opens it again. */
  over?: () => boolean;
}

/**
 * Reads an event stream at `path`, yielding each event once and in order. A connection that
 * drops, or that the server ends while `over` says no, is opened again with Last-Event-ID set to
 * the last event seen, after a pause (the server's `retry:`, else a growing one). A 204 answer
 * ends the stream; an error answer other than a 503 is thrown.
 */
export async function* eventStream(
  http: Transport,
  path: string,
  opts: StreamOptions & StreamEnd,
): AsyncGenerator<StreamEvent, void> {
  let last = opts.after;
  const budget = opts.reconnects ?? 8;
  let failures = 0;
  let retryMs: number | undefined;
  for (;;) {
    let cause: unknown;
    try {
      const res = await http.send("GET", path, {
        accept: "text/event-stream",
        signal: opts.signal,
        timeoutMs: opts.timeoutMs,
        headers: last !== undefined && last !== "" ? { "last-event-id": last } : {},
      });
      if (res.status === 204 || !res.body) {
        await res.body?.cancel();
        return;
      }
      for await (const message of sseMessages(res.body)) {
        if (message.retry !== undefined) retryMs = message.retry;
        // the server's word that its side of the stream failed: taken up again after the last event
        if (message.event === "error") {
          cause = new WarrenApiError(
            0,
            "network",
            `the server ended the stream: ${message.data.slice(0, 200)}`,
          );
          break;
        }
        const event = streamEventOf(message);
        if (event.id !== "") last = event.id;
        failures = 0;
        opts.seen?.(event);
        yield event;
      }
      if (cause === undefined) {
        if (opts.over?.()) return;
        // the server ended the answer itself (an idle stream is closed after WARREN_STREAM_IDLE_S):
        // taken up again, and no failure however often it comes
        failures = 0;
      }
    } catch (err) {
      if (opts.signal?.aborted) throw err;
      if (err instanceof WarrenApiError && err.status !== 0 && err.status !== 503) throw err;
      if (err instanceof WarrenApiError && err.code === "response.invalid") throw err;
      cause = err;
    }
    failures++;
    if (failures > budget)
      throw new WarrenApiError(
        0,
        "network",
        `the event stream ${path} dropped ${failures} times in a row; is the server still running?`,
        { cause },
      );
    await pause(retryMs ?? Math.min(4000, 100 * 2 ** (failures - 1)), opts.signal);
  }
}
