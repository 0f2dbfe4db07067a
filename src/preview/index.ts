// Port previews on an origin of their own. An agent's port P is served at
// http://P-<agent id>.localhost:<preview port>/ (P-<agent id>.<WARREN_PREVIEW_DOMAIN> behind a
// proxy), never on the API's origin: whatever the box's page runs, it runs on a site that holds
// nothing of the app's. The app hands the preview a one-time token in the URL
// (?warren_preview=), which the preview exchanges for a cookie of its own origin; every request
// is then checked as the API would (who may open the agent's ports), and reaches the box with
// none of the viewer's credentials, and the box's answer reaches the browser with no cookie.
import { randomBytes } from "node:crypto";
import http from "node:http";
import type net from "node:net";
import type { Duplex } from "node:stream";
import type { Access, Identity } from "../access/index.js";
import type { Agents } from "../agents/service.js";
import type { Config } from "../config/index.js";
import { errorStatus, type ErrorCode } from "../contract/errors.js";
import { isWarrenError, WarrenError } from "../errors.js";
import { portsOf } from "../machines/placement.js";
import { endToEnd } from "../net/headers.js";
import type { OwnEndpoints } from "../net/own.js";
import type { Logger } from "../observability/log.js";

/** The query parameter that carries the one-time token. */
export const PREVIEW_TOKEN_PARAM = "warren_preview";
/** The preview's own cookie (host-only, HttpOnly), holding its session. */
export const PREVIEW_COOKIE = "warren_preview_session";

const TOKEN_TTL_MS = 60_000;
const SESSION_TTL_MS = 60 * 60_000;
const MAX_HELD = 10_000;

interface Grant {
  email: string;
  agentId: string;
  port: number;
  expires: number;
  /** The viewer's access revision in the agent's organisation when the token was issued. */
  revision: number;
}

/** A live session: who views, under which access revision. */
export interface Viewing {
  email: string;
  revision: number;
}

/** Tokens (one use, a minute) and sessions (an hour), random and held in memory only. */
export class PreviewGrants {
  readonly #tokens = new Map<string, Grant>();
  readonly #sessions = new Map<string, Grant>();
  readonly #now: () => number;

  constructor(now: () => number = Date.now) {
    this.#now = now;
  }

  /**
   * A token for one viewer, one agent and one port, bound to the viewer's access `revision`
   * (Access.revisionOf): any change of their role or areas since ends the session it opens.
   */
  issue(who: Identity, agentId: string, port: number, revision: number): string {
    return this.#put(this.#tokens, {
      email: who.email,
      agentId,
      port,
      expires: this.#now() + TOKEN_TTL_MS,
      revision,
    });
  }

  /** Spends a token (whatever the outcome) and answers a session id, if it was for this agent and port. */
  exchange(token: string, agentId: string, port: number): string | null {
    const g = this.#tokens.get(token);
    if (!g) return null;
    this.#tokens.delete(token);
    if (g.expires < this.#now() || g.agentId !== agentId || g.port !== port) return null;
    return this.#put(this.#sessions, { ...g, expires: this.#now() + SESSION_TTL_MS });
  }

  /** The viewer of a session, if it is alive and for this agent and port. */
  viewer(session: string, agentId: string, port: number): Viewing | null {
    const g = this.#sessions.get(session);
    if (!g) return null;
    if (g.expires < this.#now()) {
      this.#sessions.delete(session);
      return null;
    }
    return g.agentId === agentId && g.port === port ? { email: g.email, revision: g.revision } : null;
  }

  /** Ends a session (its viewer's access changed since it was opened). */
  end(session: string): void {
    this.#sessions.delete(session);
  }

  #put(map: Map<string, Grant>, g: Grant): string {
    const now = this.#now();
    for (const [k, v] of map) {
      if (v.expires < now || map.size >= MAX_HELD) map.delete(k);
      else break; // in order of insertion: the rest expire later
    }
    const id = randomBytes(32).toString("base64url");
    map.set(id, g);
    return id;
  }
}

/** Where a preview is, from a Host header: its port and agent, or null. */
export function parsePreviewHost(
  host: string | undefined,
  domain: string | undefined,
): { port: number; agentId: string } | null {
  if (!host || host.length > 300) return null;
  const name = host.toLowerCase().replace(/:\d{1,5}$/, "");
  const m = /^(\d{1,5})-(agt_[0-9a-z]{16})\.(.+)$/.exec(name);
  if (!m) return null;
  const rest = m[3];
  if (rest !== "localhost" && (domain === undefined || rest !== domain)) return null;
  const port = Number(m[1]);
  if (port < 1 || port > 65535 || String(port) !== m[1]) return null;
  return { port, agentId: m[2] as string };
}

/** The origin of an agent's port's preview. */
export function previewOrigin(
  config: Pick<Config, "WARREN_PREVIEW_DOMAIN" | "PUBLIC_BASE_URL">,
  listenPort: number,
  agentId: string,
  port: number,
): string {
  if (config.WARREN_PREVIEW_DOMAIN) {
    const scheme = config.PUBLIC_BASE_URL ? new URL(config.PUBLIC_BASE_URL).protocol : "https:";
    return `${scheme}//${port}-${agentId}.${config.WARREN_PREVIEW_DOMAIN}`;
  }
  return `http://${port}-${agentId}.localhost:${listenPort}`;
}

// Every credential or identity of the viewer never crosses the preview (the box sees a request
// from nobody in particular), nor this hop's own headers (net/headers.ts).
const credentials = new Set(["cookie", "authorization", "forwarded", "x-real-ip"]);

/** The viewer's request headers as the box may see them. */
export function toBox(h: http.IncomingHttpHeaders, trustedHeader: string): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const [k, v] of Object.entries(endToEnd(h))) {
    const name = k.toLowerCase();
    if (credentials.has(name) || name === trustedHeader) continue;
    // a length is kept only for a body that arrived whole (a chunked one is chunked again)
    if (name === "content-length" && h["transfer-encoding"] !== undefined) continue;
    if (name.startsWith("x-forwarded-")) continue;
    out[k] = v;
  }
  return out;
}

/** The box's answer headers as the browser may see them: no cookie of any origin. */
export function fromBox(h: http.IncomingHttpHeaders): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const [k, v] of Object.entries(endToEnd(h))) {
    const name = k.toLowerCase();
    if (name === "set-cookie" || name === "set-cookie2") continue;
    if (name === "content-length" && h["transfer-encoding"] !== undefined) continue;
    out[k] = v;
  }
  out["x-content-type-options"] ??= "nosniff";
  return out;
}

function cookieOf(header: string | undefined, name: string): string | undefined {
  for (const part of (header ?? "").split(";")) {
    const eq = part.indexOf("=");
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}

export interface PreviewOptions {
  config: Pick<Config, "WARREN_PREVIEW_DOMAIN" | "PUBLIC_BASE_URL" | "TRUSTED_HEADER">;
  access: Access;
  agents: Agents;
  forward: (machineId: string, port: number) => Promise<Duplex>;
  grants: PreviewGrants;
  own: OwnEndpoints;
  logger: Logger;
  /** The stream budget a WebSocket draws on (src/http/streams.ts, handed in by the composition). */
  streams?: {
    /** A slot for `who` (throws 429 stream.too_many past a cap); answers the function that gives it back. */
    acquire(who: Identity): () => void;
    /** Calls `close` once nothing went either way on `socket` for the idle bound. */
    idle(socket: net.Socket, close: () => void): void;
  };
}

/** The previews' listener: a plain HTTP server (nothing of the app or the API is on it). */
export function createPreviewServer(o: PreviewOptions): http.Server {
  const secure = o.config.WARREN_PREVIEW_DOMAIN
    ? o.config.PUBLIC_BASE_URL
      ? new URL(o.config.PUBLIC_BASE_URL).protocol === "https:"
      : true
    : false;

  const fail = (res: http.ServerResponse, code: ErrorCode, message: string) => {
    if (res.headersSent) return void res.destroy();
    const body = JSON.stringify({ error: { code, message } });
    res.writeHead(errorStatus[code], {
      "content-type": "application/json; charset=utf-8",
      "content-length": Buffer.byteLength(body),
      "cache-control": "no-store",
      "x-content-type-options": "nosniff",
    });
    res.end(body);
  };

  /** Who views, and the agent they may view; throws a WarrenError otherwise. */
  const admit = async (req: http.IncomingMessage) => {
    if (o.own.isOwnConnection(req.socket.remoteAddress, req.socket.remotePort))
      throw new WarrenError(
        "auth.required",
        "a request over a connection this server opened itself has no identity",
      );
    const where = parsePreviewHost(req.headers.host, o.config.WARREN_PREVIEW_DOMAIN);
    if (!where)
      throw new WarrenError("host.refused", "this listener answers only for <port>-<agent id> preview hosts");
    const session = cookieOf(req.headers.cookie, PREVIEW_COOKIE);
    const viewing = session ? o.grants.viewer(session, where.agentId, where.port) : null;
    return { where, viewing, session };
  };

  const authorise = async (
    viewing: Viewing | null,
    session: string | undefined,
    where: { port: number; agentId: string },
    method: string,
  ) => {
    if (!viewing)
      throw new WarrenError(
        "auth.required",
        "open this preview from warren: its link is good once, for a minute, and its session for an hour",
      );
    const who = await o.access.identify(viewing.email);
    const agent = await o.agents.load(
      who,
      where.agentId,
      method === "GET" || method === "HEAD" ? "inspect" : "write",
    );
    // the session holds the viewer's access as it was: a role or areas changed since (a
    // removal and an addition again included) end it
    if ((await o.access.revisionOf(agent.orgId, who.userId)) !== viewing.revision) {
      if (session) o.grants.end(session);
      throw new WarrenError(
        "auth.required",
        "your access to this organisation changed since this preview was opened; open it again from warren",
      );
    }
    // the agent's servers run outside every area's fence (they may serve any file of the home)
    await o.access.requireUnfenced(agent.orgId, who);
    const block = portsOf(agent.slot);
    if (where.port < block.first || where.port > block.last)
      throw new WarrenError(
        "request.invalid",
        `port ${where.port} is outside the agent's port block ${block.first}-${block.last}`,
      );
    return { agent, who };
  };

  // what is open through a session (WebSockets, answers still streaming), by viewer, so that a
  // change of the viewer's access closes it at once
  const live = new Map<string, Set<Duplex>>();
  const hold = (orgId: string, userId: string, s: Duplex) => {
    const key = `${orgId}\n${userId}`;
    let set = live.get(key);
    if (!set) live.set(key, (set = new Set()));
    set.add(s);
    s.once("close", () => {
      set.delete(s);
      if (set.size === 0 && live.get(key) === set) live.delete(key);
    });
  };
  const unwatch = o.access.watch((orgId, userId) => {
    for (const s of live.get(`${orgId}\n${userId}`) ?? []) s.destroy();
  });

  const handle = async (req: http.IncomingMessage, res: http.ServerResponse) => {
    const { where, viewing, session } = await admit(req);
    const url = new URL(req.url ?? "/", "http://preview.invalid");
    const token = url.searchParams.get(PREVIEW_TOKEN_PARAM);
    if (token !== null) {
      // the token's one use: a cookie of this origin, then the same address without it
      const session = o.grants.exchange(token, where.agentId, where.port);
      if (!session)
        throw new WarrenError(
          "auth.required",
          "this preview link was used already, has expired or is for another preview",
        );
      url.searchParams.delete(PREVIEW_TOKEN_PARAM);
      res.writeHead(303, {
        location: `${url.pathname}${url.search}`,
        "set-cookie": `${PREVIEW_COOKIE}=${session}; Path=/; HttpOnly; SameSite=Lax; Max-Age=${SESSION_TTL_MS / 1000}${secure ? "; Secure" : ""}`,
        "cache-control": "no-store",
        "referrer-policy": "no-referrer",
      });
      req.resume();
      return void res.end();
    }
    const { agent, who } = await authorise(viewing, session, where, req.method ?? "GET");
    hold(agent.orgId, who.userId, res.socket ?? req.socket);
    const conn = await o.forward(agent.machineId, where.port);
    const upstream = await new Promise<http.IncomingMessage>((resolve, reject) => {
      const r = http.request({
        method: req.method ?? "GET",
        path: req.url ?? "/",
        headers: { ...toBox(req.headers, o.config.TRUSTED_HEADER), host: `127.0.0.1:${where.port}` },
        createConnection: () => conn.resume(),
      });
      r.on("response", resolve);
      r.on("error", (err) =>
        reject(
          new WarrenError(
            "port.unreachable",
            `nothing answered on port ${where.port} in the box: ${err.message}`,
          ),
        ),
      );
      req.pipe(r);
    });
    res.writeHead(upstream.statusCode ?? 502, fromBox(upstream.headers));
    upstream.pipe(res);
    upstream.on("error", () => res.destroy());
  };

  const server = http.createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      if (isWarrenError(err)) return fail(res, err.code, err.message);
      o.logger.error({ err }, "a preview request failed");
      fail(res, "internal", "internal error; the server log has the details");
    });
  });

  // WebSocket upgrades (a dev server's live reload): the same admission, then the box's
  // answer head without cookies, then the two streams joined
  // upgraded sockets are no longer the HTTP server's: closing all connections ends them too
  const upgraded = new Set<Duplex>();
  const closeAll = server.closeAllConnections.bind(server);
  server.closeAllConnections = () => {
    closeAll();
    for (const s of upgraded) s.destroy();
  };
  server.on("upgrade", (req: http.IncomingMessage, socket: Duplex, head: Buffer) => {
    upgraded.add(socket);
    socket.once("close", () => upgraded.delete(socket));
    const refuse = (code: ErrorCode, message: string, retryAfterS?: unknown) => {
      const body = JSON.stringify({ error: { code, message } });
      const retry = typeof retryAfterS === "number" ? `retry-after: ${Math.ceil(retryAfterS)}\r\n` : "";
      socket.end(
        `HTTP/1.1 ${errorStatus[code]} ${http.STATUS_CODES[errorStatus[code]] ?? ""}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n${retry}connection: close\r\n\r\n${body}`,
      );
    };
    socket.on("error", () => {});
    (async () => {
      const { where, viewing, session } = await admit(req);
      const { agent, who } = await authorise(viewing, session, where, "GET");
      // a slot of the stream budget while it is open (429 stream.too_many past a cap), and
      // closed once nothing went either way for the idle bound
      if (o.streams) {
        socket.once("close", o.streams.acquire(who));
        o.streams.idle(socket as net.Socket, () => socket.destroy());
      }
      hold(agent.orgId, who.userId, socket);
      const conn = await o.forward(agent.machineId, where.port);
      const headers = toBox(req.headers, o.config.TRUSTED_HEADER);
      let out = `${req.method ?? "GET"} ${req.url ?? "/"} HTTP/1.1\r\nhost: 127.0.0.1:${where.port}\r\nconnection: upgrade\r\nupgrade: ${String(req.headers.upgrade)}\r\n`;
      for (const [k, v] of Object.entries(headers))
        for (const one of Array.isArray(v) ? v : [v]) if (!/[\r\n]/.test(one)) out += `${k}: ${one}\r\n`;
      conn.write(`${out}\r\n`);
      if (head.length > 0) conn.write(head);
      // the box's answer head, read whole, without its cookies
      let buf = Buffer.alloc(0);
      const onData = (chunk: Buffer) => {
        buf = Buffer.concat([buf, chunk]);
        const end = buf.indexOf("\r\n\r\n");
        if (end < 0) {
          if (buf.length > 64 * 1024) conn.destroy();
          return;
        }
        conn.off("data", onData);
        const lines = buf
          .subarray(0, end)
          .toString("latin1")
          .split("\r\n")
          .filter((l, i) => i === 0 || !/^set-cookie2?\s*:/i.test(l));
        socket.write(`${lines.join("\r\n")}\r\n\r\n`);
        socket.write(buf.subarray(end + 4));
        conn.pipe(socket);
        socket.pipe(conn);
      };
      conn.on("data", onData);
      conn.on("error", () => socket.destroy());
      conn.on("close", () => socket.destroy());
      socket.on("close", () => conn.destroy());
      conn.resume();
    })().catch((err: unknown) => {
      if (isWarrenError(err)) return refuse(err.code, err.message, err.details?.retryAfterS);
      o.logger.error({ err }, "a preview upgrade failed");
      refuse("internal", "internal error; the server log has the details");
    });
  });
  server.once("close", unwatch);
  return server;
}
