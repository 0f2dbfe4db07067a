// The server's own outbound proxy (WARREN_OUTBOUND_PROXY): when it is set, the guarded
// connector reaches every target through it. The address rule has already judged the target;
// the proxy is asked for a tunnel (CONNECT) to exactly the address that was checked, never to a
// name it would resolve again, and the request (TLS, for https, with the name kept for SNI and
// the certificate) runs inside that tunnel.
import http from "node:http";
import type { Socket } from "node:net";
import tls from "node:tls";

/** Where the proxy is, from its URL (http://[user:password@]host:port). */
export interface OutboundProxy {
  host: string;
  port: number;
  /** The Proxy-Authorization header, when the URL carries credentials. */
  authorization: string | undefined;
}

/** The proxy a URL names, or the problem with it (only an http:// proxy is spoken to). */
export function parseOutboundProxy(raw: string): OutboundProxy | string {
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    return "is not a URL (http://host:port)";
  }
  if (u.protocol !== "http:")
    return `must be an http:// URL (a proxy spoken to in plain HTTP), not ${u.protocol}`;
  if (u.pathname !== "/" || u.search !== "" || u.hash !== "") return "must be http://host:port, with no path";
  const user = decodeURIComponent(u.username);
  const pass = decodeURIComponent(u.password);
  return {
    host: u.hostname.replace(/^\[|\]$/g, ""),
    port: u.port === "" ? 80 : Number(u.port),
    authorization:
      user || pass ? `Basic ${Buffer.from(`${user}:${pass}`, "utf8").toString("base64")}` : undefined,
  };
}

/**
 * A connected socket to `address:port` through the proxy (TLS over it when `servername` or
 * `secure` says so). A refusal by the proxy is an error naming its status.
 */
export function tunnel(
  proxy: OutboundProxy,
  target: { address: string; port: number; servername: string | undefined },
  secure: boolean,
  signal: AbortSignal | null,
): Promise<Socket> {
  const authority = target.address.includes(":")
    ? `[${target.address}]:${target.port}`
    : `${target.address}:${target.port}`;
  return new Promise((resolve, reject) => {
    const req = http.request({
      host: proxy.host,
      port: proxy.port,
      method: "CONNECT",
      path: authority,
      agent: false,
      headers: {
        host: authority,
        ...(proxy.authorization ? { "proxy-authorization": proxy.authorization } : {}),
      },
    });
    const onAbort = () => req.destroy(signal?.reason instanceof Error ? signal.reason : new Error("aborted"));
    signal?.addEventListener("abort", onAbort, { once: true });
    const done = () => signal?.removeEventListener("abort", onAbort);
    req.once("connect", (res, socket) => {
      done();
      if (res.statusCode !== 200) {
        socket.destroy();
        return reject(
          new Error(`the outbound proxy refused the tunnel to ${authority} (status ${res.statusCode})`),
        );
      }
      if (!secure) return resolve(socket);
      const s = tls.connect({
        socket,
        host: target.servername ?? target.address,
        ...(target.servername ? { servername: target.servername } : {}),
      });
      s.once("secureConnect", () => resolve(s));
      s.once("error", reject);
    });
    req.once("error", (err) => {
      done();
      reject(
        new Error(`the outbound proxy ${proxy.host}:${proxy.port} could not be reached: ${err.message}`),
      );
    });
    req.end();
  });
}
