// Which secrets reach an agent (granted to its organisation, one of its guilds or itself),
// opened: read once and kept until a secret, a grant or a guild's members change (the
// store's memo), so that a command's start reads nothing of them when nothing changed.
import { and, asc, eq, inArray, or } from "drizzle-orm";
import type { SecretUse } from "../contract/types.js";
import type { Db } from "../store/index.js";
import { memo, schema } from "../store/index.js";
import { open } from "./crypto.js";

type AgentRef = { id: string; orgId: string };

/** One secret that reaches an agent, opened (an alias holds the value of the secret it names). */
export interface Opened {
  name: string;
  description: string;
  use: SecretUse;
  value: Buffer;
  hosts: string[];
}

const reachTables = [schema.secrets, schema.secretGrants, schema.guildAgents, schema.guilds];

export class Reaching {
  readonly #db: Db;
  readonly #key: Buffer;
  readonly #opened;

  /** By organisation: the secrets granted to it, opened (what reaches most of its agents). */
  readonly #orgWide;
  /** By organisation: its agents with grants of their own or in a guild; the others get #orgWide. */
  readonly #personal;

  constructor(db: Db, key: Buffer) {
    this.#db = db;
    this.#key = key;
    this.#opened = memo<string, readonly Readonly<Opened>[]>(db, reachTables);
    this.#orgWide = memo<string, readonly Readonly<Opened>[]>(db, reachTables);
    this.#personal = memo<string, ReadonlySet<string>>(db, reachTables);
  }

  /** The memo's key of an agent: what reaches it depends on its organisation too. */
  static keyOf(agent: AgentRef): string {
    return `${agent.orgId}\n${agent.id}`;
  }

  /** A memo kept while what reaches agents is unchanged. */
  memo<V>() {
    return memo<string, V>(this.#db, reachTables);
  }

  /** The secrets that reach an agent now, opened, by name. Callers must not change them. */
  opened(agent: AgentRef): Promise<readonly Readonly<Opened>[]> {
    return this.#opened.get(Reaching.keyOf(agent), async () => {
      // an agent with no grant of its own and in no guild gets what its organisation has:
      // read once for all of them, not once for each
      const personal = await this.#personal.get(agent.orgId, () => this.#personalOf(agent.orgId));
      if (personal.has(agent.id)) return this.#open(agent);
      return this.#orgWide.get(agent.orgId, () => this.#open(agent, { orgOnly: true }));
    });
  }

  /** The organisation's agents that a grant names or that are in one of its guilds. */
  async #personalOf(orgId: string): Promise<ReadonlySet<string>> {
    const granted = await this.#db
      .select({ id: schema.secretGrants.targetId })
      .from(schema.secretGrants)
      .innerJoin(schema.secrets, eq(schema.secrets.id, schema.secretGrants.secretId))
      .where(and(eq(schema.secrets.orgId, orgId), eq(schema.secretGrants.scope, "agent")))
      .union(
        this.#db
          .select({ id: schema.guildAgents.agentId })
          .from(schema.guildAgents)
          .innerJoin(schema.guilds, eq(schema.guilds.id, schema.guildAgents.guildId))
          .where(eq(schema.guilds.orgId, orgId)),
      );
    return new Set(granted.map((r) => r.id));
  }

  /**
   * The secrets granted to the agent's organisation, one of its guilds or itself (`orgOnly`:
   * to its organisation alone).
   */
  async rows(agent: AgentRef, o: { orgOnly?: boolean } = {}) {
    // one round trip: the agent's guilds are a subquery, not a query of their own
    const guilds = this.#db
      .select({ id: schema.guildAgents.guildId })
      .from(schema.guildAgents)
      .where(eq(schema.guildAgents.agentId, agent.id));
    const reach = [
      and(eq(schema.secretGrants.scope, "org"), eq(schema.secretGrants.targetId, agent.orgId)),
      ...(o.orgOnly
        ? []
        : [
            and(eq(schema.secretGrants.scope, "agent"), eq(schema.secretGrants.targetId, agent.id)),
            and(eq(schema.secretGrants.scope, "guild"), inArray(schema.secretGrants.targetId, guilds)),
          ]),
    ];
    return this.#db
      .selectDistinct({
        id: schema.secrets.id,
        name: schema.secrets.name,
        sealed: schema.secrets.sealed,
        aliasOf: schema.secrets.aliasOf,
        description: schema.secrets.description,
        use: schema.secrets.use,
        hosts: schema.secrets.hosts,
      })
      .from(schema.secrets)
      .innerJoin(schema.secretGrants, eq(schema.secretGrants.secretId, schema.secrets.id))
      .where(and(eq(schema.secrets.orgId, agent.orgId), or(...reach)))
      .orderBy(asc(schema.secrets.name));
  }

  async #open(agent: AgentRef, o: { orgOnly?: boolean } = {}): Promise<Opened[]> {
    const rows = await this.rows(agent, o);
    const out: Opened[] = [];
    if (rows.length === 0) return out;
    const targets = rows.filter((r) => r.aliasOf !== null).map((r) => r.aliasOf!);
    const sealedOf = new Map<string, string>();
    const hostsOf = new Map<string, string[]>();
    for (const r of rows) {
      if (r.sealed !== null) sealedOf.set(r.id, r.sealed);
      hostsOf.set(r.id, r.hosts);
    }
    const missing = targets.filter((t) => !sealedOf.has(t));
    if (missing.length > 0) {
      const more = await this.#db
        .select({ id: schema.secrets.id, sealed: schema.secrets.sealed, hosts: schema.secrets.hosts })
        .from(schema.secrets)
        .where(inArray(schema.secrets.id, missing));
      for (const m of more) {
        if (m.sealed !== null) sealedOf.set(m.id, m.sealed);
        hostsOf.set(m.id, m.hosts);
      }
    }
    for (const r of rows) {
      const from = r.aliasOf ?? r.id;
      const s = sealedOf.get(from);
      if (s === undefined) continue;
      // an alias is sent where the secret it names may be sent, never further
      out.push({
        name: r.name,
        description: r.description,
        use: r.use,
        value: open(this.#key, from, s),
        hosts: hostsOf.get(from) ?? [],
      });
    }
    return out;
  }
}
