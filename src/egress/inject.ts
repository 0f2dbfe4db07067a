// Secrets held by the proxy (secrets of use egress): an agent's commands see only a marker
// (WARREN_SECRET_<NAME> holds `warren-secret:<id>`), and the proxy puts the value in place of
// the marker in the headers of requests to the hosts the secret is bound to. Plain HTTP
// requests are rewritten as they pass; a CONNECT to a bound host is intercepted: the proxy
// answers the TLS handshake with a certificate for that host signed by the machine's
// interception authority (./authority.ts, trusted in the box), reads each request, and sends
// it on over its own TLS connection to the checked address, the upstream's certificate
// verified. Every other CONNECT stays a blind tunnel. A request that carries a marker to a
// host its secret is not bound to is refused and recorded. What this cannot protect: a bound
// host that sends the header back (an echo) gives the value to the box; the command's output
// is still redacted of it, as of every secret that reaches the agent.
import fs from "node:fs";
import http from "node:http";
import https from "node:https";
import type { Duplex } from "node:stream";
import tls from "node:tls";
import { eq } from "drizzle-orm";
import { endToEnd } from "../net/headers.js";
import { formatIp } from "../net/rule.js";
import { memo, schema, type Db } from "../store/index.js";
import type { Authorities } from "./authority.js";
import { compilePolicy, matchEntry, targetOf, type CompiledPolicy, type Target } from "./policy.js";
import {
  connectFailure,
  oneLine,
  relay,
  splitHostPort,
  type Carried,
  type Conn,
  type EgressContext,
  type EgressRecord,
  type Live,
} from "./wire.js";

/** A secret of use egress as the proxy holds it: its marker, its value and its hosts. */
export interface EgressSecret {
  name: string;
  marker: string;
  value: string;
  hosts: readonly string[];
}

export interface InjectionOptions {
  db: Db;
  /** The secrets of use egress that reach an agent (Secrets.egressFor). */
  secrets: { egressFor(agent: { id: string; orgId: string }): Promise<readonly EgressSecret[]> };
  authorities: Pick<Authorities, "context">;
  /** Where the server's own upstream sockets are told (the API never believes one). */
  track(socket: import("node:net").Socket): void;
  /** Authorities (PEM) trusted for the upstreams of intercepted connections besides the public ones. */
  trustFile?: string | undefined;
  connectTimeoutMs?: number | undefined;
}

/** What the proxy hands over with a CONNECT it lets the injection intercept. */
export interface Intercepted {
  c: Conn;
  t: Target;
  address: number[];
  reason: string;
  record(r: Omit<EgressRecord, "agentId" | "runId"> & { runId?: string | null }): void;
  /** The proxy's requests and tunnels going on (re-checked when a policy changes). */
  live: Set<Live>;
}

type Rewrite = { ok: true; headers: Record<string, string | string[]> } | { ok: false; reason: string };

const MARK = "warren-secret:";
const MARKERS = /warren-secret:[A-Za-z0-9_-]+/g;

/** A secret and the hosts it is bound to, parsed as a network policy's entries are. */
type Bound = { s: EgressSecret; hosts: CompiledPolicy };

export class Injection {
  readonly #o: InjectionOptions;
  readonly #agents;
  readonly #bound = new WeakMap<readonly EgressSecret[], Bound[]>();
  readonly #conns = new WeakMap<object, { x: Intercepted; ups: Set<{ destroy(): void }> }>();
  readonly #http: http.Server;
  #trust: string[] | undefined | null = null;

  constructor(o: InjectionOptions) {
    this.#o = o;
    this.#agents = memo<string, { orgId: string; machineId: string } | undefined>(o.db, [schema.agents]);
    this.#http = http.createServer({ keepAliveTimeout: 30_000 });
    this.#http.on("request", (req: http.IncomingMessage, res: http.ServerResponse) => {
      void this.#request(req, res);
    });
  }

  async #agent(agentId: string) {
    return this.#agents.get(agentId, async () => {
      const a = schema.agents;
      const [row] = await this.#o.db
        .select({ orgId: a.orgId, machineId: a.machineId })
        .from(a)
        .where(eq(a.id, agentId));
      return row;
    });
  }

  /** The agent's secrets of use egress with their hosts compiled. */
  async #secrets(agentId: string): Promise<Bound[]> {
    const agent = await this.#agent(agentId);
    if (!agent) return [];
    const list = await this.#o.secrets.egressFor({ id: agentId, orgId: agent.orgId });
    let bound = this.#bound.get(list);
    if (!bound) {
      bound = list.map((s) => ({ s, hosts: compilePolicy({ allow: [...s.hosts] }) }));
      this.#bound.set(list, bound);
    }
    return bound;
  }

  /**
   * Takes a CONNECT the policy allowed when a secret of the agent is bound to its host (then
   * intercepts it and answers true); false: it stays the proxy's, a blind tunnel.
   */
  async took(
    socket: Duplex,
    head: Buffer,
    c: Conn,
    t: Target,
    d: { address: number[]; reason: string },
    record: Intercepted["record"],
    going: Set<Live>,
  ): Promise<boolean> {
    const bound = (await this.#secrets(c.ctx.agentId)).some((b) => matchEntry(b.hosts, t) !== undefined);
    if (bound)
      await this.#intercept(socket, head, {
        c,
        t,
        address: d.address,
        reason: d.reason,
        record,
        live: going,
      });
    return bound;
  }

  /**
   * The headers of a request to `t` with each marker of a secret bound to it replaced by the
   * value (also inside Basic credentials); refused when a marker (in a header or the URL)
   * names no secret of the agent, or one not bound to `t`.
   */
  async rewrite(
    ctx: EgressContext,
    t: Target,
    headers: http.IncomingHttpHeaders,
    url: string,
  ): Promise<Rewrite> {
    const out = endToEnd(headers);
    const texts = [url, ...Object.values(out).flat()];
    const basic = /^\s*basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(String(out.authorization ?? ""));
    const decoded = basic ? Buffer.from(basic[1] as string, "base64").toString("latin1") : "";
    if (!texts.some((s) => s.includes(MARK)) && !decoded.includes(MARK)) return { ok: true, headers: out };
    const secrets = await this.#secrets(ctx.agentId);
    const name = `${t.ip?.length === 16 ? `[${t.host}]` : t.host}:${t.port}`;
    for (const text of [...texts, decoded])
      for (const m of text.match(MARKERS) ?? []) {
        const b = secrets.find((x) => x.s.marker === m);
        if (!b)
          return { ok: false, reason: `the request to ${name} carries a marker of no secret of this agent` };
        if (matchEntry(b.hosts, t) === undefined)
          return {
            ok: false,
            reason: `the request to ${name} carries the marker of the secret ${b.s.name}, which is bound to other hosts`,
          };
      }
    const put = (s: string) => s.replace(MARKERS, (m) => secrets.find((x) => x.s.marker === m)?.s.value ?? m);
    for (const [k, v] of Object.entries(out)) out[k] = Array.isArray(v) ? v.map(put) : put(v);
    if (basic && decoded.includes(MARK))
      out.authorization = `Basic ${Buffer.from(put(decoded), "latin1").toString("base64")}`;
    return { ok: true, headers: out };
  }

  /** A CONNECT the policy allowed to a bound host: its TLS is answered here. */
  async #intercept(socket: Duplex, head: Buffer, x: Intercepted): Promise<void> {
    const t0 = Date.now();
    if (socket.destroyed)
      return void x.record(refused(x, t0, "the client went away before the connection was made"));
    let context: tls.SecureContext;
    try {
      const agent = await this.#agent(x.c.ctx.agentId);
      if (!agent) throw new Error("the agent is gone");
      context = await this.#o.authorities.context(agent.machineId, x.t.host, x.t.ip);
    } catch (err) {
      x.record(refused(x, t0, `the interception authority failed: ${(err as Error).message}`));
      return void socket.end(connectFailure("the interception authority failed"));
    }
    socket.write("HTTP/1.1 200 Connection Established\r\n\r\n");
    if (head.length) socket.unshift(head);
    const secure = new tls.TLSSocket(socket, {
      isServer: true,
      secureContext: context,
      ALPNProtocols: ["http/1.1"],
    });
    const ups = new Set<{ destroy(): void }>();
    const live: Live = {
      c: x.c,
      t: x.t,
      address: x.address,
      plain: null,
      end: (reason) => {
        x.record(refused(x, t0, reason));
        for (const u of ups) u.destroy();
        secure.destroy();
        socket.destroy();
      },
    };
    x.live.add(live);
    const gone = () => x.live.delete(live);
    let shook = false;
    secure.once("secure", () => (shook = true));
    secure.once("close", gone);
    socket.once("close", () => (gone(), secure.destroy()));
    secure.on("error", (err: NodeJS.ErrnoException) => {
      // a client that does not trust the machine's authority ends here: told in the record
      if (shook) return void socket.destroy();
      x.record(
        refused(x, t0, `the TLS handshake with the agent's client failed: ${err.code ?? err.message}`),
      );
      socket.destroy();
    });
    this.#conns.set(secure, { x, ups });
    this.#http.emit("connection", secure);
  }

  #trusted(): string[] | undefined {
    if (this.#trust === null) {
      const file = this.#o.trustFile;
      const extra = file && fs.existsSync(file) ? fs.readFileSync(file, "utf8") : undefined;
      this.#trust = extra ? [...tls.rootCertificates, extra] : undefined;
    }
    return this.#trust;
  }

  /** One request read from an intercepted connection: rewritten and sent on over TLS. */
  async #request(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const conn = this.#conns.get(req.socket);
    if (!conn) return void res.destroy();
    const { x, ups } = conn;
    const t0 = Date.now();
    const method = req.method ?? "GET";
    const path = req.url ?? "/";
    const base = { host: x.t.host, port: x.t.port, method, path };
    const refuse = (reason: string) => {
      x.record({ ...refused(x, t0, reason), ...base });
      const body = `warren egress: refused: ${oneLine(reason)}\n`;
      res.writeHead(403, {
        "content-type": "text/plain; charset=utf-8",
        "content-length": Buffer.byteLength(body),
        "x-warren-egress": "refused",
      });
      res.end(body);
    };
    const h = splitHostPort(req.headers.host ?? "", 443);
    const ht = h && targetOf(h.host, h.port);
    if (!ht || ht.host !== x.t.host || ht.port !== x.t.port)
      return refuse(
        `the Host header ${JSON.stringify(req.headers.host ?? "")} is not the connection's host ${x.t.host}:${x.t.port}`,
      );
    if (!path.startsWith("/"))
      return refuse("a request in an intercepted connection names a path, not a URL");
    const sent = await this.rewrite(x.c.ctx, x.t, req.headers, path);
    if (!sent.ok) return refuse(sent.reason);
    const carried: Carried = { out: 0, in: 0 };
    let done = false;
    const finish = (extra: string) => {
      if (done) return;
      done = true;
      x.record({
        ...base,
        at: new Date(t0),
        decision: "allowed",
        reason: `${x.reason}; intercepted for the agent's secrets bound to it${extra}`,
        bytesOut: carried.out,
        bytesIn: carried.in,
        durationMs: Date.now() - t0,
      });
    };
    const trust = this.#trusted();
    const up = https.request({
      host: formatIp(x.address),
      port: x.t.port,
      ...(x.t.ip ? {} : { servername: x.t.host }),
      method,
      path,
      headers: { ...sent.headers, host: req.headers.host as string },
      agent: false,
      ...(trust ? { ca: trust } : {}),
      timeout: this.#o.connectTimeoutMs ?? 10_000,
    });
    ups.add(up);
    up.on("socket", (s) => this.#o.track(s));
    up.on("close", () => ups.delete(up));
    relay(req, res, up, carried, finish);
  }
}

/** A plain request's headers to send on: rewritten by the injection when there is one. */
export async function headersFor(
  inject: Pick<Injection, "rewrite"> | undefined,
  ctx: EgressContext,
  t: Target,
  req: http.IncomingMessage,
): Promise<Rewrite> {
  return inject
    ? inject.rewrite(ctx, t, req.headers, req.url ?? "")
    : { ok: true, headers: endToEnd(req.headers) };
}

function refused(x: Intercepted, t0: number, reason: string) {
  return {
    at: new Date(t0),
    decision: "refused" as const,
    reason,
    host: x.t.host,
    port: x.t.port,
    method: null,
    path: null,
    bytesOut: 0,
    bytesIn: 0,
    durationMs: Date.now() - t0,
  };
}
