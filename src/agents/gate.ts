// An agent's evaluation gate: with it on (a suite's name), a change of the agent goes through a
// version, and a version is made current only once it passed an evaluation by that suite as the
// suite is now. Read by agents, versions and runs; the evaluations (src/evals) keep it.
import { and, desc, eq, gte } from "drizzle-orm";
import type { Access, Identity } from "../access/index.js";
import type { EvalGate } from "../contract/types.js";
import { WarrenError } from "../errors.js";
import type { AgentRow, Db } from "../store/index.js";
import { schema } from "../store/index.js";

type Tx = Parameters<Parameters<Db["transaction"]>[0]>[0];
type SuiteRow = typeof schema.evalSuites.$inferSelect;

export class EvalGates {
  readonly #db: Db;
  readonly #access: Access;

  constructor(db: Db, access: Access) {
    this.#db = db;
    this.#access = access;
  }

  /** The suite the agent's gate names, or null when it is off. */
  async of(agentId: string): Promise<string | null> {
    const [g] = await this.#db
      .select()
      .from(schema.agentEvalGates)
      .where(eq(schema.agentEvalGates.agentId, agentId));
    return g?.suiteName ?? null;
  }

  /** The agent's suite of that name. */
  async suite(agentId: string, name: string): Promise<SuiteRow | undefined> {
    const [s] = await this.#db
      .select()
      .from(schema.evalSuites)
      .where(and(eq(schema.evalSuites.agentId, agentId), eq(schema.evalSuites.name, name)));
    return s;
  }

  /** Throws access.denied unless `who` is an owner of the agent's organisation. */
  async ownerOnly(agent: AgentRow, who: Identity, act: string): Promise<void> {
    if ((await this.#access.roleIn(agent.orgId, who)) !== "owner")
      throw new WarrenError(
        "access.denied",
        `only an owner ${act}: while the gate is on, only an owner changes what it asks or turns it off; ask an owner`,
      );
  }

  /** The next revision of the agent's gate history: its suite after the change (null: off), by whom. */
  async revision(tx: Tx, agentId: string, suite: string | null, who: Identity): Promise<void> {
    const c = schema.agentEvalGateChanges;
    const [last] = await tx
      .select({ revision: c.revision })
      .from(c)
      .where(eq(c.agentId, agentId))
      .orderBy(desc(c.revision))
      .limit(1);
    await tx
      .insert(c)
      .values({ agentId, revision: (last?.revision ?? 0) + 1, suiteName: suite, by: who.email });
  }

  /**
   * Turns the gate of an agent its caller loaded for writing on (a suite), changes its suite, or
   * turns it off (null: an owner's act only, while it is on); every change is a revision of the
   * agent's gate history with its author.
   */
  async set(agent: AgentRow, who: Identity, suite: string | null): Promise<EvalGate> {
    const before = await this.of(agent.id);
    // an open gate is loosened by an owner only: turned off, or its suite changed (to one
    // that asks less, say); anyone who may write turns a closed gate on
    if (before !== null && suite !== before)
      await this.ownerOnly(
        agent,
        who,
        suite === null
          ? `turns the agent's evaluation gate off (it is on, with suite ${before})`
          : `changes the suite of the agent's evaluation gate (it is on, with suite ${before})`,
      );
    if (suite !== null && !(await this.suite(agent.id, suite)))
      throw new WarrenError("request.invalid", `suite: the agent has no suite named ${suite}`, {
        field: "suite",
      });
    if (suite === before) return { agent_id: agent.id, eval_gate: suite };
    await this.#db.transaction(async (tx) => {
      if (suite === null) {
        await tx.delete(schema.agentEvalGates).where(eq(schema.agentEvalGates.agentId, agent.id));
      } else {
        await tx
          .insert(schema.agentEvalGates)
          .values({ agentId: agent.id, suiteName: suite })
          .onConflictDoUpdate({ target: schema.agentEvalGates.agentId, set: { suiteName: suite } });
      }
      await this.revision(tx, agent.id, suite, who);
    });
    return { agent_id: agent.id, eval_gate: suite };
  }

  /** Throws version.gate unless the agent's gate is off or `version` passed an evaluation by its suite. */
  async check(agentId: string, version: number | null): Promise<void> {
    const suite = await this.of(agentId);
    if (suite === null) return;
    const rewritten = (await this.suite(agentId, suite))?.createdAt;
    if (version !== null && rewritten) {
      const [passed] = await this.#db
        .select({ id: schema.evalRuns.id })
        .from(schema.evalRuns)
        .where(
          and(
            eq(schema.evalRuns.agentId, agentId),
            eq(schema.evalRuns.version, version),
            eq(schema.evalRuns.suiteName, suite),
            eq(schema.evalRuns.status, "passed"),
            // by the suite as it is: an evaluation started before its last rewrite asked other cases
            gte(schema.evalRuns.createdAt, rewritten),
          ),
        )
        .limit(1);
      if (passed) return;
    }
    throw new WarrenError(
      "version.gate",
      version === null
        ? `the agent's gate is on (suite ${suite}): write the change as a version (POST /api/agents/:id/versions), evaluate it, then make it current`
        : `the agent's gate is on: version ${version} has no passed evaluation by suite ${suite}; evaluate it first (POST /api/agents/:id/versions/${version}/evaluate)`,
    );
  }
}
