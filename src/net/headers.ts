// The headers of one hop of HTTP: never passed on by anything of the server that relays a
// request or an answer (the egress proxy, the previews), with those the Connection header names.
import type http from "node:http";

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
  "host",
]);

/** The headers without this hop's own (Host included: the relay sets the next hop's). */
export function endToEnd(h: http.IncomingHttpHeaders): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  const named = new Set(
    String(h.connection ?? "")
      .split(",")
      .map((s) => s.trim().toLowerCase()),
  );
  for (const [k, v] of Object.entries(h)) {
    const name = k.toLowerCase();
    if (v !== undefined && !HOP.has(name) && !named.has(name)) out[k] = v;
  }
  return out;
}
