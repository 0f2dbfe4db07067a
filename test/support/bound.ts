// The operator's bound (WARREN_EGRESS_PRIVATE_ALLOW) for tests whose tools and models are fake
// servers on loopback: exactly their ports, so the address rule lets those through and nothing
// else on this host (the server's own API stays refused whatever the bound says).
import { parseConfig } from "../../src/config/index.js";
import { createConnector, type GuardedFetch } from "../../src/net/connector.js";
import { OwnEndpoints } from "../../src/net/own.js";
import { AddressRule } from "../../src/net/rule.js";

/** A loopback server's URL or port. */
type Target = string | number | { url?: string; baseUrl?: string; port?: number };

function portOf(t: Target): number {
  if (typeof t === "number") return t;
  if (typeof t === "string") return Number(new URL(t).port);
  if (t.port !== undefined) return t.port;
  const u = t.url ?? t.baseUrl;
  if (u !== undefined) return Number(new URL(u).port);
  throw new Error("a target without a URL or a port");
}

/** `127.0.0.1:<port>,...` of the servers: the value of WARREN_EGRESS_PRIVATE_ALLOW that admits them. */
export function privateAllow(...targets: Target[]): string {
  return targets.map((t) => `127.0.0.1:${portOf(t)}`).join(",");
}

/** A guarded connector whose bound admits these loopback servers (for a Gateway built in a test). */
export function boundConnector(...targets: Target[]): GuardedFetch {
  const own = new OwnEndpoints();
  const bound = parseConfig({
    WARREN_EGRESS_PRIVATE_ALLOW: privateAllow(...targets),
  }).WARREN_EGRESS_PRIVATE_ALLOW;
  return createConnector({ rule: new AddressRule({ bound, own }), own });
}
