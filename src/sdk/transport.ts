// HTTP to one warren server: URLs, headers, JSON, and every failure turned into a WarrenApiError.
import { errorFromAnswer, WarrenApiError } from "./errors.js";

export interface WarrenClientOptions {
  /** Where the server listens, e.g. `http://127.0.0.1:8080`. */
  baseUrl: string;
  /** Sent with every request, e.g. `{"x-forwarded-email": "me@example.com"}` behind a trusted proxy. */
  headers?: Record<string, string>;
  /** Default: the global `fetch`. */
  fetch?: typeof fetch;
  /** How long a call waits for the server's answer to begin, in ms (default 60000; 0: no limit). */
  timeoutMs?: number;
  /**
   * How many times an idempotent call (GET, PUT, DELETE) is tried again after a connection
   * error or a 503, with a growing pause between tries (default 2; 0: never).
   */
  retries?: number;
}

/** Options every call takes. */
export interface RequestOptions {
  /** Aborting it abandons the request (and, for exec, stops the command). */
  signal?: AbortSignal;
  /** This call's own wait for the answer to begin, in ms (0: no limit); default the client's. */
  timeoutMs?: number;
}

export const DEFAULT_TIMEOUT_MS = 60_000;
const DEFAULT_RETRIES = 2;
const IDEMPOTENT = new Set(["GET", "HEAD", "PUT", "DELETE", "OPTIONS"]);

/** The pause before try `attempt` (1, 2, ...): 250 ms doubling, up to 4 s, with jitter; or what Retry-After asks, up to 10 s. */
export function backoffMs(attempt: number, retryAfter: string | null = null, random = Math.random): number {
  const asked = retryAfter !== null && /^\d+$/.test(retryAfter.trim()) ? Number(retryAfter) * 1000 : NaN;
  if (Number.isFinite(asked)) return Math.min(asked, 10_000);
  const base = Math.min(4000, 250 * 2 ** (attempt - 1));
  return Math.round(base / 2 + (random() * base) / 2);
}

export type Query = Record<string, string | number | undefined>;

export interface Call extends RequestOptions {
  query?: Query | undefined;
  /** Sent as JSON. */
  json?: unknown;
  /** Sent as is, `application/octet-stream`. */
  bytes?: Uint8Array;
  accept?: string;
  /** This request's own headers, besides the client's. */
  headers?: Record<string, string>;
}

/**
 * Encodes one path segment (an id) so that it cannot change the route. `""`, `.` and `..` would
 * name another route whatever their encoding, so they are refused before any request.
 */
export function seg(value: string): string {
  if (value === "" || value === "." || value === "..") {
    throw new WarrenApiError(
      0,
      "request.invalid",
      `${JSON.stringify(value)} is not an id; give one such as agt_...`,
    );
  }
  return encodeURIComponent(value);
}

/**
 * Encodes a home path for a files URL, segment by segment with the slashes kept. A path with `.`
 * or `..` segments goes as one encoded segment instead, because URL parsing would otherwise
 * resolve them before the request leaves (and `..` could reach another route); the server
 * decodes the path and applies its own rules to it.
 */
export function homePath(path: string): string {
  const parts = path.split("/");
  if (parts.some((p) => p === "." || p === "..")) return encodeURIComponent(path);
  return parts.map((p) => encodeURIComponent(p)).join("/");
}

export class Transport {
  readonly baseUrl: string;
  private readonly headers: Record<string, string>;
  private readonly fetchImpl: typeof fetch;
  private readonly timeoutMs: number;
  private readonly retries: number;

  constructor(options: WarrenClientOptions) {
    let url: URL;
    try {
      url = new URL(options.baseUrl);
    } catch {
      throw new TypeError(
        `baseUrl must be an absolute http(s) URL such as http://127.0.0.1:8080, not ${JSON.stringify(options.baseUrl)}`,
      );
    }
    if (url.protocol !== "http:" && url.protocol !== "https:") {
      throw new TypeError(`baseUrl must be an http:// or https:// URL, not ${url.protocol}`);
    }
    this.baseUrl = url.href.replace(/\/+$/, "");
    this.headers = { ...options.headers };
    this.fetchImpl = options.fetch ?? globalThis.fetch.bind(globalThis);
    this.timeoutMs = nonNegative(options.timeoutMs, "timeoutMs") ?? DEFAULT_TIMEOUT_MS;
    this.retries = nonNegative(options.retries, "retries") ?? DEFAULT_RETRIES;
  }

  /** The headers every request carries (--header, a trusted proxy's identity). */
  get commonHeaders(): Record<string, string> {
    return { ...this.headers };
  }

  url(path: string, query?: Query): string {
    const params = new URLSearchParams();
    for (const [k, v] of Object.entries(query ?? {})) if (v !== undefined) params.set(k, String(v));
    const qs = params.toString();
    return `${this.baseUrl}${path}${qs ? `?${qs}` : ""}`;
  }

  /**
   * Sends a request; answers the response when it is 2xx, throws a WarrenApiError otherwise.
   * An idempotent call is tried again after a connection error or a 503; the timeout covers
   * the wait for the answer to begin (a stream may then run as long as it runs).
   */
  async send(method: string, path: string, call: Call = {}): Promise<Response> {
    const headers: Record<string, string> = {
      accept: call.accept ?? "application/json",
      ...this.headers,
      ...call.headers,
    };
    let body: string | Uint8Array | undefined;
    if (call.json !== undefined) {
      headers["content-type"] = "application/json";
      body = JSON.stringify(call.json);
    } else if (call.bytes !== undefined) {
      headers["content-type"] = "application/octet-stream";
      body = call.bytes;
    }
    const timeoutMs = nonNegative(call.timeoutMs, "timeoutMs") ?? this.timeoutMs;
    const tries = IDEMPOTENT.has(method) ? this.retries + 1 : 1;
    for (let attempt = 1; ; attempt++) {
      const timer = new AbortController();
      const clock = timeoutMs > 0 ? setTimeout(() => timer.abort(), timeoutMs) : undefined;
      const signal = call.signal ? AbortSignal.any([call.signal, timer.signal]) : timer.signal;
      let res: Response;
      try {
        res = await this.fetchImpl(this.url(path, call.query), {
          method,
          headers,
          body: body as RequestInit["body"],
          signal,
        });
      } catch (err) {
        if (call.signal?.aborted) throw err;
        if (timer.signal.aborted) {
          throw new WarrenApiError(
            0,
            "timeout",
            `${method} ${path} had no answer from ${this.baseUrl} within ${timeoutMs} ms`,
            { cause: err },
          );
        }
        if (attempt < tries) {
          await pause(backoffMs(attempt), call.signal);
          continue;
        }
        throw new WarrenApiError(
          0,
          "network",
          `could not reach ${this.baseUrl} (${describe(err)}); is \`warren serve\` running there?`,
          { cause: err },
        );
      } finally {
        clearTimeout(clock);
      }
      if (res.ok) return res;
      if (res.status === 503 && attempt < tries) {
        await res.body?.cancel();
        await pause(backoffMs(attempt, res.headers.get("retry-after")), call.signal);
        continue;
      }
      const text = await res.text().catch(() => "");
      throw errorFromAnswer(res.status, res.statusText, text);
    }
  }

  async json<T>(method: string, path: string, call: Call = {}): Promise<T> {
    const res = await this.send(method, path, call);
    const text = await res.text();
    try {
      return JSON.parse(text) as T;
    } catch (err) {
      throw new WarrenApiError(
        res.status,
        "response.invalid",
        `${method} ${path} answered something that is not JSON`,
        { cause: err },
      );
    }
  }

  async empty(method: string, path: string, call: Call = {}): Promise<void> {
    const res = await this.send(method, path, call);
    await res.body?.cancel();
  }

  async bytes(method: string, path: string, call: Call = {}): Promise<Uint8Array> {
    const res = await this.send(method, path, { accept: "*/*", ...call });
    return new Uint8Array(await res.arrayBuffer());
  }
}

function describe(err: unknown): string {
  const cause = err instanceof Error && err.cause instanceof Error ? err.cause : err;
  if (cause && typeof cause === "object" && "code" in cause && typeof cause.code === "string")
    return cause.code;
  return cause instanceof Error ? cause.message : String(cause);
}

function nonNegative(value: number | undefined, name: string): number | undefined {
  if (value === undefined) return undefined;
  if (!Number.isFinite(value) || value < 0) throw new TypeError(`${name} must be a number of 0 or more`);
  return value;
}

export function pause(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason as Error);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason as Error);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}
