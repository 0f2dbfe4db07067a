// The egress proxy's parts that hold no state of its own: what it records and is given, the
// shapes of a connection and a decision, and the byte plumbing of tunnels and SOCKS (proxy.ts).
import type http from "node:http";
import type net from "node:net";
import type { Duplex } from "node:stream";
import { endToEnd } from "../net/headers.js";
import { formatIp, type AddressRule } from "../net/rule.js";
import { targetOf, type CompiledPolicy, type Target } from "./policy.js";
import type { EgressAsker } from "./ask.js";
import type { Injection } from "./inject.js";

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

/** The agent a bridged connection is, and what it may reach. */
export interface EgressContext {
  agentId: string;
  runId: () => string | null;
  /** The agent's policy as it is now: read for every request and tunnel. */
  policy: () => Promise<CompiledPolicy>;
}

export interface ProxyOptions {
  /** The addresses (bytes) of a name, in the order to try; none when it does not resolve. */
  resolve(host: string): Promise<number[][]>;
  /** Where a connection may go at all, whatever a policy says. */
  rule: Pick<AddressRule, "judge" | "needsBound">;
  /** Every upstream socket the proxy opens (the API never believes a request that arrives over one). */
  track(socket: net.Socket): void;
  /** Connections (bridged, open at once) per agent; past it every request is refused. */
  maxConnections: number;
  connectTimeoutMs?: number;
  onRecord(r: EgressRecord): void;
  /** Where a connection to a host the policy's `network.ask` names is held for a person (ask.ts). */
  ask?: EgressAsker;
  /** Secrets held by the proxy: markers replaced for their hosts, refused elsewhere (inject.ts). */
  inject?: Injection;
}

export interface Conn {
  ctx: EgressContext;
  over: boolean;
}

/** A refusal: `address` when the address rule refused it (no policy could open it). */
export type Decision =
  { ok: true; address: number[]; reason: string } | { ok: false; reason: string; address?: true };

/** A request or tunnel going on: re-checked when the policy may have changed. */
export interface Live {
  c: Conn;
  t: Target;
  address: number[];
  plain: { method: string; path: string } | null;
  /** Ends it, recording why. */
  end(reason: string): void;
}

/** host[:port] (IPv6 in brackets) split; port defaults to `dflt`. Null when malformed. */
export function splitHostPort(s: string, dflt: number | null): { host: string; port: number } | null {
  const m = /^(\[[0-9a-fA-F:.]+\]|[^:[\]]+)(?::(\d{1,5}))?$/.exec(s);
  if (!m || !m[1]) return null;
  const port = m[2] !== undefined ? Number(m[2]) : dflt;
  if (port === null) return null;
  return { host: m[1], port };
}

/** Queued bytes a tunnel lets build up on one side before it stops reading the other. */
export const TUNNEL_HIGH_WATER = 4 * 1024 * 1024;
/** How much of an upstream a tunnel reads at once. */
export const TUNNEL_READ = 1024 * 1024;
/** Buffers a tunnel keeps for reuse (what TUNNEL_HIGH_WATER lets wait, and one more). */
export const TUNNEL_POOL = TUNNEL_HIGH_WATER / TUNNEL_READ + 2;

/**
 * Copies from's bytes to to, and from's end to to's (half-close). Like pipe(), but it
 * reads on until TUNNEL_HIGH_WATER bytes wait (pipe() stops at the 16 KiB default,
 * a pause and resume for every chunk at a tunnel's rates).
 */
export function splice(from: Duplex, to: Duplex): void {
  from.on("data", (chunk: Buffer) => {
    to.write(chunk);
    if (to.writableLength > TUNNEL_HIGH_WATER) from.pause();
  });
  to.on("drain", () => from.resume());
  from.on("end", () => to.end());
  from.resume();
}

/** A SOCKS5 reply with this code (0 succeeded, 2 not allowed, 4 unreachable, 5 refused, 7, 8 unsupported). */
export function socksReply(code: number): Buffer {
  return Buffer.from([5, code, 0, 1, 0, 0, 0, 0, 0, 0]);
}

/** Takes exact byte counts from a stream (a SOCKS handshake); release() gives back the rest. */
export function reader(stream: Duplex, initial: Buffer) {
  let buf = initial;
  let ended = false;
  let wake: (() => void) | null = null;
  const onData = (d: Buffer) => {
    buf = buf.length ? Buffer.concat([buf, d]) : d;
    wake?.();
  };
  const onEnd = () => {
    ended = true;
    wake?.();
  };
  stream.on("data", onData);
  stream.on("end", onEnd);
  stream.on("close", onEnd);
  stream.resume();
  return {
    async take(n: number): Promise<Buffer> {
      while (buf.length < n) {
        if (ended) throw new Error("the client went away");
        await new Promise<void>((r) => (wake = r));
        wake = null;
      }
      const out = buf.subarray(0, n);
      buf = buf.subarray(n);
      return out;
    },
    release(): Buffer {
      stream.off("data", onData);
      stream.off("end", onEnd);
      stream.off("close", onEnd);
      stream.pause();
      return buf;
    },
  };
}

export const openReason = (t: Target, addr: number[]) =>
  `${t.ip ? `${t.host} is` : `${t.host} resolves to`} an address that is not public (${formatIp(addr)}); open mode reaches public addresses only`;

/** A CONNECT's refusal as the proxy answers it (the address rule's refusal told apart). */
export function connectRefusal(status: number, reason: string, address = false): string {
  const body = `warren egress: refused: ${oneLine(reason)}\n`;
  const text = status === 403 ? "Forbidden" : status === 502 ? "Bad Gateway" : "Bad Request";
  return `HTTP/1.1 ${status} ${text}\r\nContent-Type: text/plain; charset=utf-8\r\nX-Warren-Egress: refused\r\n${address ? "X-Warren-Egress-Rule: address\r\n" : ""}Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`;
}

/** A CONNECT whose upstream could not be reached, as the proxy answers it. */
export function connectFailure(code: string): string {
  const body = `warren egress: the upstream failed: ${oneLine(code)}\n`;
  return `HTTP/1.1 502 Bad Gateway\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`;
}

export const oneLine = (s: string) => s.replace(/[\r\n]+/g, " ").slice(0, 500);
/** Control characters (a NUL in a SOCKS name) written as \xNN: a record holds text only. */
export const printable = (s: string) => {
  let out = "";
  for (const ch of s) {
    const c = ch.charCodeAt(0);
    out += c < 0x20 || c === 0x7f ? `\\x${c.toString(16).padStart(2, "0")}` : ch;
  }
  return out;
};

/** A plain proxied request's target: its absolute http URL checked, and its Host header against it. */
export function plainTarget(
  url: string,
  hostHeader: string | undefined,
):
  | { ok: true; parsed: URL; t: Target; port: number; path: string }
  | { ok: false; status: number; reason: string; host?: string; port?: number; path?: string } {
  let parsed: URL | null = null;
  try {
    parsed = /^[a-z][a-z0-9+.-]*:\/\//i.test(url) ? new URL(url) : null;
  } catch {
    parsed = null;
  }
  if (!parsed)
    return {
      ok: false,
      status: 400,
      reason: "this is an HTTP proxy: ask for an absolute http:// URL, or CONNECT host:port",
    };
  if (parsed.protocol !== "http:")
    return {
      ok: false,
      status: 400,
      reason: `${parsed.protocol} URLs go through a CONNECT tunnel, not a plain request`,
    };
  const port = parsed.port ? Number(parsed.port) : 80;
  const path = `${parsed.pathname}${parsed.search}`;
  const t = targetOf(parsed.hostname, port);
  if (!t || parsed.username || parsed.password)
    return {
      ok: false,
      status: 400,
      reason: `the URL's host ${JSON.stringify(parsed.host)} is not a host name or an IP`,
      host: parsed.hostname,
      port,
      path,
    };
  if (hostHeader !== undefined) {
    const h = splitHostPort(hostHeader, 80);
    const ht = h && targetOf(h.host, h.port);
    if (!ht || ht.host !== t.host || ht.port !== t.port)
      return {
        ok: false,
        status: 403,
        reason: `the Host header ${JSON.stringify(hostHeader)} disagrees with the URL's host ${t.host}:${t.port}`,
        host: t.host,
        port,
        path,
      };
  }
  return { ok: true, parsed, t, port, path };
}

/** The bytes a relayed request carried each way. */
export interface Carried {
  out: number;
  in: number;
}

/**
 * Relays a plain request to its upstream and the upstream's answer back (end-to-end headers
 * only), counting the bytes each way; `finish` is told once the exchange ends, with why when
 * the upstream failed. The plain proxy and the intercepted connections relay the same way.
 */
export function relay(
  req: http.IncomingMessage,
  res: http.ServerResponse,
  up: http.ClientRequest,
  carried: Carried,
  finish: (extra: string) => void,
): void {
  req.on("data", (b: Buffer) => (carried.out += b.length));
  up.on("timeout", () => up.destroy(new Error("the upstream did not answer in time")));
  up.on("response", (ur) => {
    up.setTimeout(0);
    ur.on("data", (b: Buffer) => (carried.in += b.length));
    res.writeHead(ur.statusCode ?? 502, ur.statusMessage, endToEnd(ur.headers));
    ur.pipe(res);
    ur.on("error", () => res.destroy());
  });
  up.on("error", (err: NodeJS.ErrnoException) => {
    if (!res.headersSent) {
      res.writeHead(502, { "content-type": "text/plain; charset=utf-8", connection: "close" });
      res.end(`warren egress: the upstream failed: ${oneLine(err.message)}\n`);
    } else res.destroy();
    finish(`; the upstream failed: ${err.code ?? err.message}`);
  });
  res.on("close", () => {
    if (!res.writableFinished) up.destroy();
    finish("");
  });
  req.pipe(up);
}
