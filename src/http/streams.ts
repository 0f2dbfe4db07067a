// The budget of long-lived answers: every server-sent event stream, every WebSocket (a
// terminal's, a preview's) and every streamed exec (NDJSON) holds one slot from here while it
// is open, so that no identity (and no crowd of them) can hold more of the server's memory and
// descriptors than the caps allow. Past a cap the answer is 429 stream.too_many with
// Retry-After. Where they take it: event streams in serveEvents (./sse.ts), the API's
// WebSockets in the upgrade's preHandler (./route.ts), a preview's in its upgrade
// (../preview), a streamed exec before its answer starts (./routes/exec.ts). Event streams
// and WebSockets idle for the bound are closed (a WebSocket: nothing sent either way).
import type { Identity } from "../access/index.js";
import type { Config } from "../config/index.js";
import { WarrenError } from "../errors.js";

/** Seconds a refused client is asked to wait before it tries again (Retry-After). */
export const STREAM_RETRY_AFTER_S = 5;

export interface StreamLimits {
  /** Open streams one identity may hold. */
  perIdentity: number;
  /** Open streams the server holds. */
  max: number;
  /** Milliseconds an event stream may go with no event before it is closed. */
  idleMs: number;
}

export const streamLimitsOf = (config: Config): StreamLimits => ({
  perIdentity: config.WARREN_STREAMS_PER_IDENTITY,
  max: config.WARREN_STREAMS_MAX,
  idleMs: config.WARREN_STREAM_IDLE_S * 1000,
});

export class StreamBudget {
  readonly limits: StreamLimits;
  #open = 0;
  readonly #byIdentity = new Map<string, number>();

  constructor(limits: StreamLimits) {
    this.limits = limits;
  }

  /**
   * Takes a slot for `who`, or throws 429 stream.too_many (details.retryAfterS). Answers the
   * function that gives it back; calling that more than once gives it back once.
   */
  acquire(who: Identity | null): () => void {
    const key = who?.userId ?? "";
    const mine = this.#byIdentity.get(key) ?? 0;
    if (mine >= this.limits.perIdentity)
      throw new WarrenError(
        "stream.too_many",
        `you have ${mine} event streams or WebSockets open, the most one identity may hold (WARREN_STREAMS_PER_IDENTITY); close one and try again`,
        { retryAfterS: STREAM_RETRY_AFTER_S },
      );
    if (this.#open >= this.limits.max)
      throw new WarrenError(
        "stream.too_many",
        `the server has ${this.#open} event streams and WebSockets open, the most it holds (WARREN_STREAMS_MAX); try again later`,
        { retryAfterS: STREAM_RETRY_AFTER_S },
      );
    this.#open++;
    this.#byIdentity.set(key, mine + 1);
    let held = true;
    return () => {
      if (!held) return;
      held = false;
      this.#open--;
      const left = (this.#byIdentity.get(key) ?? 1) - 1;
      if (left > 0) this.#byIdentity.set(key, left);
      else this.#byIdentity.delete(key);
    };
  }
}

/** A connection's traffic counters (a net.Socket's). */
interface Counted {
  bytesRead: number;
  bytesWritten: number;
  once(event: "close", fn: () => void): unknown;
}

/**
 * Calls `close` once nothing went either way on `sock` for `idleMs` (a WebSocket's idle bound,
 * as an event stream's); the watch ends with the connection. Answers the function that stops it.
 */
export function closeWhenIdle(sock: Counted, idleMs: number, close: () => void): () => void {
  let seen = -1;
  let since = Date.now();
  const timer = setInterval(
    () => {
      const now = sock.bytesRead + sock.bytesWritten;
      if (now !== seen) {
        seen = now;
        since = Date.now();
      } else if (Date.now() - since >= idleMs) {
        clearInterval(timer);
        close();
      }
    },
    Math.max(50, Math.min(idleMs / 4, 15_000)),
  );
  timer.unref();
  const stop = () => clearInterval(timer);
  sock.once("close", stop);
  return stop;
}
