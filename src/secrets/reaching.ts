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

const reachTables = [schema.secrets, schema.secretGrants, schema.guildAgents];

export class Reaching {
  readonly #db: Db;
  readonly #key: Buffer;
  readonly #opened;

  constructor(db: Db, key: Buffer) {
    this.#db = db;
    this.#key = key;
    this.#opened = memo<string, readonly Readonly<Opened>[]>(db, reachTables);
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
    return this.#opened.get(Reaching.keyOf(agent), () => this.#open(agent));
  }

  /** The secrets granted to the agent's organisation, one of its guilds or itself. */
  async rows(agent: AgentRef) {
    // one round trip: the agent's guilds are a subquery, not a query of their own
    const guilds = this.#db
      .select({ id: schema.guildAgents.guildId })
      .from(schema.guildAgents)
      .where(eq(schema.guildAgents.agentId, agent.id));
    const reach = [
      and(eq(schema.secretGrants.scope, "org"), eq(schema.secretGrants.targetId, agent.orgId)),
      and(eq(schema.secretGrants.scope, "agent"), eq(schema.secretGrants.targetId, agent.id)),
      and(eq(schema.secretGrants.scope, "guild"), inArray(schema.secretGrants.targetId, guilds)),
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

  async #open(agent: AgentRef): Promise<Opened[]> {
    const rows = await this.rows(agent);
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
