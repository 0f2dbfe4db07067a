// The budget of long-lived answers: every server-sent event stream and every WebSocket holds
// one slot from here while it is open, so that no identity (and no crowd of them) can hold
// more of the server's memory and descriptors than the caps allow. Past a cap the answer is
// 429 stream.too_many with Retry-After. The one place that counts: event streams take their
// slot in serveEvents (./sse.ts), WebSockets in the upgrade's preHandler (./route.ts).
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
