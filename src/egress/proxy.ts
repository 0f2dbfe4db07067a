// The egress proxy: an HTTP forward proxy (absolute-URL requests and CONNECT tunnels) fed
// by the boxes' `egress` bridge. Who connects is the agent the bridge named (the socket's
// uid as boxd saw it); the proxy decides each request or tunnel by that agent's policy as it
// is now, and the address rule (src/net/rule.ts) whatever the policy says; it normalises every
// host, resolves names itself, connects to exactly the address it checked, re-checks every
// live tunnel when asked (a revoked entry ends it), and records every decision.
import http from "node:http";
import net from "node:net";
import type { Duplex } from "node:stream";
import { formatIp, isLocalName } from "../net/rule.js";
import {
  connectFailure,
  connectRefusal,
  oneLine,
  openReason,
  plainTarget,
  printable,
  relay,
  splice,
  splitHostPort,
  TUNNEL_HIGH_WATER,
  TUNNEL_POOL,
  TUNNEL_READ,
  type Carried,
  type Conn,
  type Decision,
  type EgressContext,
  type EgressRecord,
  type Live,
  type ProxyOptions,
} from "./wire.js";
import { socks } from "./socks.js";
import { headersFor } from "./inject.js";
import { byPolicy, deniedBy, matchEntry, targetOf, type CompiledPolicy, type Target } from "./policy.js";
import { GONE } from "./ask.js";

export type { EgressContext, EgressRecord, ProxyOptions } from "./wire.js";

export class EgressProxy {
  readonly #o: ProxyOptions;
  readonly #http: http.Server;
  readonly #conns = new WeakMap<object, Conn>();
  readonly #perAgent = new Map<string, number>();
  readonly #open = new Set<Duplex>();
  readonly #live = new Set<Live>();

  constructor(o: ProxyOptions) {
    this.#o = o;
    this.#http = http.createServer({ requireHostHeader: false, keepAliveTimeout: 30_000 });
    this.#http.on("request", (req: http.IncomingMessage, res: http.ServerResponse) => {
      void this.#request(req, res);
    });
    this.#http.on("connect", (req: http.IncomingMessage, socket: Duplex, head: Buffer) => {
      void this.#connect(req, socket, head);
    });
    this.#http.on("clientError", (err: NodeJS.ErrnoException, socket: Duplex) => {
      const c = this.#conns.get(socket);
      // what the parser could not read is a refusal too (a client that only went away is not)
      if (c && err.code?.startsWith("HPE_"))
        this.#record(c, {
          at: new Date(),
          decision: "refused",
          reason: `the proxy could not read the request (${err.code})`,
          host: "",
          port: 0,
          method: null,
          path: null,
          bytesOut: 0,
          bytesIn: 0,
          durationMs: 0,
        });
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
    // SOCKS5 (ALL_PROXY=socks5h://...) opens with its version byte; anything else is HTTP
    // (a client that goes away before its first byte: its half-open stream is closed)
    const gone = () => stream.destroy();
    stream.once("end", gone);
    stream.once("data", (first: Buffer) => {
      stream.off("end", gone);
      stream.pause();
      if (first[0] === 5) {
        {
          const c = this.#conns.get(stream) as Conn;
          void socks(stream, first, {
            record: (r) => this.#record(c, r),
            decide: (t) => this.#decide(c, t, null),
            tunnel: (t, d, t0, rest, say) => this.#tunnel(c, t, d, t0, stream, rest, say),
          });
        }
        return;
      }
      stream.unshift(first);
      this.#http.emit("connection", stream);
      stream.resume();
    });
    stream.resume();
  }

  /** A SOCKS5 client: no authentication, CONNECT only; the name is resolved here (socks5h). */
  /** Ends every connection (the server stops). */
  close(): void {
    for (const s of this.#open) s.destroy();
    this.#open.clear();
  }

  /**
   * Stores a decision. `runId`: the run that was going on when the request or tunnel began
   * (given by the callers of long-lived ones); else the run going on now.
   */
  #record(c: Conn, r: Omit<EgressRecord, "agentId" | "runId"> & { runId?: string | null }): void {
    this.#o.onRecord({
      agentId: c.ctx.agentId,
      runId: r.runId !== undefined ? r.runId : c.ctx.runId(),
      ...r,
      host: printable(r.host),
      path: r.path === null ? null : printable(r.path),
      reason: printable(oneLine(r.reason)),
    });
  }

  /**
   * The record writer of one request or tunnel that got under way: its target and run fixed
   * when it began, its bytes and duration read when it is told (allowed when it ends, refused
   * when it is cut off).
   */
  #teller(
    c: Conn,
    runId: string | null,
    t0: number,
    target: Pick<EgressRecord, "host" | "port" | "method" | "path">,
    bytes: () => { out: number; in: number },
  ) {
    return (decision: EgressRecord["decision"], reason: string, at: Date): void => {
      const b = bytes();
      this.#record(c, {
        ...target,
        runId,
        at,
        decision,
        reason,
        bytesOut: b.out,
        bytesIn: b.in,
        durationMs: Date.now() - t0,
      });
    };
  }

  /** A refusal before anything was sent or read. */
  #refusedNow(
    c: Conn,
    t0: number,
    r: Pick<EgressRecord, "reason" | "host" | "port" | "method" | "path">,
  ): void {
    this.#record(c, {
      ...r,
      at: new Date(t0),
      decision: "refused",
      bytesOut: 0,
      bytesIn: 0,
      durationMs: Date.now() - t0,
    });
  }

  /** The agents with a request or tunnel going on. */
  liveAgents(): string[] {
    return [...new Set([...this.#live].map((l) => l.c.ctx.agentId))];
  }

  /**
   * Decides again every request and tunnel of the agent going on, by its policy as it is now:
   * one the policy no longer allows is ended (and recorded as refused).
   */
  recheck(agentId: string, p: CompiledPolicy): void {
    for (const l of [...this.#live]) {
      if (l.c.ctx.agentId !== agentId) continue;
      const why = byPolicy(p, l.t, l.plain);
      if (!why.ok) l.end(`ended by a change of the policy: ${why.reason}`);
      // a host the list no longer names, only `ask`: it goes on only where its run was allowed it
      else if (why.ask && !this.#o.ask?.granted(l.c.ctx, l.t, l.plain))
        l.end(
          `ended by a change of the policy: ${l.t.host}:${l.t.port} is not in the agent's network allow list`,
        );
      else if (p.open && !matchEntry(p, l.t) && this.#o.rule.needsBound(l.address))
        l.end(`ended by a change of the policy: ${openReason(l.t, l.address)}`);
    }
  }

  async #decide(c: Conn, t: Target, plain: { method: string; path: string } | null): Promise<Decision> {
    if (c.over)
      return { ok: false, reason: `more than ${this.#o.maxConnections} connections at once from this agent` };
    // an address is judged before any policy: what the rule refuses, no policy opens
    if (t.ip) {
      const v = this.#o.rule.judge(t.ip, t.port);
      if (!v.ok) return { ...v, address: true };
    }
    const p = await c.ctx.policy();
    const why = byPolicy(p, t, plain);
    if (!why.ok) return why;
    let addrs: number[][];
    if (t.ip) addrs = [t.ip];
    else if (isLocalName(t.host)) addrs = [[127, 0, 0, 1]];
    else {
      try {
        addrs = await this.#o.resolve(t.host);
      } catch {
        addrs = [];
      }
      if (addrs.length === 0) return { ok: false, reason: `${t.host} does not resolve` };
    }
    // the connection goes to exactly this address: the one judged
    const addr = addrs[0] as number[];
    const denied = t.ip ? undefined : deniedBy(p, { host: t.host, port: t.port, ip: addr });
    if (denied !== undefined)
      return {
        ok: false,
        reason: `${t.host} resolves to an address on the organisation's network deny list (${denied})`,
      };
    const v = this.#o.rule.judge(addr, t.port);
    if (!v.ok)
      return { ok: false, reason: t.ip ? v.reason : `${t.host} resolves to ${v.reason}`, address: true };
    if (why.by === "open mode" && this.#o.rule.needsBound(addr))
      return { ok: false, reason: openReason(t, addr), address: true };
    // a host outside the list that `ask` names: held until a person decides (ask.ts)
    if (why.ask) {
      const held = await this.#o.ask?.hold(c.ctx, t, plain);
      if (!held) return { ok: false, reason: `${t.host}:${t.port} is not in the agent's network allow list` };
      return held.ok ? { ok: true, address: addr, reason: held.reason } : held;
    }
    return { ok: true, address: addr, reason: `allowed by ${why.by}` };
  }

  async #request(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const c = this.#conns.get(req.socket);
    const t0 = Date.now();
    const runId = c?.ctx.runId() ?? null;
    const method = req.method ?? "GET";
    const url = req.url ?? "";
    const refuse = (
      status: number,
      reason: string,
      host = "",
      port = 0,
      path: string | null = null,
      address = false,
    ) => {
      if (c)
        this.#refusedNow(c, t0, {
          reason,
          host,
          port,
          method,
          path,
        });
      const body = `warren egress: refused: ${oneLine(reason)}\n`;
      res.writeHead(status, {
        "content-type": "text/plain; charset=utf-8",
        "content-length": Buffer.byteLength(body),
        "x-warren-egress": "refused",
        // the address rule's refusal (no policy could open it), told apart for the server's own callers
        ...(address ? { "x-warren-egress-rule": "address" } : {}),
        connection: "close",
      });
      res.end(body);
    };
    if (!c) return void res.destroy();
    const plain = plainTarget(url, req.headers.host);
    if (!plain.ok) return refuse(plain.status, plain.reason, plain.host, plain.port, plain.path);
    const { parsed, t, port, path } = plain;
    const d = await this.#decide(c, t, { method, path });
    if (!d.ok) return refuse(403, d.reason, t.host, port, path, d.address === true);
    if (req.socket.destroyed) return refuse(403, GONE, t.host, port, path);
    const sent = await headersFor(this.#o.inject, c.ctx, t, req);
    if (!sent.ok) return refuse(403, sent.reason, t.host, port, path);
    const carried: Carried = { out: 0, in: 0 };
    const up = http.request({
      host: formatIp(d.address),
      port,
      method,
      path,
      headers: { ...sent.headers, host: parsed.host },
      agent: false,
      timeout: this.#o.connectTimeoutMs ?? 10_000,
    });
    up.on("socket", (s) => this.#o.track(s));
    const tell = this.#teller(c, runId, t0, { host: t.host, port, method, path }, () => carried);
    let done = false;
    const live: Live = {
      c,
      t,
      address: d.address,
      plain: { method, path },
      end: (reason) => {
        tell("refused", reason, new Date());
        finish(`; ${reason}`);
        up.destroy();
        res.destroy();
      },
    };
    this.#live.add(live);
    const finish = (extra: string) => {
      this.#live.delete(live);
      if (done) return;
      done = true;
      tell("allowed", `${d.reason}${extra}`, new Date(t0));
    };
    relay(req, res, up, carried, finish);
  }

  async #connect(req: http.IncomingMessage, socket: Duplex, head: Buffer): Promise<void> {
    const c = this.#conns.get(socket);
    const t0 = Date.now();
    if (!c) return void socket.destroy();
    const refuse = (status: number, reason: string, host: string, port: number, address = false) => {
      this.#refusedNow(c, t0, {
        reason,
        host,
        port,
        method: null,
        path: null,
      });
      socket.end(connectRefusal(status, reason, address));
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
    if (!d.ok) return refuse(403, d.reason, t.host, t.port, d.address === true);
    if (await this.#o.inject?.took(socket, head, c, t, d, (r) => this.#record(c, r), this.#live)) return;
    this.#tunnel(c, t, d, t0, socket, head, {
      opened: () => socket.write("HTTP/1.1 200 Connection Established\r\n\r\n"),
      failed: (code) => socket.end(connectFailure(code)),
    });
  }

  /** Connects to the checked address and splices it to the agent's stream; records it as it ends. */
  #tunnel(
    c: Conn,
    t: Target,
    d: { address: number[]; reason: string },
    t0: number,
    socket: Duplex,
    head: Buffer,
    say: { opened(): void; failed(code: string): void },
  ): void {
    if (socket.destroyed)
      return this.#refusedNow(c, t0, { reason: GONE, host: t.host, port: t.port, method: null, path: null });
    // the upstream is read into one large buffer (libuv's own reads are 64 KiB): fewer,
    // larger chunks towards the box, whose pace pauses it
    // Each read is copied into a buffer of the tunnel's own small pool, given back once
    // written: no allocation per chunk (at these rates, garbage collection was a fifth of
    // the proxy's time)
    const runId = c.ctx.runId();
    const readBuf = Buffer.allocUnsafe(TUNNEL_READ);
    const pool: Buffer[] = [];
    const up = net.connect({
      host: formatIp(d.address),
      port: t.port,
      onread: {
        buffer: readBuf,
        callback: (n: number, buf: Uint8Array) => {
          const copy = pool.pop() ?? Buffer.allocUnsafeSlow(TUNNEL_READ);
          copy.set(buf.subarray(0, n));
          socket.write(copy.subarray(0, n), () => {
            if (pool.length < TUNNEL_POOL) pool.push(copy);
          });
          return socket.writableLength <= TUNNEL_HIGH_WATER;
        },
      },
    });
    const timer = setTimeout(
      () => up.destroy(new Error("connect timed out")),
      this.#o.connectTimeoutMs ?? 10_000,
    );
    this.#o.track(up);
    const tell = this.#teller(c, runId, t0, { host: t.host, port: t.port, method: null, path: null }, () => ({
      out: up.bytesWritten,
      in: up.bytesRead,
    }));
    let connected = false;
    let recorded = false;
    const live: Live = {
      c,
      t,
      address: d.address,
      plain: null,
      end: (reason) => {
        tell("refused", reason, new Date());
        finish(`; ${reason}`);
        up.destroy();
        socket.destroy();
      },
    };
    this.#live.add(live);
    const finish = (extra: string) => {
      this.#live.delete(live);
      if (recorded) return;
      recorded = true;
      tell("allowed", `${d.reason}${extra}`, new Date(t0));
    };
    up.once("connect", () => {
      clearTimeout(timer);
      connected = true;
      up.setNoDelay(true);
      say.opened();
      if (head.length) up.write(head);
      splice(socket, up);
      socket.on("drain", () => up.resume());
      up.on("end", () => socket.end());
    });
    up.on("error", (err) => {
      clearTimeout(timer);
      const code = (err as NodeJS.ErrnoException).code ?? err.message;
      if (!connected) say.failed(code);
      else socket.destroy();
      finish(`; the upstream failed: ${code}`);
    });
    // each side's end reaches the other through the pipes (half-close passed on); what is
    // still queued is written first: only an error cuts a tunnel short
    up.on("close", (hadError) => {
      clearTimeout(timer);
      if (hadError || !connected) socket.destroy();
      finish("");
    });
    socket.on("error", () => up.destroy());
    socket.on("close", () => {
      if (!connected) up.destroy();
      else up.end();
    });
  }
}
