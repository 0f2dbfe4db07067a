// The egress proxy: an HTTP forward proxy (absolute-URL requests and CONNECT tunnels) fed
// by the boxes' `egress` bridge. Who connects is the agent the bridge named (the socket's
// uid as boxd saw it); the proxy decides each request or tunnel by that agent's policy,
// resolves names itself, connects to the address it checked, and records every decision.
import http from "node:http";
import net from "node:net";
import type { Duplex } from "node:stream";
import {
  addressClass,
  addressListed,
  formatIp,
  matchEntry,
  rulesAllow,
  rulesFor,
  targetOf,
  type CompiledPolicy,
  type Target,
} from "./policy.js";

/** One decision, as stored (see EgressRecord in the contract for the wire form). */
export interface EgressRecord {
  agentId: string;
  runId: string | null;
  at: Date;
  decision: "allowed" | "refused";
  reason: string;
  host: string;
  port: number;
  method: string | null;
  path: string | null;
  bytesOut: number;
  bytesIn: number;
  durationMs: number;
}

/** The agent a bridged connection is, and what it may reach (read as the connection opened). */
export interface EgressContext {
  agentId: string;
  runId: () => string | null;
  policy: CompiledPolicy;
}

export interface ProxyOptions {
  /** The addresses (bytes) of a name, in the order to try; none when it does not resolve. */
  resolve(host: string): Promise<number[][]>;
  /** The server's own addresses (formatted), never reached unless listed as an IP. */
  ownAddresses(): ReadonlySet<string>;
  /** Connections (bridged, open at once) per agent; past it every request is refused. */
  maxConnections: number;
  connectTimeoutMs?: number;
  onRecord(r: EgressRecord): void;
}

interface Conn {
  ctx: EgressContext;
  over: boolean;
}

type Decision = { ok: true; address: string; reason: string } | { ok: false; reason: string };

/** Headers that belong to one hop (and the proxy's own), never passed on. */
const HOP = new Set([
  "connection",
  "proxy-connection",
  "keep-alive",
  "proxy-authorization",
  "proxy-authenticate",
  "te",
  "trailer",
  "transfer-encoding",
  "upgrade",
]);

function passHeaders(h: http.IncomingHttpHeaders): http.OutgoingHttpHeaders {
  const out: http.OutgoingHttpHeaders = {};
  const named = new Set(
    String(h.connection ?? "")
      .split(",")
      .map((s) => s.trim().toLowerCase()),
  );
  for (const [k, v] of Object.entries(h)) if (v !== undefined && !HOP.has(k) && !named.has(k)) out[k] = v;
  return out;
}

/** host[:port] (IPv6 in brackets) split; port defaults to `dflt`. Null when malformed. */
function splitHostPort(s: string, dflt: number | null): { host: string; port: number } | null {
  const m = /^(\[[0-9a-fA-F:.]+\]|[^:[\]]+)(?::(\d{1,5}))?$/.exec(s);
  if (!m || !m[1]) return null;
  const port = m[2] !== undefined ? Number(m[2]) : dflt;
  if (port === null) return null;
  return { host: m[1], port };
}

const oneLine = (s: string) => s.replace(/[\r\n]+/g, " ").slice(0, 500);

export class EgressProxy {
  readonly #o: ProxyOptions;
  readonly #http: http.Server;
  readonly #conns = new WeakMap<object, Conn>();
  readonly #perAgent = new Map<string, number>();
  readonly #open = new Set<Duplex>();

  constructor(o: ProxyOptions) {
    this.#o = o;
    this.#http = http.createServer({ requireHostHeader: false, keepAliveTimeout: 30_000 });
    this.#http.on("request", (req: http.IncomingMessage, res: http.ServerResponse) => {
      void this.#request(req, res);
    });
    this.#http.on("connect", (req: http.IncomingMessage, socket: Duplex, head: Buffer) => {
      void this.#connect(req, socket, head);
    });
    this.#http.on("clientError", (_err, socket: Duplex) => {
      if (socket.writable) socket.end("HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n");
      else socket.destroy();
    });
  }

  /** Takes one bridged connection of an agent. */
  serve(stream: Duplex, ctx: EgressContext): void {
    const n = (this.#perAgent.get(ctx.agentId) ?? 0) + 1;
    this.#perAgent.set(ctx.agentId, n);
    this.#conns.set(stream, { ctx, over: n > this.#o.maxConnections });
    this.#open.add(stream);
    let counted = true;
    stream.once("close", () => {
      this.#open.delete(stream);
      if (!counted) return;
      counted = false;
      const left = (this.#perAgent.get(ctx.agentId) ?? 1) - 1;
      if (left > 0) this.#perAgent.set(ctx.agentId, left);
      else this.#perAgent.delete(ctx.agentId);
    });
    this.#http.emit("connection", stream);
    stream.resume();
  }

  /** Ends every connection (the server stops). */
  close(): void {
    for (const s of this.#open) s.destroy();
    this.#open.clear();
  }

  #record(c: Conn, r: Omit<EgressRecord, "agentId" | "runId">): void {
    this.#o.onRecord({ agentId: c.ctx.agentId, runId: c.ctx.runId(), ...r, reason: oneLine(r.reason) });
  }

  async #decide(c: Conn, t: Target, plain: { method: string; path: string } | null): Promise<Decision> {
    if (c.over)
      return { ok: false, reason: `more than ${this.#o.maxConnections} connections at once from this agent` };
    const p = c.ctx.policy;
    const by = matchEntry(p, t) ?? (p.open ? "open mode" : undefined);
    const name = `${t.ip?.length === 16 ? `[${t.host}]` : t.host}:${t.port}`;
    if (!by) return { ok: false, reason: `${name} is not in the agent's network allow list` };
    const rules = rulesFor(p, t);
    if (!plain && rules.length > 0)
      return {
        ok: false,
        reason: `rules narrow ${t.host} to plain HTTP requests they can check; a tunnel cannot be checked`,
      };
    if (plain && !rulesAllow(rules, plain.method, plain.path))
      return { ok: false, reason: `${plain.method} ${plain.path} is not allowed by the rules for ${t.host}` };
    let addrs: number[][];
    if (t.ip) addrs = [t.ip];
    else {
      try {
        addrs = await this.#o.resolve(t.host);
      } catch {
        addrs = [];
      }
      if (addrs.length === 0) return { ok: false, reason: `${t.host} does not resolve` };
    }
    const addr = addrs[0] as number[];
    const text = formatIp(addr);
    const cls = addressClass(addr) ?? (this.#o.ownAddresses().has(text) ? "the server's own" : null);
    if (cls && !addressListed(p, addr, t.port)) {
      const what = `${cls} address (${text}) not listed as an IP`;
      return { ok: false, reason: t.ip ? `${text} is ${what}` : `${t.host} resolves to ${what}` };
    }
    return { ok: true, address: text, reason: `allowed by ${by}` };
  }

  async #request(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const c = this.#conns.get(req.socket);
    const t0 = Date.now();
    const method = req.method ?? "GET";
    const url = req.url ?? "";
    const refuse = (status: number, reason: string, host = "", port = 0, path: string | null = null) => {
      if (c)
        this.#record(c, {
          at: new Date(t0),
          decision: "refused",
          reason,
          host,
          port,
          method,
          path,
          bytesOut: 0,
          bytesIn: 0,
          durationMs: Date.now() - t0,
        });
      const body = `warren egress: refused: ${oneLine(reason)}\n`;
      res.writeHead(status, {
        "content-type": "text/plain; charset=utf-8",
        "content-length": Buffer.byteLength(body),
        "x-warren-egress": "refused",
        connection: "close",
      });
      res.end(body);
    };
    if (!c) return void res.destroy();
    let parsed: URL | null = null;
    try {
      parsed = /^[a-z][a-z0-9+.-]*:\/\//i.test(url) ? new URL(url) : null;
    } catch {
      parsed = null;
    }
    if (!parsed)
      return refuse(400, "this is an HTTP proxy: ask for an absolute http:// URL, or CONNECT host:port");
    if (parsed.protocol !== "http:")
      return refuse(400, `${parsed.protocol} URLs go through a CONNECT tunnel, not a plain request`);
    const port = parsed.port ? Number(parsed.port) : 80;
    const path = `${parsed.pathname}${parsed.search}`;
    const t = targetOf(parsed.hostname, port);
    if (!t || parsed.username || parsed.password)
      return refuse(
        400,
        `the URL's host ${JSON.stringify(parsed.host)} is not a host name or an IP`,
        parsed.hostname,
        port,
        path,
      );
    const hostHeader = req.headers.host;
    if (hostHeader !== undefined) {
      const h = splitHostPort(hostHeader, 80);
      const ht = h && targetOf(h.host, h.port);
      if (!ht || ht.host !== t.host || ht.port !== t.port)
        return refuse(
          403,
          `the Host header ${JSON.stringify(hostHeader)} disagrees with the URL's host ${t.host}:${t.port}`,
          t.host,
          port,
          path,
        );
    }
    const d = await this.#decide(c, t, { method, path });
    if (!d.ok) return refuse(403, d.reason, t.host, port, path);
    let bytesOut = 0;
    let bytesIn = 0;
    const up = http.request({
      host: d.address,
      port,
      method,
      path,
      headers: { ...passHeaders(req.headers), host: parsed.host },
      agent: false,
      timeout: this.#o.connectTimeoutMs ?? 10_000,
    });
    let done = false;
    const finish = (extra: string) => {
      if (done) return;
      done = true;
      this.#record(c, {
        at: new Date(t0),
        decision: "allowed",
        reason: `${d.reason}${extra}`,
        host: t.host,
        port,
        method,
        path,
        bytesOut,
        bytesIn,
        durationMs: Date.now() - t0,
      });
    };
    req.on("data", (b: Buffer) => (bytesOut += b.length));
    up.on("timeout", () => up.destroy(new Error("the upstream did not answer in time")));
    up.on("response", (ur) => {
      up.setTimeout(0);
      ur.on("data", (b: Buffer) => (bytesIn += b.length));
      res.writeHead(ur.statusCode ?? 502, ur.statusMessage, passHeaders(ur.headers));
      ur.pipe(res);
      ur.on("error", () => res.destroy());
    });
    up.on("error", (err) => {
      if (!res.headersSent) {
        res.writeHead(502, { "content-type": "text/plain; charset=utf-8", connection: "close" });
        res.end(`warren egress: the upstream failed: ${oneLine(err.message)}\n`);
      } else res.destroy();
      finish(`; the upstream failed: ${(err as NodeJS.ErrnoException).code ?? err.message}`);
    });
    res.on("close", () => {
      if (!res.writableFinished) up.destroy();
      finish("");
    });
    req.pipe(up);
  }

  async #connect(req: http.IncomingMessage, socket: Duplex, head: Buffer): Promise<void> {
    const c = this.#conns.get(socket);
    const t0 = Date.now();
    if (!c) return void socket.destroy();
    const refuse = (status: number, reason: string, host: string, port: number) => {
      this.#record(c, {
        at: new Date(t0),
        decision: "refused",
        reason,
        host,
        port,
        method: null,
        path: null,
        bytesOut: 0,
        bytesIn: 0,
        durationMs: Date.now() - t0,
      });
      const body = `warren egress: refused: ${oneLine(reason)}\n`;
      const text = status === 403 ? "Forbidden" : status === 502 ? "Bad Gateway" : "Bad Request";
      socket.end(
        `HTTP/1.1 ${status} ${text}\r\nContent-Type: text/plain; charset=utf-8\r\nX-Warren-Egress: refused\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
      );
    };
    const hp = splitHostPort(req.url ?? "", null);
    const t = hp && targetOf(hp.host, hp.port);
    if (!t) return refuse(400, `CONNECT wants host:port, not ${JSON.stringify(req.url ?? "")}`, "", 0);
    const hostHeader = req.headers.host;
    if (hostHeader !== undefined) {
      const h = splitHostPort(hostHeader, t.port);
      const ht = h && targetOf(h.host, h.port);
      if (!ht || ht.host !== t.host || ht.port !== t.port)
        return refuse(
          403,
          `the Host header ${JSON.stringify(hostHeader)} disagrees with the CONNECT target ${t.host}:${t.port}`,
          t.host,
          t.port,
        );
    }
    const d = await this.#decide(c, t, null);
    if (!d.ok) return refuse(403, d.reason, t.host, t.port);
    const up = net.connect({ host: d.address, port: t.port });
    const timer = setTimeout(
      () => up.destroy(new Error("connect timed out")),
      this.#o.connectTimeoutMs ?? 10_000,
    );
    let connected = false;
    let recorded = false;
    const finish = (extra: string) => {
      if (recorded) return;
      recorded = true;
      this.#record(c, {
        at: new Date(t0),
        decision: "allowed",
        reason: `${d.reason}${extra}`,
        host: t.host,
        port: t.port,
        method: null,
        path: null,
        bytesOut: up.bytesWritten,
        bytesIn: up.bytesRead,
        durationMs: Date.now() - t0,
      });
    };
    up.once("connect", () => {
      clearTimeout(timer);
      connected = true;
      up.setNoDelay(true);
      socket.write("HTTP/1.1 200 Connection Established\r\n\r\n");
      if (head.length) up.write(head);
      socket.pipe(up);
      up.pipe(socket);
    });
    up.on("error", (err) => {
      clearTimeout(timer);
      const code = (err as NodeJS.ErrnoException).code ?? err.message;
      if (!connected) {
        const body = `warren egress: the upstream failed: ${oneLine(code)}\n`;
        socket.end(
          `HTTP/1.1 502 Bad Gateway\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
        );
      } else socket.destroy();
      finish(`; the upstream failed: ${code}`);
    });
    up.on("close", () => {
      clearTimeout(timer);
      socket.destroy();
      finish("");
    });
    socket.on("error", () => up.destroy());
    socket.on("close", () => up.destroy());
  }
}
