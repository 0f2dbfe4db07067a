// Versions of an agent's spec: listed, read whole (sandbox policy included), written beside
// the current one, made current (promoted or rolled back), and a canary that sends a share of
// runs to another version, sticky by routing key. A run keeps the version it was made from.
import { createHash, randomUUID } from "node:crypto";
import { and, asc, count, eq, gte, sql, sum } from "drizzle-orm";
import type { Identity } from "../access/index.js";
import {
  checkNetworkPolicy,
  nextSpec,
  type Agents,
  type PolicyCheck,
  type SpecPatch,
} from "../agents/service.js";
import { appendVersion, currentSet } from "../agents/versions.js";
import type { AgentSpec } from "../contract/spec.js";
import type { Canary, Version, VersionSummary } from "../contract/types.js";
import { WarrenError } from "../errors.js";
import type { AddressRule } from "../net/rule.js";
import { checkToolHeaders } from "../secrets/tool-headers.js";
import type { AgentRow, Db } from "../store/index.js";
import { schema } from "../store/index.js";
import type { Bundles } from "../workspaces/bundles.js";

export interface VersionsOptions {
  db: Db;
  agents: Pick<Agents, "load" | "specOf" | "specAt">;
  checkToolPolicy: PolicyCheck;
  addressRule?: Pick<AddressRule, "entryProblem">;
  /**
   * Throws version.gate unless the agent's gate lets `version` take runs (made current, a
   * canary's; null: a version never evaluated).
   */
  gate?: (agentId: string, version: number | null) => Promise<void>;
  /** A contract flow's agent: a new version stays within its permission bundle (400 bundle.exceeded). */
  bundles?: Pick<Bundles, "check">;
}

/** Where a routing key falls in [0, 1): the same key, the same place, for one agent. */
export function bucketOf(agentId: string, key: string): number {
  return createHash("sha256").update(`${agentId}\n${key}`).digest().readUInt32BE(0) / 2 ** 32;
}

export class Versions {
  readonly #o: VersionsOptions;

  constructor(o: VersionsOptions) {
    this.#o = o;
  }

  async list(who: Identity, agentId: string): Promise<VersionSummary[]> {
    const agent = await this.#o.agents.load(who, agentId, "read");
    const s = schema.agentSpecs;
    const a = schema.agentVersionAuthors;
    const rows = await this.#o.db
      .select({ version: s.version, createdAt: s.createdAt, createdBy: a.createdBy })
      .from(s)
      .leftJoin(a, and(eq(a.agentId, s.agentId), eq(a.version, s.version)))
      .where(eq(s.agentId, agent.id))
      .orderBy(asc(s.version));
    const canary = await this.#canaryRow(agent.id);
    return rows.map((r) => ({
      version: r.version,
      created_at: r.createdAt.toISOString(),
      created_by: r.createdBy,
      current: r.version === agent.specVersion,
      ...(canary?.version === r.version ? { canary_share: canary.share } : {}),
    }));
  }

  async get(who: Identity, agentId: string, version: number): Promise<Version> {
    const agent = await this.#o.agents.load(who, agentId, "read");
    const spec = await this.#o.agents.specAt(agent.id, version);
    const s = schema.agentSpecs;
    const a = schema.agentVersionAuthors;
    const [meta] = await this.#o.db
      .select({ createdAt: s.createdAt, createdBy: a.createdBy })
      .from(s)
      .leftJoin(a, and(eq(a.agentId, s.agentId), eq(a.version, s.version)))
      .where(and(eq(s.agentId, agent.id), eq(s.version, version)));
    if (!spec || !meta) throw new WarrenError("not_found", `the agent has no version ${version}`);
    const canary = await this.#canaryRow(agent.id);
    return {
      agent_id: agent.id,
      version,
      created_at: meta.createdAt.toISOString(),
      created_by: meta.createdBy,
      current: version === agent.specVersion,
      ...(canary?.version === version ? { canary_share: canary.share } : {}),
      ...spec,
    };
  }

  /** Writes a new version from the current one and the fields given; current only when asked. */
  async create(
    who: Identity,
    agentId: string,
    body: SpecPatch & { make_current?: boolean | undefined },
  ): Promise<{ version: number }> {
    const agent = await this.#o.agents.load(who, agentId, "write");
    const { make_current: makeCurrent, ...patch } = body;
    const current = await this.#o.agents.specOf(agent);
    const spec = (await nextSpec(current.spec, patch, this.#o.checkToolPolicy)) ?? current.spec;
    if (this.#o.addressRule) checkNetworkPolicy(spec.sandbox_policy, this.#o.addressRule);
    await checkToolHeaders(this.#o.db, agent.orgId, spec, current.spec);
    await this.#o.bundles?.check(agent.id, spec);
    // made current as it is written: it cannot have passed an evaluation yet
    if (makeCurrent === true) await this.#o.gate?.(agent.id, null);
    const { version } = await appendVersion(this.#o.db, agent.id, spec, who.email, {
      current: makeCurrent === true,
    });
    return { version };
  }

  /** Makes `version` the agent's current one (a promotion or a rollback); a canary of it ends. */
  async makeCurrent(who: Identity, agentId: string, version: number): Promise<Version> {
    const agent = await this.#o.agents.load(who, agentId, "write");
    const spec = await this.#o.agents.specAt(agent.id, version);
    if (!spec) throw new WarrenError("not_found", `the agent has no version ${version}`);
    await this.#o.gate?.(agent.id, version);
    await this.#o.db.transaction(async (tx) => {
      await tx.update(schema.agents).set(currentSet(version, spec)).where(eq(schema.agents.id, agent.id));
      await tx
        .delete(schema.agentCanaries)
        .where(and(eq(schema.agentCanaries.agentId, agent.id), eq(schema.agentCanaries.version, version)));
    });
    return this.get(who, agentId, version);
  }

  /** Starts (or changes) the agent's canary, or ends it with neither version nor share. */
  async setCanary(
    who: Identity,
    agentId: string,
    body: { version?: number | undefined; share?: number | undefined },
  ): Promise<Canary> {
    const agent = await this.#o.agents.load(who, agentId, "write");
    if (body.version === undefined || body.share === undefined) {
      await this.#o.db.delete(schema.agentCanaries).where(eq(schema.agentCanaries.agentId, agent.id));
    } else {
      if (!(await this.#o.agents.specAt(agent.id, body.version)))
        throw new WarrenError("request.invalid", `version: the agent has no version ${body.version}`, {
          field: "version",
        });
      if (body.version === agent.specVersion)
        throw new WarrenError(
          "request.invalid",
          `version: ${body.version} is already the current version; give another one to canary`,
          { field: "version" },
        );
      // with the gate on, a canary may send runs only to a version that passed it
      await this.#o.gate?.(agent.id, body.version);
      const row = { version: body.version, share: body.share, startedBy: who.email, createdAt: new Date() };
      await this.#o.db
        .insert(schema.agentCanaries)
        .values({ agentId: agent.id, ...row })
        .onConflictDoUpdate({ target: schema.agentCanaries.agentId, set: row });
    }
    return this.#canaryView(agent);
  }

  async canary(who: Identity, agentId: string): Promise<Canary> {
    return this.#canaryView(await this.#o.agents.load(who, agentId, "read"));
  }

  async #canaryRow(agentId: string) {
    const [c] = await this.#o.db
      .select()
      .from(schema.agentCanaries)
      .where(eq(schema.agentCanaries.agentId, agentId));
    return c ?? null;
  }

  async #canaryView(agent: AgentRow): Promise<Canary> {
    const c = await this.#canaryRow(agent.id);
    const r = schema.runs;
    const where = [eq(r.agentId, agent.id)];
    if (c) where.push(gte(r.createdAt, c.createdAt));
    const rows = await this.#o.db
      .select({
        version: r.specVersion,
        runs: count(),
        failures: sum(
          sql<number>`case when ${r.status} in ('failed', 'timed_out', 'lost') then 1 else 0 end`,
        ),
        usd: sum(sql<number>`coalesce((${r.usage}->>'usd')::float8, 0)`),
      })
      .from(r)
      .where(and(...where))
      .groupBy(r.specVersion)
      .orderBy(asc(r.specVersion));
    return {
      agent_id: agent.id,
      current: agent.specVersion,
      canary: c
        ? {
            version: c.version,
            share: c.share,
            started_by: c.startedBy,
            started_at: c.createdAt.toISOString(),
          }
        : null,
      stats: rows.flatMap((x) =>
        x.version === null
          ? []
          : [
              {
                version: x.version,
                runs: Number(x.runs),
                failures: Number(x.failures ?? 0),
                usd: Number(x.usd ?? 0),
              },
            ],
      ),
    };
  }

  /**
   * The version a run of the agent runs: the one asked by number, else the canary's for a
   * routing key that falls in its share, else the current one; with its spec (sandbox policy
   * included), kept for the run's whole life.
   */
  async forRun(
    agent: AgentRow,
    ask: { version?: number | undefined; routing_key?: string | undefined },
  ): Promise<{ spec: AgentSpec; version: number | null }> {
    if (ask.version !== undefined) {
      const spec = await this.#o.agents.specAt(agent.id, ask.version);
      if (!spec)
        throw new WarrenError("request.invalid", `version: the agent has no version ${ask.version}`, {
          field: "version",
        });
      return { spec, version: ask.version };
    }
    const canary = await this.canaryFor(agent, ask.routing_key ?? randomUUID());
    if (canary) return canary;
    return this.#o.agents.specOf(agent);
  }

  /**
   * The canary's version and spec when `key` falls in its share (the same rule for runs and
   * new conversations: the same key, the same side), else null.
   */
  async canaryFor(agent: AgentRow, key: string): Promise<{ spec: AgentSpec; version: number } | null> {
    const c = await this.#canaryRow(agent.id);
    if (!c || bucketOf(agent.id, key) >= c.share) return null;
    // a gate turned on after the canary started: its version takes runs only once it passed
    if (
      this.#o.gate &&
      !(await this.#o.gate(agent.id, c.version).then(
        () => true,
        () => false,
      ))
    )
      return null;
    const spec = await this.#o.agents.specAt(agent.id, c.version);
    return spec ? { spec, version: c.version } : null;
  }
}
