// Whether a URL's host is in an agent's sandbox_policy.network.allow, by the entry forms
// src/contract/policy.ts accepts: `host`, `host:port`, `*.domain`, `*.domain:port`, an IPv4
// address. An entry without a port allows the URL's standard ports (80 for http, 443 for
// https); `*.domain` allows the names under the domain, not the domain itself (and never an
// IP address).
import { isIP } from "node:net";

function defaultPort(url: URL): number {
  return url.protocol === "https:" ? 443 : 80;
}

/** True when the entry allows the URL's host and port. */
function entryAllows(entry: string, host: string, port: number, standard: boolean): boolean {
  let pattern = entry.trim().toLowerCase();
  let entryPort: number | null = null;
  const colon = pattern.lastIndexOf(":");
  if (colon !== -1) {
    entryPort = Number(pattern.slice(colon + 1));
    pattern = pattern.slice(0, colon);
  }
  if (entryPort === null ? !standard : entryPort !== port) return false;
  if (pattern.startsWith("*."))
    return !isIP(host) && host.endsWith(pattern.slice(1)) && host.length > pattern.length - 1;
  return host === pattern;
}

/** Whether `url` may be fetched under the allow-list; only http and https ever are. */
export function urlAllowed(allow: readonly string[], url: URL): boolean {
  if (url.protocol !== "http:" && url.protocol !== "https:") return false;
  // URL gives IPv6 hosts in brackets; no entry form names one, so none matches
  const host = url.hostname.toLowerCase().replace(/\.$/, "");
  const port = url.port === "" ? defaultPort(url) : Number(url.port);
  const standard = port === defaultPort(url);
  return allow.some((e) => entryAllows(e, host, port, standard));
}
