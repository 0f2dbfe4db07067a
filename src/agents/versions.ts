// An agent's versions: every spec written is a new version that never changes; the agent
// points at its current one (and keeps its sandbox policy beside it, for its commands).
import { desc, eq } from "drizzle-orm";
import type { AgentSpec } from "../contract/spec.js";
import { WarrenError } from "../errors.js";
import type { AgentInsert, AgentRow, Db } from "../store/index.js";
import { schema } from "../store/index.js";

/**
 * Writes `spec` as the agent's next version, by `by` (an email); with `current`, the agent
 * points at it and takes its sandbox policy, with `set`'s other changes, in one transaction.
 */
export async function appendVersion(
  db: Db,
  agentId: string,
  spec: AgentSpec,
  by: string,
  opts: { current: boolean; set?: Partial<AgentInsert> },
): Promise<{ version: number; row: AgentRow }> {
  return db.transaction(async (tx) => {
    // one new version at a time per agent: the agent's row is held until the commit
    const [held] = await tx.select().from(schema.agents).where(eq(schema.agents.id, agentId)).for("update");
    if (!held) throw new WarrenError("not_found", "agent was not found");
    const [last] = await tx
      .select({ version: schema.agentSpecs.version })
      .from(schema.agentSpecs)
      .where(eq(schema.agentSpecs.agentId, agentId))
      .orderBy(desc(schema.agentSpecs.version))
      .limit(1);
    const version = (last?.version ?? 0) + 1;
    await tx.insert(schema.agentSpecs).values({ agentId, version, spec });
    await tx.insert(schema.agentVersionAuthors).values({ agentId, version, createdBy: by });
    const set: Partial<AgentInsert> = { ...opts.set };
    if (opts.current) Object.assign(set, currentSet(version, spec));
    if (Object.keys(set).length === 0) return { version, row: held };
    const [row] = await tx.update(schema.agents).set(set).where(eq(schema.agents.id, agentId)).returning();
    if (!row) throw new WarrenError("not_found", "agent was not found");
    return { version, row };
  });
}

/** What the agent's row says once `version` is its current one. */
export const currentSet = (version: number, spec: AgentSpec): Partial<AgentInsert> => ({
  specVersion: version,
  sandboxPolicy: spec.sandbox_policy,
});
