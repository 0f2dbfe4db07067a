// Server-sent events of stored events (a run's trace, a conversation's stream): each event
// with its stored id as `id:`, from the one after `Last-Event-ID` (or `?after=`), then live
// as new ones are stored. Ids come from the store and are given in commit order, so a stream
// taken up again after a dropped connection or a restart of the server misses nothing and
// repeats nothing. Each stream holds a slot of the server's stream budget (./streams.ts) while
// open, and one that goes WARREN_STREAM_IDLE_S with no event is closed after a last comment
// (a client takes it up again with Last-Event-ID, as after any drop).
import { PassThrough } from "node:stream";
import type { FastifyReply, FastifyRequest } from "fastify";
import type { StreamBudget } from "./streams.js";

export interface StoredEvent {
  id: number;
}

export interface EventSource<E extends StoredEvent> {
  /** Events after `after`, in order, at most `limit`. */
  read(after: number, limit: number): Promise<E[]>;
  /** Calls `fn` when a new event may be there; answers the function that stops. */
  watch(fn: () => void): () => void;
  /** Whether nothing more will come (an ended run), asked once all is read. */
  done?(): Promise<boolean>;
}

const PAGE = 500;
const KEEPALIVE_MS = 15_000;

/** The streams being served, ended all at once when the server stops, and the budget they draw on. */
export class EventStreams {
  readonly #ends = new Set<() => void>();
  readonly budget: StreamBudget;

  constructor(budget: StreamBudget) {
    this.budget = budget;
  }

  add(end: () => void): () => void {
    this.#ends.add(end);
    return () => this.#ends.delete(end);
  }

  close(): void {
    for (const end of [...this.#ends]) end();
    this.#ends.clear();
  }
}

/** Whether a request asks for the event stream. */
export const wantsEventStream = (req: FastifyRequest): boolean =>
  (req.headers.accept ?? "").includes("text/event-stream");

/** Where a stream starts: after the Last-Event-ID header's id, else after `?after=`, else from the start. */
export function resumeAfter(req: FastifyRequest, after: number | undefined): number {
  const h = req.headers["last-event-id"];
  const v = Array.isArray(h) ? h[0] : h;
  if (v !== undefined && /^\d{1,15}$/.test(v.trim())) return Number(v.trim());
  return after ?? 0;
}

/** Serves `source` as server-sent events on `reply` until the client leaves, it is done, or the server stops. */
export function serveEvents<E extends StoredEvent>(
  streams: EventStreams,
  req: FastifyRequest,
  reply: FastifyReply,
  source: EventSource<E>,
  after: number,
  shape: (e: E) => { type: string; body: unknown },
): FastifyReply {
  // refused (429 stream.too_many) before anything is sent
  const release = streams.budget.acquire(req.identity);
  const idleMs = streams.budget.limits.idleMs;
  const out = new PassThrough();
  reply
    .type("text/event-stream; charset=utf-8")
    .header("cache-control", "no-store")
    .header("x-accel-buffering", "no");
  void reply.send(out);
  let ended = false;
  let pending = false;
  let wake: (() => void) | null = null;
  const poke = () => {
    pending = true;
    wake?.();
  };
  const end = () => {
    if (ended) return;
    ended = true;
    wake?.();
  };
  const unwatch = source.watch(poke);
  const unlist = streams.add(end);
  reply.raw.on("close", end);
  const loop = async () => {
    let cursor = after;
    let lastEventAt = Date.now();
    out.write("retry: 1000\n\n");
    while (!ended) {
      pending = false;
      const rows = await source.read(cursor, PAGE);
      for (const r of rows) {
        const { type, body } = shape(r);
        out.write(`id: ${r.id}\nevent: ${type}\ndata: ${JSON.stringify(body)}\n\n`);
        cursor = r.id;
        lastEventAt = Date.now();
      }
      if (rows.length === PAGE || pending) continue;
      if (source.done && (await source.done())) {
        // what was stored before it ended is all read once more
        if ((await source.read(cursor, 1)).length > 0) continue;
        break;
      }
      const idleLeft = lastEventAt + idleMs - Date.now();
      if (idleLeft <= 0) {
        out.write(
          `: idle: no event for ${Math.round(idleMs / 1000)} s, closing; take it up again with Last-Event-ID\n\n`,
        );
        break;
      }
      let timer: NodeJS.Timeout | undefined;
      const woke = await new Promise<boolean>((resolve) => {
        wake = () => resolve(true);
        timer = setTimeout(() => resolve(false), Math.min(KEEPALIVE_MS, idleLeft));
        if (pending || ended) resolve(true);
      });
      wake = null;
      clearTimeout(timer);
      if (!woke && !ended && lastEventAt + idleMs > Date.now()) out.write(": keep-alive\n\n");
    }
  };
  loop()
    .catch((err: unknown) => {
      req.log.error({ err }, "an event stream failed");
      out.write(
        `event: error\ndata: ${JSON.stringify({ message: "the stream failed; take it up again" })}\n\n`,
      );
    })
    .finally(() => {
      unwatch();
      unlist();
      release();
      out.end();
    });
  return reply;
}
