// The model gateway's HTTP face: the Anthropic Messages API (POST /v1/messages) and the OpenAI
// Chat Completions and Responses APIs (POST /v1/chat/completions, POST /v1/responses), for a
// harness CLI in the box that takes it as its base URL with the run's workload token as its
// key. Each call is forwarded to the run's models in order (a network error, a 429 or a 5xx
// moves to the next), with the real key, which never goes back; the answer (a stream of
// server-sent events or one JSON body) passes through as it comes, its usage is read on the
// way and the call is recorded in the run's trace. A spent budget refuses the call (or, with
// on_limit finish, allows one last call without tools).
import http from "node:http";
import type { Duplex } from "node:stream";
import { addressRefusedIn } from "../net/connector.js";
import type { GatewaySession, ModelCallRecord, ModelGateway, ResolvedModel, WireProtocol } from "./types.js";

/** The formats the face speaks, by path (after an optional /v1). */
type Wire = "anthropic" | "chat" | "responses";

const WIRE_OF_PATH: Record<string, Wire> = {
  "/messages": "anthropic",
  "/chat/completions": "chat",
  "/responses": "responses",
};

const PROTOCOL_OF_WIRE: Record<Wire, WireProtocol> = {
  anthropic: "anthropic",
  chat: "openai",
  responses: "openai",
};

/** Headers of the client's request passed on to the provider (never its key). */
const PASSED_HEADERS = ["anthropic-version", "anthropic-beta", "openai-beta", "accept"];

/** Who opened a connection the face serves (a bridge from a box): the agent of its uid. */
export interface FaceCaller {
  agentId: string;
}

export interface ModelHttpOptions {
  gateway: Pick<ModelGateway, "byToken" | "price">;
  /** The agent whose run a run id is, to refuse a token used from another agent's connection. */
  ownerOf?: (runId: string) => string | undefined;
  /** Other handlers served beside the models, by path (the tool gateway's MCP at /mcp). */
  mounts?: Record<string, (req: http.IncomingMessage, res: http.ServerResponse) => Promise<void>>;
  /** Where a failure the client cannot be told about goes (no key, no body). */
  warn?: (msg: string, data: Record<string, unknown>) => void;
  /** The largest request body read, in bytes (default 32 MiB: a harness sends its whole history). */
  maxBodyBytes?: number;
}

class FaceError extends Error {
  constructor(
    readonly status: number,
    readonly kind: string,
    message: string,
  ) {
    super(message);
  }
}

/** An error in the client's own wire format. */
function errorBody(wire: Wire | null, status: number, kind: string, message: string): string {
  if (wire === "anthropic") {
    const type =
      status === 401
        ? "authentication_error"
        : status === 403
          ? "permission_error"
          : status === 404
            ? "not_found_error"
            : status === 429
              ? "rate_limit_error"
              : status >= 500
                ? "api_error"
                : "invalid_request_error";
    return JSON.stringify({ type: "error", error: { type, message } });
  }
  return JSON.stringify({ error: { message, type: kind, code: kind, param: null } });
}

/** The provider's URL for a path: a base URL with a path (…/v1) takes it as is, a bare host gets /v1. */
export function endpoint(baseUrl: string, suffix: string): string {
  const u = new URL(baseUrl);
  const base = u.pathname === "/" || u.pathname === "" ? "/v1" : u.pathname.replace(/\/+$/, "");
  u.pathname = base + suffix;
  return u.toString();
}

/** The key a client sent: `Authorization: Bearer …` or `x-api-key`. */
function tokenOf(req: http.IncomingMessage): string | null {
  const auth = req.headers.authorization;
  if (typeof auth === "string") {
    const m = /^Bearer\s+(\S+)$/i.exec(auth.trim());
    if (m?.[1]) return m[1];
  }
  const k = req.headers["x-api-key"];
  return typeof k === "string" && k.length > 0 ? k : null;
}

async function readBody(req: http.IncomingMessage, max: number): Promise<unknown> {
  const chunks: Buffer[] = [];
  let n = 0;
  for await (const c of req as AsyncIterable<Buffer>) {
    n += c.length;
    if (n > max) throw new FaceError(413, "request_too_large", `the request body is over ${max} bytes`);
    chunks.push(c);
  }
  let v: unknown;
  try {
    v = JSON.parse(Buffer.concat(chunks).toString("utf8"));
  } catch {
    throw new FaceError(400, "invalid_request_error", "the request body is not JSON");
  }
  if (!v || typeof v !== "object" || Array.isArray(v))
    throw new FaceError(400, "invalid_request_error", "the request body is not a JSON object");
  return v;
}

type J = Record<string, unknown>;

/** A field of a parsed JSON value down a path, or undefined. */
function at(v: unknown, ...path: (string | number)[]): unknown {
  let cur = v;
  for (const k of path) {
    if (cur === null || typeof cur !== "object") return undefined;
    cur = (cur as Record<string | number, unknown>)[k];
  }
  return cur;
}
const str = (v: unknown): string | null => (typeof v === "string" ? v : null);
const obj = (v: unknown): J | undefined =>
  v !== null && typeof v === "object" && !Array.isArray(v) ? (v as J) : undefined;

/** What a call used and how it ended, read from its answer (whole or streamed). */
export class UsageMeter {
  tokensIn = 0;
  tokensOut = 0;
  finish: string | null = null;
  #buf = "";
  #data: string[] = [];

  constructor(private readonly wire: Wire) {}

  /** One JSON answer. */
  whole(body: unknown): void {
    const b = obj(body);
    if (!b) return;
    if (this.wire === "anthropic") {
      this.#anthropicUsage(obj(b.usage));
      this.finish = str(b.stop_reason) ?? this.finish;
    } else if (this.wire === "chat") {
      this.#chatUsage(obj(b.usage));
      this.finish = str(at(b, "choices", 0, "finish_reason")) ?? this.finish;
    } else this.#response(b);
  }

  /** A piece of a stream of server-sent events. */
  stream(chunk: Buffer): void {
    this.#buf += chunk.toString("utf8");
    let i: number;
    while ((i = this.#buf.indexOf("\n")) >= 0) {
      const line = this.#buf.slice(0, i).replace(/\r$/, "");
      this.#buf = this.#buf.slice(i + 1);
      if (line === "") this.#dispatch();
      else if (line.startsWith("data:")) this.#data.push(line.slice(5).replace(/^ /, ""));
    }
  }

  end(): void {
    if (this.#buf) this.stream(Buffer.from("\n"));
    this.#dispatch();
  }

  #dispatch(): void {
    if (this.#data.length === 0) return;
    const text = this.#data.join("\n");
    this.#data = [];
    if (text === "[DONE]") return;
    let e: J | undefined;
    try {
      e = obj(JSON.parse(text));
    } catch {
      return;
    }
    if (!e) return;
    if (this.wire === "anthropic") {
      if (e.type === "message_start") {
        this.#anthropicUsage(obj(at(e, "message", "usage")));
      } else if (e.type === "message_delta") {
        this.#anthropicUsage(obj(e.usage));
        this.finish = str(at(e, "delta", "stop_reason")) ?? this.finish;
      }
    } else if (this.wire === "chat") {
      this.#chatUsage(obj(e.usage));
      const f = str(at(e, "choices", 0, "finish_reason"));
      if (f) this.finish = f;
    } else if (
      e.type === "response.completed" ||
      e.type === "response.incomplete" ||
      e.type === "response.failed"
    ) {
      this.#response(obj(e.response) ?? {});
    }
  }

  // Anthropic: input counts what was read from and written to the cache too; a stream's
  // message_delta carries the output so far (cumulative)
  #anthropicUsage(u: J | undefined): void {
    if (!u) return;
    const num = (k: string) => (typeof u[k] === "number" ? u[k] : null);
    const input = [num("input_tokens"), num("cache_creation_input_tokens"), num("cache_read_input_tokens")];
    if (input.some((x) => x !== null)) this.tokensIn = input.reduce<number>((a, x) => a + (x ?? 0), 0);
    const out = num("output_tokens");
    if (out !== null) this.tokensOut = out;
  }

  #chatUsage(u: J | undefined): void {
    if (!u) return;
    if (typeof u.prompt_tokens === "number") this.tokensIn = u.prompt_tokens;
    if (typeof u.completion_tokens === "number") this.tokensOut = u.completion_tokens;
  }

  #response(r: J): void {
    const u = obj(r.usage);
    if (u && typeof u.input_tokens === "number") this.tokensIn = u.input_tokens;
    if (u && typeof u.output_tokens === "number") this.tokensOut = u.output_tokens;
    const status = str(r.status);
    const why = str(at(r, "incomplete_details", "reason"));
    if (status) this.finish = why ? `${status}: ${why}` : status;
  }
}

/** Removes the real key from a text that may echo it (a provider's error). */
function scrub(text: string, key: string | null): string {
  return key && key.length >= 4 ? text.split(key).join("[redacted]") : text;
}

export class ModelHttpFace {
  readonly #o: ModelHttpOptions;
  readonly #server: http.Server;
  /** Sessions that made their one last call without tools (on_limit: finish). */
  readonly #finished = new WeakSet<GatewaySession>();
  /** The caller of each bridged connection. */
  readonly #callers = new WeakMap<object, FaceCaller>();

  constructor(o: ModelHttpOptions) {
    this.#o = o;
    this.#server = http.createServer(this.handle);
    // a harness keeps connections open between calls
    this.#server.keepAliveTimeout = 120_000;
  }

  /** Serves the HTTP of one connection that reached the face (a bridge from a box, from `who`). */
  serve(socket: Duplex, who?: FaceCaller): void {
    if (who) this.#callers.set(socket, who);
    this.#server.emit("connection", socket);
    // a bridged stream arrives paused: the HTTP parser reads it from now on
    socket.resume();
  }

  /** Closes the connections it serves. */
  close(): void {
    this.#server.closeAllConnections();
  }

  readonly handle = (req: http.IncomingMessage, res: http.ServerResponse): void => {
    const url = new URL(req.url ?? "/", "http://gateway");
    const path = url.pathname.replace(/^\/v1(?=\/)/, "").replace(/\/+$/, "");
    const wire = WIRE_OF_PATH[path] ?? null;
    this.#route(req, res, path, wire).catch((err: unknown) => {
      const e =
        err instanceof FaceError
          ? err
          : new FaceError(500, "api_error", "the gateway failed to serve the call; see the server's log");
      if (!(err instanceof FaceError))
        this.#o.warn?.("model gateway call failed", {
          error: err instanceof Error ? err.message : String(err),
        });
      if (!res.headersSent) {
        res.writeHead(e.status, { "content-type": "application/json" });
        res.end(errorBody(wire, e.status, e.kind, e.message));
      } else res.destroy();
    });
  };

  async #route(
    req: http.IncomingMessage,
    res: http.ServerResponse,
    path: string,
    wire: Wire | null,
  ): Promise<void> {
    const token = tokenOf(req);
    const session = token ? this.#o.gateway.byToken(token) : null;
    // a connection from a box serves only the runs of the agent that opened it
    const caller = this.#callers.get(req.socket);
    const owner = session && caller && this.#o.ownerOf ? this.#o.ownerOf(session.runId) : undefined;
    if (!session || (caller && owner !== caller.agentId))
      throw new FaceError(
        401,
        "invalid_api_key",
        "unknown or expired workload token: the gateway serves runs going on, with their own token",
      );
    const mount = this.#o.mounts?.[path];
    if (mount) return mount(req, res);
    if (path === "/models" && req.method === "GET") {
      const data = session
        .candidates()
        .map((m) => ({ id: m.ref.name, object: "model", owned_by: m.ref.provider }));
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ object: "list", data }));
      return;
    }
    if (!wire) throw new FaceError(404, "not_found", `the gateway does not serve ${path || "/"}`);
    if (req.method !== "POST") throw new FaceError(405, "invalid_request_error", `${path} takes POST`);
    const body = (await readBody(req, this.#o.maxBodyBytes ?? 32 * 1024 * 1024)) as Record<string, unknown>;
    const protocol = PROTOCOL_OF_WIRE[wire];
    const candidates = session.candidates().filter((m) => m.protocol === protocol);
    if (candidates.length === 0) {
      const have = session
        .candidates()
        .map((m) => `${m.ref.provider}:${m.ref.name}`)
        .join(", ");
      throw new FaceError(
        400,
        "invalid_request_error",
        `the run's models (${have}) do not speak the ${protocol} wire format this harness uses; give the agent a model of a provider that does`,
      );
    }
    const budget = session.budget();
    if (!budget.ok) {
      if (budget.on_limit === "stop" || this.#finished.has(session))
        throw new FaceError(
          wire === "anthropic" ? 403 : 429,
          "insufficient_quota",
          `the run's budget is spent: ${budget.used} of ${budget.max} ${budget.limit === "usd" ? "dollars" : "tokens"}`,
        );
      // on_limit finish: one last call, without tools
      this.#finished.add(session);
      delete body.tools;
      delete body.tool_choice;
    }
    const abort = new AbortController();
    res.on("close", () => {
      if (!res.writableFinished) abort.abort(new Error("the client closed the connection"));
    });
    await this.#forward(req, res, session, wire, body, candidates, abort.signal);
  }

  async #forward(
    req: http.IncomingMessage,
    res: http.ServerResponse,
    session: GatewaySession,
    wire: Wire,
    body: Record<string, unknown>,
    candidates: ResolvedModel[],
    signal: AbortSignal,
  ): Promise<void> {
    const suffix = wire === "anthropic" ? "/messages" : wire === "chat" ? "/chat/completions" : "/responses";
    let from: ModelCallRecord["fallback_from"];
    for (const [i, m] of candidates.entries()) {
      const last = i === candidates.length - 1;
      const t0 = performance.now();
      const base = {
        provider: m.ref.provider,
        model: m.ref.name,
        via: "http" as const,
        ...(from ? { fallback_from: from } : {}),
      };
      const record = (r: Partial<ModelCallRecord> & Pick<ModelCallRecord, "status">) =>
        session.record({
          ...base,
          tokens_in: 0,
          tokens_out: 0,
          latency_ms: Math.round(performance.now() - t0),
          finish_reason: null,
          ...r,
          usd: this.#o.gateway.price(m.ref.provider, m.ref.name, r.tokens_in ?? 0, r.tokens_out ?? 0),
        });
      const sent: Record<string, unknown> = { ...body, model: m.ref.name };
      // a chat stream says its usage only when asked to
      if (wire === "chat" && sent.stream === true)
        sent.stream_options = { ...(sent.stream_options as object | undefined), include_usage: true };
      const headers: Record<string, string> = { "content-type": "application/json" };
      for (const h of PASSED_HEADERS) {
        const v = req.headers[h];
        if (typeof v === "string") headers[h] = v;
      }
      if (m.protocol === "anthropic") {
        headers["anthropic-version"] ??= "2023-06-01";
        if (m.apiKey) headers["x-api-key"] = m.apiKey;
      } else if (m.apiKey) headers.authorization = `Bearer ${m.apiKey}`;

      let up: Response;
      try {
        up = await session.fetch(endpoint(m.baseUrl, suffix), {
          method: "POST",
          headers,
          body: JSON.stringify(sent),
          signal,
        });
      } catch (err) {
        const refused = addressRefusedIn(err);
        const message = signal.aborted
          ? "the client closed the connection"
          : refused
            ? `the provider's address is refused (${refused.code}): ${refused.message}`
            : `the provider could not be reached: ${scrub(err instanceof Error ? (err.cause instanceof Error ? err.cause.message : err.message) : String(err), m.apiKey)}`;
        await record({ status: "error", error: message });
        if (signal.aborted) return;
        if (last) throw new FaceError(502, "api_error", message);
        from = { provider: m.ref.provider, model: m.ref.name, reason: "provider unreachable" };
        continue;
      }
      if (!up.ok) {
        const text = scrub(await up.text().catch(() => ""), m.apiKey);
        const movable = up.status === 429 || up.status >= 500;
        await record({ status: "error", error: `${up.status}: ${text.slice(0, 500)}` });
        if (movable && !last) {
          from = {
            provider: m.ref.provider,
            model: m.ref.name,
            reason: up.status === 429 ? "429 rate limited" : `provider error ${up.status}`,
          };
          continue;
        }
        res.writeHead(up.status, { "content-type": up.headers.get("content-type") ?? "application/json" });
        res.end(text);
        return;
      }
      const type = up.headers.get("content-type") ?? "application/json";
      const streaming = type.includes("text/event-stream");
      const meter = new UsageMeter(wire);
      res.writeHead(200, {
        "content-type": type,
        ...(streaming ? { "cache-control": "no-cache" } : {}),
      });
      let failure: string | null = null;
      const whole: Buffer[] = [];
      try {
        if (up.body) {
          for await (const chunk of up.body as AsyncIterable<Uint8Array>) {
            const b = Buffer.from(chunk);
            if (streaming) meter.stream(b);
            else whole.push(b);
            if (!res.write(b)) await new Promise<void>((r) => res.once("drain", r).once("close", r));
            if (res.destroyed) throw new Error("the client closed the connection");
          }
        }
        if (streaming) meter.end();
        else {
          try {
            meter.whole(JSON.parse(Buffer.concat(whole).toString("utf8")));
          } catch {
            failure = "the provider's answer is not JSON";
          }
        }
      } catch (err) {
        failure = signal.aborted
          ? "the client closed the connection"
          : `the provider's answer broke off: ${err instanceof Error ? err.message : String(err)}`;
        if (streaming) meter.end();
      }
      res.end();
      await record({
        status: failure ? "error" : "ok",
        ...(failure ? { error: failure } : {}),
        tokens_in: meter.tokensIn,
        tokens_out: meter.tokensOut,
        finish_reason: meter.finish,
      });
      return;
    }
  }
}
