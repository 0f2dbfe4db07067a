import { and, asc, eq, inArray } from "drizzle-orm";
import type { Access, Identity } from "../access/index.js";
import type { Agents } from "../agents/service.js";
import { WarrenError } from "../errors.js";
import { newId } from "../ids.js";
import type { Db } from "../store/index.js";
import { schema } from "../store/index.js";
import type { Guild } from "../contract/types.js";
import type { EventBus } from "../events/index.js";

export class Guilds {
  constructor(
    private readonly db: Db,
    private readonly access: Access,
    private readonly agents: Agents,
    /** Where an agent's joining is told (its guild's dispatcher may have messages waiting for one). */
    private readonly events?: Pick<EventBus, "emit">,
  ) {}

  async create(who: Identity, input: { org_id: string; name: string }): Promise<Guild> {
    await this.access.require(input.org_id, who, "write", "organisation");
    const id = newId("gld");
    await this.db.insert(schema.guilds).values({ id, orgId: input.org_id, name: input.name });
    return { id, org_id: input.org_id, name: input.name, agent_ids: [] };
  }

  async #load(who: Identity, id: string, perm: "read" | "write") {
    const [g] = await this.db.select().from(schema.guilds).where(eq(schema.guilds.id, id));
    if (!g) throw new WarrenError("not_found", "guild was not found");
    await this.access.require(g.orgId, who, perm, "guild");
    return g;
  }

  async #members(ids: string[]): Promise<Map<string, string[]>> {
    const out = new Map<string, string[]>();
    if (ids.length === 0) return out;
    const rows = await this.db
      .select()
      .from(schema.guildAgents)
      .where(inArray(schema.guildAgents.guildId, ids))
      .orderBy(asc(schema.guildAgents.agentId));
    for (const r of rows) out.set(r.guildId, [...(out.get(r.guildId) ?? []), r.agentId]);
    return out;
  }

  async get(who: Identity, id: string): Promise<Guild> {
    const g = await this.#load(who, id, "read");
    const m = await this.#members([id]);
    return { id: g.id, org_id: g.orgId, name: g.name, agent_ids: m.get(id) ?? [] };
  }

  async list(who: Identity, orgId?: string): Promise<Guild[]> {
    const orgIds = await this.access.visibleOrgIds(who, orgId);
    if (orgIds.length === 0) return [];
    const rows = await this.db
      .select()
      .from(schema.guilds)
      .where(inArray(schema.guilds.orgId, orgIds))
      .orderBy(asc(schema.guilds.createdAt), asc(schema.guilds.id));
    const m = await this.#members(rows.map((r) => r.id));
    return rows.map((g) => ({ id: g.id, org_id: g.orgId, name: g.name, agent_ids: m.get(g.id) ?? [] }));
  }

  async addAgent(who: Identity, guildId: string, agentId: string): Promise<void> {
    const g = await this.#load(who, guildId, "write");
    const agent = await this.agents.load(who, agentId, "read");
    if (agent.orgId !== g.orgId) throw new WarrenError("not_found", "agent was not found");
    await this.db.insert(schema.guildAgents).values({ guildId, agentId }).onConflictDoNothing();
    this.events?.emit("guild.joined", { guildId, agentId: agent.id });
  }

  async removeAgent(who: Identity, guildId: string, agentId: string): Promise<void> {
    await this.#load(who, guildId, "write");
    const rows = await this.db
      .delete(schema.guildAgents)
      .where(and(eq(schema.guildAgents.guildId, guildId), eq(schema.guildAgents.agentId, agentId)))
      .returning();
    if (rows.length === 0) throw new WarrenError("not_found", "agent is not in this guild");
  }

  async delete(who: Identity, id: string): Promise<void> {
    await this.#load(who, id, "write");
    await this.db.transaction(async (tx) => {
      // a guild's secret grants go with it (grants name their target without a foreign key)
      await tx
        .delete(schema.secretGrants)
        .where(and(eq(schema.secretGrants.scope, "guild"), eq(schema.secretGrants.targetId, id)));
      await tx.delete(schema.guilds).where(eq(schema.guilds.id, id));
    });
  }
}
