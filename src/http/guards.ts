// Which hosts and origins the server answers, as pure functions.
import { isIP } from "node:net";

/** The hostname of a Host header value, lowercased, without brackets; null when malformed. */
export function hostnameOf(host: string | undefined): string | null {
  if (!host || host.length > 300 || /[\s/@?#\\]/.test(host)) return null;
  try {
    const u = new URL(`http://${host}`);
    return u.hostname.replace(/^\[|\]$/g, "").toLowerCase();
  } catch {
    return null;
  }
}

export function isLoopbackHost(hostname: string): boolean {
  if (hostname === "localhost" || hostname.endsWith(".localhost")) return true;
  if (isIP(hostname) === 4) return hostname.startsWith("127.");
  if (isIP(hostname) === 6) return hostname === "::1" || hostname === "0:0:0:0:0:0:0:1";
  return false;
}

export function hostAllowed(host: string | undefined, publicBaseUrl: string | undefined): boolean {
  const name = hostnameOf(host);
  if (name === null) return false;
  if (isLoopbackHost(name)) return true;
  if (publicBaseUrl) return new URL(publicBaseUrl).hostname.toLowerCase() === name;
  return false;
}

/**
 * A state change or WebSocket upgrade is accepted only from a page of this server: no Origin
 * (a CLI or script), or an Origin whose host is the request's own Host or PUBLIC_BASE_URL's origin.
 */
export function originAllowed(
  origin: string | undefined,
  host: string | undefined,
  publicBaseUrl: string | undefined,
): boolean {
  if (origin === undefined) return true;
  let o: URL;
  try {
    o = new URL(origin);
  } catch {
    return false;
  }
  if (o.protocol !== "http:" && o.protocol !== "https:") return false;
  if (publicBaseUrl && o.origin === new URL(publicBaseUrl).origin) return true;
  if (host && o.host.toLowerCase() === host.toLowerCase()) return true;
  // a loopback page of the same port under another loopback name (localhost vs 127.0.0.1)
  const reqName = hostnameOf(host);
  if (reqName && isLoopbackHost(reqName) && isLoopbackHost(o.hostname.replace(/^\[|\]$/g, ""))) {
    const reqPort = new URL(`http://${host}`).port;
    return o.port === reqPort;
  }
  return false;
}

export const isStateChange = (method: string): boolean =>
  !["GET", "HEAD", "OPTIONS"].includes(method.toUpperCase());
