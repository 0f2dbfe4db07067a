// Who runs as a uid of a machine: the slot the uid gives (placement.ts) names one agent of the
// machine. The one place a uid names an agent, read by agents' calls and the boxes' bridges.
import { and, eq } from "drizzle-orm";
import type { Db } from "../store/index.js";
import { memo, schema } from "../store/index.js";
import { UID_BASE, type AgentAt, type AgentAtUid } from "./placement.js";

/** The agent of a machine that runs as `uid` (the uid boxd saw for a connection or a call), or null. */
export function agentAtUid(db: Db): AgentAtUid {
  // read again after any change of an agent
  const cache = memo<string, AgentAt | null>(db, [schema.agents]);
  return (machineId, uid) => {
    const slot = uid - UID_BASE;
    if (!Number.isInteger(slot) || slot < 0) return Promise.resolve(null);
    return cache.get(`${machineId}\n${slot}`, async () => {
      const [a] = await db
        .select({ id: schema.agents.id, orgId: schema.agents.orgId })
        .from(schema.agents)
        .where(and(eq(schema.agents.machineId, machineId), eq(schema.agents.slot, slot)));
      return a ? Object.freeze(a) : null;
    });
  };
}
