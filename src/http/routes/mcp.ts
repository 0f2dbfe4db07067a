// /mcp: warren as an MCP server over the protocol's streamable HTTP transport. The caller is
// identified as on /api (the same hooks); a session is bound to the identity that opened it.
// Each tool call is handed to this server's own routes as the caller (the identity headers of
// the request that carries the call, from the same peer address), so that it passes the same
// access checks and leaves the same record as the caller's own request would.
import { randomUUID } from "node:crypto";
import type { IncomingMessage } from "node:http";
import type { AuthInfo } from "@modelcontextprotocol/sdk/server/auth/types.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { isInitializeRequest } from "@modelcontextprotocol/sdk/types.js";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { Identity } from "../../access/index.js";
import { WarrenError } from "../../errors.js";
import { clientVia, createMcpServer, type Extra } from "../../mcp/server.js";
import { route, type AnyRoute } from "../route.js";
import type { EventStreams } from "../sse.js";

/** Open sessions at most; an initialize past it is 429 `stream.too_many`. */
const MAX_SESSIONS = 256;
/** A session nobody used for this long is closed when a new one opens. */
const IDLE_MS = 30 * 60_000;

interface Session {
  transport: StreamableHTTPServerTransport;
  userId: string;
  lastUsed: number;
  /** Takes it off the streams the server ends when it stops. */
  unlist: () => void;
}

/** What a tool call is made with: the caller's identity headers and peer address. */
interface Caller {
  headers: Record<string, string>;
  remoteAddress: string | undefined;
}

/** A fetch that hands each request to `app`'s own routes from `remoteAddress`, answered whole. */
function injectFetch(app: FastifyInstance, remoteAddress: string | undefined): typeof fetch {
  return async (input: string | URL | Request, init: RequestInit = {}) => {
    const url = new URL(input instanceof Request ? input.url : String(input));
    const body = init.body;
    const r = await app.inject({
      method: init.method ?? "GET",
      url: url.pathname + url.search,
      headers: Object.fromEntries(new Headers(init.headers).entries()),
      ...(typeof body === "string" || body instanceof Uint8Array
        ? { payload: typeof body === "string" ? body : Buffer.from(body) }
        : {}),
      ...(remoteAddress ? { remoteAddress } : {}),
      ...(init.signal ? { signal: init.signal } : {}),
    });
    const headers = new Headers();
    for (const [k, v] of Object.entries(r.headers))
      for (const x of Array.isArray(v) ? v : v === undefined ? [] : [v]) headers.append(k, String(x));
    const empty = r.statusCode === 204 || r.statusCode === 304 || r.rawPayload.length === 0;
    return new Response(empty ? null : r.rawPayload, { status: r.statusCode, headers });
  };
}

const headerOf = (req: FastifyRequest, name: string): string | undefined => {
  const v = req.headers[name];
  return Array.isArray(v) ? v[0] : v;
};

/**
 * The /mcp routes. Sessions end with the server (`streams.close()`), and a session's stream of
 * messages from the server (GET) holds a slot of the stream budget while it is open.
 */
export function mcpRoutes(o: { version: string; identityHeader: string; streams: EventStreams }): AnyRoute[] {
  const sessions = new Map<string, Session>();
  // the request headers that say who the caller is, passed on to each of its calls
  const carried = [o.identityHeader.toLowerCase(), "authorization", "cookie"];

  const callerOf = (req: FastifyRequest): Caller => {
    const headers: Record<string, string> = {};
    for (const name of carried) {
      const v = headerOf(req, name);
      if (v !== undefined) headers[name] = v;
    }
    return { headers, remoteAddress: req.socket.remoteAddress };
  };

  const clientOf = (app: FastifyInstance) => (extra: Extra) => {
    const caller = extra.authInfo?.extra?.caller as Caller | undefined;
    if (!caller) throw new WarrenError("auth.required", "an MCP call without the identity of its request");
    return clientVia(injectFetch(app, caller.remoteAddress), caller.headers);
  };

  const sweep = () => {
    const now = Date.now();
    for (const [id, s] of sessions)
      if (now - s.lastUsed > IDLE_MS) {
        sessions.delete(id);
        void s.transport.close();
      }
  };

  const open = async (req: FastifyRequest, who: Identity): Promise<Session> => {
    sweep();
    if (sessions.size >= MAX_SESSIONS)
      throw new WarrenError("stream.too_many", `${MAX_SESSIONS} MCP sessions are open: close one first`, {
        retryAfterS: 60,
      });
    const session: Session = {
      userId: who.userId,
      lastUsed: Date.now(),
      unlist: o.streams.add(() => void session.transport.close()),
      transport: new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (id) => void sessions.set(id, session),
        onsessionclosed: (id) => void sessions.delete(id),
      }),
    };
    session.transport.onclose = () => {
      session.unlist();
      const id = session.transport.sessionId;
      if (id) sessions.delete(id);
    };
    await createMcpServer({ version: o.version, client: clientOf(req.server) }).connect(session.transport);
    return session;
  };

  const serve = async (who: Identity, req: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> => {
    const sid = headerOf(req, "mcp-session-id");
    let session: Session;
    let opened = false;
    if (sid !== undefined) {
      const found = sessions.get(sid);
      if (!found)
        throw new WarrenError("not_found", `no MCP session ${sid} (it ended, or the server restarted)`);
      if (found.userId !== who.userId)
        throw new WarrenError("access.denied", "this MCP session was opened by someone else");
      session = found;
    } else if (req.method === "POST" && isInitializeRequest(req.body)) {
      session = await open(req, who);
      opened = true;
    } else {
      throw new WarrenError(
        "request.invalid",
        "an MCP request without an Mcp-Session-Id header must be an initialize request",
      );
    }
    session.lastUsed = Date.now();
    if (req.method === "GET") {
      // refused (429 stream.too_many) before anything is sent, given back when it closes
      const release = o.streams.budget.acquire(who);
      reply.raw.once("close", release);
    }
    const raw = req.raw as IncomingMessage & { auth?: AuthInfo };
    raw.auth = { token: "", clientId: who.email, scopes: [], extra: { caller: callerOf(req) } };
    reply.hijack();
    await session.transport.handleRequest(raw, reply.raw, req.body);
    // an initialize the transport refused (406, a bad message) opened no session: let it go
    if (opened && session.transport.sessionId === undefined) await session.transport.close();
    return reply;
  };

  const common = {
    url: "/mcp",
    tag: "mcp",
    errors: ["auth.required", "access.denied", "not_found", "stream.too_many"] as const,
  };
  return [
    route({
      ...common,
      errors: [...common.errors],
      method: "POST",
      id: "mcp.post",
      summary:
        "MCP (streamable HTTP): a JSON-RPC message of the Model Context Protocol; without Mcp-Session-Id it must be `initialize`, which opens a session bound to the caller. Answers JSON or server-sent events",
      produces: "text/event-stream",
      handler: ({ who, req, reply }) => serve(who, req, reply),
    }),
    route({
      ...common,
      errors: [...common.errors],
      method: "GET",
      id: "mcp.stream",
      summary: "MCP (streamable HTTP): the session's stream of messages from the server (server-sent events)",
      produces: "text/event-stream",
      handler: ({ who, req, reply }) => serve(who, req, reply),
    }),
    route({
      ...common,
      errors: [...common.errors],
      method: "DELETE",
      id: "mcp.close",
      summary: "MCP (streamable HTTP): ends the session of Mcp-Session-Id (200, an empty body)",
      produces: "text/plain",
      handler: ({ who, req, reply }) => serve(who, req, reply),
    }),
  ];
}
