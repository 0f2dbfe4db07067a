// The markers of secrets of use egress: what an agent's commands see in WARREN_SECRET_<NAME>
// in place of the value, which only the egress proxy puts back (src/egress/inject.ts). A
// marker is derived from the master key, the agent and the secret's name: the same for every
// command of the agent, another for each agent, and telling nothing of the value.
import crypto from "node:crypto";
import type { Opened } from "./reaching.js";

/** The variable a secret of use egress reaches commands as. */
export const markerVariable = (name: string) => `WARREN_SECRET_${name}`;

export function markerOf(key: Buffer, agentId: string, name: string): string {
  const id = crypto
    .createHmac("sha256", key)
    .update(`egress marker\0${agentId}\0${name}`)
    .digest("base64url");
  return `warren-secret:${id.slice(0, 32)}`;
}

/** A secret of use egress as the proxy holds it. */
export interface EgressHeld {
  name: string;
  marker: string;
  value: string;
  hosts: readonly string[];
}

/** Per list of opened secrets (one list may reach many agents of an organisation), per agent. */
const held = new WeakMap<readonly Readonly<Opened>[], Map<string, readonly EgressHeld[]>>();

/** The secrets of use egress among those that reach an agent, with their markers (kept per list). */
export function egressOf(
  key: Buffer,
  agentId: string,
  opened: readonly Readonly<Opened>[],
): readonly EgressHeld[] {
  let byAgent = held.get(opened);
  if (!byAgent) held.set(opened, (byAgent = new Map()));
  let list = byAgent.get(agentId);
  if (!list) {
    list = opened
      .filter((o) => o.use === "egress")
      .map((o) => ({
        name: o.name,
        marker: markerOf(key, agentId, o.name),
        value: o.value.toString("utf8"),
        hosts: o.hosts,
      }));
    byAgent.set(agentId, list);
  }
  return list;
}
