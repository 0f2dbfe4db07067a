// The proxy's SOCKS5 front (no authentication, CONNECT only): the handshake read from the
// bridged stream, the target decided and tunnelled by the proxy (proxy.ts), every refusal
// recorded with why.
import type { Duplex } from "node:stream";
import { formatIp } from "../net/rule.js";
import { targetOf, type Target } from "./policy.js";
import { reader, socksReply, type Decision, type EgressRecord } from "./wire.js";

/** What the SOCKS front asks of the proxy, for one connection. */
export interface SocksProxy {
  record(r: Omit<EgressRecord, "agentId" | "runId">): void;
  decide(t: Target): Promise<Decision>;
  tunnel(
    t: Target,
    d: { address: number[]; reason: string },
    t0: number,
    rest: Buffer,
    say: { opened(): void; failed(code: string): void },
  ): void;
}

export async function socks(stream: Duplex, first: Buffer, p: SocksProxy): Promise<void> {
  const t0 = Date.now();
  const r = reader(stream, first);
  const timer = setTimeout(() => stream.destroy(), 10_000);
  let t: Target | null = null;
  let host = "";
  let port = 0;
  const refused = (reason: string, reply: Buffer) => {
    p.record({
      at: new Date(t0),
      decision: "refused",
      reason,
      host: t?.host ?? host.slice(0, 255),
      port,
      method: null,
      path: null,
      bytesOut: 0,
      bytesIn: 0,
      durationMs: Date.now() - t0,
    });
    stream.end(reply);
  };
  try {
    const [, n = 0] = await r.take(2);
    const methods = await r.take(n);
    if (!methods.includes(0))
      return refused("SOCKS5 without authentication method 0 (none)", Buffer.from([5, 0xff]));
    stream.write(Buffer.from([5, 0]));
    const [ver, cmd, , atyp] = await r.take(4);
    if (atyp === 1) host = [...(await r.take(4))].join(".");
    else if (atyp === 4) host = formatIp([...(await r.take(16))]);
    else if (atyp === 3) host = (await r.take((await r.take(1))[0] ?? 0)).toString("latin1");
    else return refused(`SOCKS5 address type ${atyp ?? "none"} is not supported`, socksReply(8));
    port = (await r.take(2)).readUInt16BE(0);
    if (ver !== 5 || cmd !== 1)
      return refused(`SOCKS5 command ${cmd ?? "none"} is not supported (CONNECT only)`, socksReply(7));
    t = targetOf(host, port);
    if (!t)
      return refused(`${JSON.stringify(host.slice(0, 255))} is not a host name or an IP`, socksReply(8));
    const d = await p.decide(t);
    if (!d.ok) return refused(d.reason, socksReply(2));
    clearTimeout(timer);
    p.tunnel(t, d, t0, r.release(), {
      opened: () => stream.write(socksReply(0)),
      failed: (code) => stream.end(socksReply(code === "ECONNREFUSED" ? 5 : 4)),
    });
  } catch {
    stream.destroy();
  } finally {
    clearTimeout(timer);
  }
}
