// A small client of Chromium's DevTools protocol over one WebSocket: the browser's endpoint,
// and sessions of its targets (flat mode: a session's messages carry its sessionId). What the
// browser answers is page content's doing as much as the browser's: nothing of it is believed
// beyond its shape, and every call has a time limit.
import type { Duplex } from "node:stream";
import WebSocket from "ws";

/** One DevTools session: the browser's own, or a tab's. */
export interface CdpSession {
  send<T = unknown>(method: string, params?: object): Promise<T>;
  /** Listens to an event of this session; answers the function that stops listening. */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- the event's params, as the browser sends them
  on(event: string, fn: (params: any) => void): () => void;
  close(): void;
  /** Settles once the session is gone (detached, or the connection closed). */
  closed: Promise<void>;
}

/** The longest a single command waits for its answer. */
const SEND_TIMEOUT_MS = 30_000;
/** The largest message taken from the browser (a screenshot's base64 fits). */
const MAX_MESSAGE_BYTES = 64 * 1024 * 1024;

/** A DevTools command the browser refused, or that found nothing to act on. */
export class CdpError extends Error {}

interface Pending {
  resolve: (v: unknown) => void;
  reject: (e: Error) => void;
  timer: NodeJS.Timeout;
}

/** The browser-wide connection: one WebSocket, its sessions multiplexed on it. */
export class CdpConnection {
  readonly #ws: WebSocket;
  readonly #pending = new Map<number, Pending>();
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- events' params, as the browser sends them
  readonly #listeners = new Map<string, Set<(params: any) => void>>();
  readonly #detached = new Map<string, () => void>();
  #next = 1;
  readonly closed: Promise<void>;
  /** The browser's own session (no sessionId). */
  readonly browser: CdpSession;

  private constructor(ws: WebSocket) {
    this.#ws = ws;
    this.closed = new Promise<void>((resolve) => ws.once("close", () => resolve()));
    void this.closed.then(() => {
      for (const p of this.#pending.values()) {
        clearTimeout(p.timer);
        p.reject(new CdpError("the browser's DevTools connection closed"));
      }
      this.#pending.clear();
      for (const done of this.#detached.values()) done();
      this.#detached.clear();
    });
    ws.on("message", (data: Buffer) => this.#receive(data));
    ws.on("error", () => {});
    this.browser = this.#session(undefined);
  }

  /** Opens the WebSocket at `url` over the stream `conn` (boxd's forward of the box's port). */
  static open(url: string, conn: Duplex, timeoutMs = 10_000): Promise<CdpConnection> {
    return new Promise((resolve, reject) => {
      const ws = new WebSocket(url, {
        createConnection: () => conn.resume() as never,
        maxPayload: MAX_MESSAGE_BYTES,
        perMessageDeflate: false,
        handshakeTimeout: timeoutMs,
      });
      ws.once("open", () => resolve(new CdpConnection(ws)));
      ws.once("error", (err) =>
        reject(new CdpError(`the browser's DevTools endpoint refused: ${err.message}`)),
      );
    });
  }

  /** A session of an attached target (Target.attachToTarget with flatten). */
  session(sessionId: string): CdpSession {
    return this.#session(sessionId);
  }

  close(): void {
    this.#ws.close();
  }

  get isOpen(): boolean {
    return this.#ws.readyState === WebSocket.OPEN;
  }

  #key(sessionId: string | undefined, event: string): string {
    return `${sessionId ?? ""}\n${event}`;
  }

  #session(sessionId: string | undefined): CdpSession {
    let done!: () => void;
    const closed = new Promise<void>((r) => (done = r));
    if (sessionId !== undefined) this.#detached.set(sessionId, done);
    else void this.closed.then(done);
    const offs: (() => void)[] = [];
    return {
      send: <T>(method: string, params: object = {}) => this.#send<T>(sessionId, method, params),
      on: (event, fn) => {
        const key = this.#key(sessionId, event);
        let set = this.#listeners.get(key);
        if (!set) this.#listeners.set(key, (set = new Set()));
        set.add(fn);
        const off = () => set.delete(fn);
        offs.push(off);
        return off;
      },
      close: () => {
        for (const off of offs) off();
        if (sessionId === undefined) return this.close();
        this.#detached.delete(sessionId);
        done();
        this.#send("", "Target.detachFromTarget", { sessionId }).catch(() => {});
      },
      closed,
    };
  }

  #send<T>(sessionId: string | undefined, method: string, params: object): Promise<T> {
    if (this.#ws.readyState !== WebSocket.OPEN)
      return Promise.reject(new CdpError("the browser's DevTools connection is closed"));
    const id = this.#next++;
    const msg: Record<string, unknown> = { id, method, params };
    if (sessionId) msg.sessionId = sessionId;
    return new Promise<T>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#pending.delete(id);
        reject(new CdpError(`the browser did not answer ${method} within ${SEND_TIMEOUT_MS / 1000} s`));
      }, SEND_TIMEOUT_MS);
      this.#pending.set(id, { resolve: resolve as (v: unknown) => void, reject, timer });
      this.#ws.send(JSON.stringify(msg));
    });
  }

  #receive(data: Buffer): void {
    let msg: {
      id?: unknown;
      method?: unknown;
      params?: unknown;
      result?: unknown;
      error?: unknown;
      sessionId?: unknown;
    };
    try {
      msg = JSON.parse(data.toString("utf8")) as typeof msg;
    } catch {
      return;
    }
    if (typeof msg.id === "number") {
      const p = this.#pending.get(msg.id);
      if (!p) return;
      this.#pending.delete(msg.id);
      clearTimeout(p.timer);
      const err = msg.error as { message?: unknown } | undefined;
      if (err)
        p.reject(new CdpError(typeof err.message === "string" ? err.message.slice(0, 500) : "refused"));
      else p.resolve(msg.result ?? {});
      return;
    }
    if (typeof msg.method !== "string") return;
    const sessionId = typeof msg.sessionId === "string" ? msg.sessionId : undefined;
    if (msg.method === "Target.detachedFromTarget") {
      const gone = (msg.params as { sessionId?: unknown } | undefined)?.sessionId;
      if (typeof gone === "string") {
        this.#detached.get(gone)?.();
        this.#detached.delete(gone);
      }
    }
    for (const fn of this.#listeners.get(this.#key(sessionId, msg.method)) ?? []) {
      try {
        fn(msg.params ?? {});
      } catch {
        // a listener's failure is its own
      }
    }
  }
}
