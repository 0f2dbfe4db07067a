// agent.terminal: the agent's terminal over its WebSocket (POST /cli starts it; /cli/tty
// carries it). Binary frames are the terminal's bytes, text frames JSON messages.
import { errorFromAnswer, WarrenApiError } from "./errors.js";
import { seg, type RequestOptions, type Transport } from "./transport.js";
import type { TerminalMessage, TerminalReady, TerminalSignal } from "./types.js";

export interface TerminalConnectOptions {
  /** The size of a terminal this connection starts (default 80x24); send resize() after. */
  cols?: number;
  rows?: number;
  /** Runs this one command in a terminal of this connection's own instead of the shared shell. */
  argv?: readonly string[];
  /** How long to wait for the WebSocket to open, in ms (default 60000: the machine may start). */
  timeoutMs?: number;
}

/** How a terminal connection ended. */
export interface TerminalEnd {
  /** The WebSocket close code: 1000 when the terminal ended (shell exit, box stopped). */
  code: number;
  reason: string;
  /** The terminal's exit message, when it ended rather than the connection. */
  exit: Extract<TerminalMessage, { type: "exit" }> | null;
}

/**
 * The WebSocket surface used here: `ws` in Node (the SDK loads it only for a terminal), the
 * browser's own WebSocket in a page (adapted by browserSocket). Bytes are Uint8Array (a
 * Buffer is one), so the same code runs in both.
 */
interface Socket {
  readonly readyState: number;
  readonly bufferedAmount: number;
  send(data: string | Uint8Array, opts?: { binary?: boolean }): void;
  close(code?: number, reason?: string): void;
  on(event: "message", fn: (data: Uint8Array | ArrayBuffer | Uint8Array[], isBinary: boolean) => void): void;
  on(event: "close", fn: (code: number, reason: Uint8Array | string) => void): void;
  on(event: "open", fn: () => void): void;
  on(event: "error", fn: (err: Error) => void): void;
  on(event: "unexpected-response", fn: (req: { destroy(): void }, res: Answer) => void): void;
}
interface Answer {
  statusCode?: number;
  statusMessage?: string;
  on(event: "data", fn: (c: Uint8Array) => void): void;
  on(event: "end", fn: () => void): void;
}

/** The browser's WebSocket class, when the SDK runs in a page (a page has a document). */
interface BrowserWebSocket {
  readyState: number;
  bufferedAmount: number;
  binaryType: string;
  send(data: string | Uint8Array): void;
  close(code?: number, reason?: string): void;
  addEventListener(type: string, fn: (e: { data?: unknown; code?: number; reason?: string }) => void): void;
}
type BrowserWebSocketClass = new (url: string) => BrowserWebSocket;

function pageWebSocket(): BrowserWebSocketClass | undefined {
  const g = globalThis as { document?: unknown; WebSocket?: BrowserWebSocketClass };
  return g.document !== undefined ? g.WebSocket : undefined;
}

/**
 * A page's WebSocket as a Socket. The page sends what the browser sends (its cookies, the
 * proxy's identity), not the client's headers; a refusal before the upgrade is an error
 * without its answer (the browser does not show it): start() reports those first.
 */
function browserSocket(Ws: BrowserWebSocketClass, url: string): Socket {
  const ws = new Ws(url);
  ws.binaryType = "arraybuffer";
  const on = (event: string, fn: (...args: never[]) => void): void => {
    const f = fn as (...args: unknown[]) => void;
    switch (event) {
      case "message":
        ws.addEventListener("message", (e) =>
          typeof e.data === "string"
            ? f(utf8.encode(e.data), false)
            : f(new Uint8Array(e.data as ArrayBuffer), true),
        );
        return;
      case "close":
        ws.addEventListener("close", (e) => f(e.code ?? 1006, e.reason ?? ""));
        return;
      case "open":
        ws.addEventListener("open", () => f());
        return;
      case "error":
        ws.addEventListener("error", () => f(new Error("the WebSocket failed before it opened")));
        return;
      default:
        return; // unexpected-response: the browser never tells
    }
  };
  return {
    get readyState() {
      return ws.readyState;
    },
    get bufferedAmount() {
      return ws.bufferedAmount;
    },
    send: (data) => ws.send(data),
    close: (code, reason) => ws.close(code, reason),
    on: on,
  };
}

const utf8 = new TextEncoder();
const text = (b: Uint8Array | string): string => (typeof b === "string" ? b : new TextDecoder().decode(b));

function bytesOf(raw: Uint8Array | ArrayBuffer | Uint8Array[]): Uint8Array {
  if (raw instanceof Uint8Array) return raw;
  if (!Array.isArray(raw)) return new Uint8Array(raw);
  const out = new Uint8Array(raw.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of raw) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

const OPEN = 1;

/** One open connection to an agent's terminal. */
export class TerminalConnection {
  readonly #ws: Socket;
  readonly #data: ((chunk: Uint8Array) => void)[] = [];
  readonly #messages: ((m: TerminalMessage) => void)[] = [];
  #exit: TerminalEnd["exit"] = null;
  /** Settles when the connection closes, with why. */
  readonly closed: Promise<TerminalEnd>;

  constructor(ws: Socket) {
    this.#ws = ws;
    this.closed = new Promise((resolve) =>
      ws.on("close", (code, reason) => resolve({ code, reason: text(reason), exit: this.#exit })),
    );
    ws.on("message", (raw, isBinary) => {
      const b = bytesOf(raw);
      if (isBinary) {
        for (const fn of this.#data) fn(b);
        return;
      }
      let m: TerminalMessage;
      try {
        m = JSON.parse(text(b)) as TerminalMessage;
      } catch {
        return;
      }
      if (m.type === "exit") this.#exit = m;
      for (const fn of this.#messages) fn(m);
    });
  }

  /** The terminal's output, as it arrives (first the recent screen, on attaching). */
  onData(fn: (chunk: Uint8Array) => void): void {
    this.#data.push(fn);
  }
  /** The server's JSON messages: attached, resize, exit, error. */
  onMessage(fn: (m: TerminalMessage) => void): void {
    this.#messages.push(fn);
  }
  /** Keys for the terminal (dropped for a viewer). */
  write(data: string | Uint8Array): void {
    if (this.#ws.readyState !== OPEN) return;
    const bytes = typeof data === "string" ? utf8.encode(data) : data;
    // below the server's 64 KiB message limit
    for (let at = 0; at < bytes.length; at += 16 * 1024)
      this.#ws.send(bytes.subarray(at, at + 16 * 1024), { binary: true });
  }
  resize(cols: number, rows: number): void {
    if (this.#ws.readyState === OPEN) this.#ws.send(JSON.stringify({ type: "resize", cols, rows }));
  }
  signal(signal: TerminalSignal): void {
    if (this.#ws.readyState === OPEN) this.#ws.send(JSON.stringify({ type: "signal", signal }));
  }
  /** Bytes written and not yet sent. */
  get buffered(): number {
    return this.#ws.bufferedAmount;
  }
  /** Leaves the terminal (the shared shell keeps running). */
  close(): void {
    this.#ws.close(1000, "closed by the client");
  }
}

export class AgentTerminal {
  constructor(
    private readonly http: Transport,
    private readonly agentId: string,
  ) {}

  /** Starts the agent's shared shell (and its machine) if it is not running. */
  start(opts: RequestOptions = {}): Promise<TerminalReady> {
    return this.http.json("POST", `/api/agents/${seg(this.agentId)}/cli`, opts);
  }

  /** The WebSocket URL of the terminal. */
  url(opts: Pick<TerminalConnectOptions, "cols" | "rows" | "argv"> = {}): string {
    const q = new URLSearchParams();
    if (opts.cols !== undefined) q.set("cols", String(opts.cols));
    if (opts.rows !== undefined) q.set("rows", String(opts.rows));
    for (const a of opts.argv ?? []) q.append("argv", a);
    const qs = q.toString();
    return `${this.http.baseUrl.replace(/^http/, "ws")}/api/agents/${seg(this.agentId)}/cli/tty${qs ? `?${qs}` : ""}`;
  }

  /**
   * Opens the terminal's WebSocket; a refusal (unknown agent, a role that may not, another
   * origin) rejects with its WarrenApiError. Messages arriving before `onData`/`onMessage`
   * are given are not kept: attach the callbacks right away.
   */
  async connect(opts: TerminalConnectOptions = {}): Promise<TerminalConnection> {
    const Page = pageWebSocket();
    let ws: Socket;
    if (Page) ws = browserSocket(Page, this.url(opts));
    else {
      // Node: `ws`, loaded only here (and kept out of a page's bundle)
      const name = "ws";
      const { WebSocket } = (await import(/* @vite-ignore */ name)) as {
        WebSocket: new (url: string, o: { headers: Record<string, string> }) => unknown;
      };
      ws = new WebSocket(this.url(opts), { headers: this.http.commonHeaders }) as Socket;
    }
    const timeoutMs = opts.timeoutMs ?? 60_000;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        ws.close();
        reject(new WarrenApiError(0, "timeout", `the terminal did not open within ${timeoutMs} ms`));
      }, timeoutMs);
      const conn = new TerminalConnection(ws);
      ws.on("open", () => {
        clearTimeout(timer);
        resolve(conn);
      });
      ws.on("unexpected-response", (req, res) => {
        let body = "";
        res.on("data", (c) => (body += text(c)));
        res.on("end", () => {
          req.destroy();
          clearTimeout(timer);
          reject(errorFromAnswer(res.statusCode ?? 0, res.statusMessage ?? "", body));
        });
      });
      ws.on("error", (err) => {
        clearTimeout(timer);
        reject(
          new WarrenApiError(
            0,
            "network",
            `could not open the terminal at ${this.http.baseUrl}: ${err.message}`,
            {
              cause: err,
            },
          ),
        );
      });
    });
  }
}
