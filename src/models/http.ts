// The model gateway's HTTP face: the Anthropic Messages API (POST /v1/messages) and the OpenAI
// Chat Completions and Responses APIs (POST /v1/chat/completions, POST /v1/responses), for a
// harness CLI in the box that takes it as its base URL with the run's workload token as its
// key. Each call is forwarded to the run's models in order (a network error, a 429 or a 5xx
// moves to the next), with the real key, which never goes back; the answer (a stream of
// server-sent events or one JSON body) passes through as it comes with every model key of the
// run cut out, its usage is read on the way (to the answer's end, whether or not the client
// stays) and the call is recorded in the run's trace. Each call's maximum cost is reserved
// against the run's budget before it is sent; one that would cross it is refused (or, with
// on_limit finish, becomes one last call without tools).
import http from "node:http";
import type { ModelCallRecord } from "../contract/runs.js";
import type { Duplex } from "node:stream";
import type { GatewaySession, ModelGateway, ResolvedModel, WireProtocol } from "./types.js";
import type { BudgetRefusal } from "../budgets/types.js";
import { addressRefusedIn } from "../net/connector.js";
import { budgetName } from "./fallback.js";
import { UsageMeter, type J, type Wire } from "./usage-meter.js";

/** The formats the face speaks, by path (after an optional /v1). */

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

/** A spent budget, in the client's terms (Anthropic's CLIs retry a 429, so they get 403). */
function spent(wire: Wire, used: number, max: number, limit: "tokens" | "usd"): FaceError {
  return new FaceError(
    wire === "anthropic" ? 403 : 429,
    "insufficient_quota",
    `the run's budget is spent: ${used} of ${max} ${limit === "usd" ? "dollars" : "tokens"}`,
  );
}

/** A call refused before it was sent: its maximum would cross what is left of the budget. */
function refused(wire: Wire, r: BudgetRefusal, tokensIn: number, tokensOut: number): FaceError {
  const unit = r.limit === "usd" ? "dollars" : "tokens";
  return new FaceError(
    wire === "anthropic" ? 403 : 429,
    "insufficient_quota",
    `${budgetName(r)} cannot hold this call: it may use up to ${r.call_max} ${unit} (${tokensIn} tokens in, estimated, and up to ${tokensOut} out), and ${r.used} of ${r.max} ${unit} are used and ${r.reserved} held by calls under way; ${r.scope ? "an owner or admin raises the organisation's budgets, or the period ends" : "ask for fewer output tokens or raise the agent's limits"}`,
  );
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

/** A call's input, estimated before it is sent: its bytes / 4. */
const inputEstimate = (body: unknown): number => Math.ceil(Buffer.byteLength(JSON.stringify(body)) / 4);

/** The field a wire format gives a call's maximum output tokens in, and its value (if given). */
function outputLimit(wire: Wire, body: J, provider: string): { field: string; value: number | undefined } {
  const num = (v: unknown) => (typeof v === "number" && Number.isFinite(v) && v >= 0 ? v : undefined);
  if (wire === "anthropic") return { field: "max_tokens", value: num(body.max_tokens) };
  if (wire === "responses") return { field: "max_output_tokens", value: num(body.max_output_tokens) };
  const given = num(body.max_completion_tokens) ?? num(body.max_tokens);
  const field =
    body.max_completion_tokens !== undefined
      ? "max_completion_tokens"
      : body.max_tokens !== undefined
        ? "max_tokens"
        : provider === "openai"
          ? "max_completion_tokens"
          : "max_tokens";
  return { field, value: given };
}

/** Removes the real key from a text that may echo it (a provider's error). */
function scrub(text: string, key: string | null): string {
  return key && key.length >= 4 ? text.split(key).join("[redacted]") : text;
}

export class ModelHttpFace {
  readonly #o: ModelHttpOptions;
  readonly #server: http.Server;
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
    // the upstream answer is read to its end whether or not the client stays (what it costs is
    // counted): a client's hang-up never aborts the call
    await this.#forward(req, res, session, wire, body, candidates);
  }

  async #forward(
    req: http.IncomingMessage,
    res: http.ServerResponse,
    session: GatewaySession,
    wire: Wire,
    body: Record<string, unknown>,
    candidates: ResolvedModel[],
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
      // the budget (Session.admit): the call's maximum cost (its input's estimate and its max
      // output tokens) is reserved before it is sent; one that would cross the run's budget is
      // not sent, or becomes the one last call without tools (on_limit finish)
      const clean = (text: string) => session.redactor.redactText(scrub(text, m.apiKey));
      const tokensIn = inputEstimate(sent);
      const limit = outputLimit(wire, sent, m.ref.provider);
      const admitted = await session.admit({
        provider: m.ref.provider,
        model: m.ref.name,
        tokensIn,
        ...(limit.value !== undefined ? { maxOut: limit.value } : {}),
      });
      if (!admitted.ok) {
        if (admitted.spent) throw spent(wire, admitted.spent.used, admitted.spent.max, admitted.spent.limit);
        throw refused(wire, admitted.refused, tokensIn, admitted.tokensOut);
      }
      const release = admitted.release;
      if (admitted.maxOut !== undefined) sent[limit.field] = admitted.maxOut;
      if (admitted.lastCall) {
        delete sent.tools;
        delete sent.tool_choice;
      }
      const headers: Record<string, string> = { "content-type": "application/json" };
      for (const h of PASSED_HEADERS) {
        const v = req.headers[h];
        if (typeof v === "string") headers[h] = v;
      }
      if (m.protocol === "anthropic") {
        headers["anthropic-version"] ??= "2023-06-01";
        if (m.apiKey) headers["x-api-key"] = m.apiKey;
      } else if (m.apiKey) headers.authorization = `Bearer ${m.apiKey}`;

      try {
        let up: Response;
        try {
          up = await session.fetch(endpoint(m.baseUrl, suffix), {
            method: "POST",
            headers,
            body: JSON.stringify(sent),
          });
        } catch (err) {
          const refused = addressRefusedIn(err);
          const message = refused
            ? `the provider's address is refused (${refused.code}): ${refused.message}`
            : `the provider could not be reached: ${clean(err instanceof Error ? (err.cause instanceof Error ? err.cause.message : err.message) : String(err))}`;
          await record({ status: "error", error: message });
          if (last || res.destroyed) throw new FaceError(502, "api_error", message);
          from = { provider: m.ref.provider, model: m.ref.name, reason: "provider unreachable" };
          continue;
        }
        if (!up.ok) {
          const text = clean(await up.text().catch(() => ""));
          const movable = up.status === 429 || up.status >= 500;
          await record({ status: "error", error: `${up.status}: ${text.slice(0, 500)}` });
          if (movable && !last && !res.destroyed) {
            from = {
              provider: m.ref.provider,
              model: m.ref.name,
              reason: up.status === 429 ? "429 rate limited" : `provider error ${up.status}`,
            };
            continue;
          }
          if (!res.destroyed) {
            res.writeHead(up.status, {
              "content-type": up.headers.get("content-type") ?? "application/json",
            });
            res.end(text);
          }
          return;
        }
        await this.#relay(res, up, session, wire, tokensIn, record);
        return;
      } finally {
        await release();
      }
    }
  }

  /**
   * Passes a provider's answer to the client, redacted (every model key of the run is cut
   * out, across chunks), reads its usage on the way and records the call. The answer is read
   * to its end even when the client is gone; an answer cut before its usage is counted by
   * what flowed (about 4 characters a token, never 0 when something flowed).
   */
  async #relay(
    res: http.ServerResponse,
    up: Response,
    session: GatewaySession,
    wire: Wire,
    tokensIn: number,
    record: (r: Partial<ModelCallRecord> & Pick<ModelCallRecord, "status">) => Promise<void>,
  ): Promise<void> {
    const type = up.headers.get("content-type") ?? "application/json";
    const streaming = type.includes("text/event-stream");
    const meter = new UsageMeter(wire);
    const redact = session.redactor.stream();
    const gone = () => res.destroyed || res.writableEnded;
    if (!gone())
      res.writeHead(200, {
        "content-type": type,
        ...(streaming ? { "cache-control": "no-cache" } : {}),
      });
    const send = async (b: Buffer) => {
      if (b.length === 0 || gone()) return;
      if (!res.write(b)) await new Promise<void>((r) => res.once("drain", r).once("close", r));
    };
    let failure: string | null = null;
    const whole: Buffer[] = [];
    let clientLeft = false;
    try {
      if (up.body) {
        for await (const chunk of up.body as AsyncIterable<Uint8Array>) {
          const b = Buffer.from(chunk);
          if (streaming) meter.stream(b);
          else {
            meter.bytes += b.length;
            whole.push(b);
          }
          // what may not be the start of a key goes out now; a possible start waits for the next chunk
          const out = redact.push(b);
          await send(out.length > 0 ? Buffer.concat([out, redact.settle()]) : redact.settle());
          if (gone() && !res.writableFinished) clientLeft = true;
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
      failure = `the provider's answer broke off: ${session.redactor.redactText(err instanceof Error ? err.message : String(err))}`;
      if (streaming) meter.end();
    }
    await send(redact.end());
    if (gone() && !res.writableFinished) clientLeft = true;
    if (!gone()) res.end();
    let { tokensIn: inTokens, tokensOut: outTokens } = meter;
    const estimated = !meter.complete;
    if (estimated) {
      // cut before its usage (or an answer that says none): count what flowed
      inTokens = Math.max(inTokens, tokensIn);
      const flowed = streaming ? Math.ceil(meter.chars / 4) : Math.ceil(meter.bytes / 4);
      outTokens = Math.max(outTokens, flowed, meter.chars > 0 || meter.bytes > 0 ? 1 : 0);
    }
    await record({
      status: failure ? "error" : "ok",
      ...(failure ? { error: failure } : {}),
      tokens_in: inTokens,
      tokens_out: outTokens,
      finish_reason: meter.finish,
      ...(estimated ? { estimated: true } : {}),
      ...(clientLeft ? { client_closed: true } : {}),
    });
  }
}
