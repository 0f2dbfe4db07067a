// Evaluation suites and the gate. A suite is cases (an input, and what the answer must
// contain, equal or match, or which tool the run must call) and a pass rate; an evaluation
// runs one version on every case as real runs (through the runs service and its recorder,
// as any run), then says whether the share of cases that passed reaches the rate. With the
// agent's gate on, making a version current needs a passed evaluation of it by the gate's suite.
import { and, asc, eq } from "drizzle-orm";
import type { Access, Identity } from "../access/index.js";
import type { Agents } from "../agents/service.js";
import type { EvalGates } from "../agents/gate.js";
import { TERMINAL_RUN_STATUSES } from "../contract/lists.js";
import type { EvalGate, EvalGateHistory, EvalRun, EvalSuite } from "../contract/types.js";
import { WarrenError } from "../errors.js";
import { newId } from "../ids.js";
import type { Logger } from "../observability/log.js";
import type { Runs } from "../runs/service.js";
import type { AgentRow, Db } from "../store/index.js";
import { schema } from "../store/index.js";

interface Expect {
  contains?: string | undefined;
  equals?: string | undefined;
  regex?: string | undefined;
  tool_called?: string | undefined;
}
interface Case {
  input: string;
  expect: Expect;
}
interface CaseResult {
  input: string;
  run_id: string | null;
  status: string;
  passed: boolean | null;
  reasons: string[];
}

export interface EvalsOptions {
  db: Db;
  access: Access;
  agents: Pick<Agents, "load" | "specAt">;
  /** The agents' evaluation gates (kept here: turned on and off, their suites written). */
  gates: EvalGates;
  runs: Pick<Runs, "start">;
  /** A started run's bookkeeping, until its record is written (the recorder's). */
  settled: (runId: string) => Promise<void> | undefined;
  logger: Logger;
}

type SuiteRow = typeof schema.evalSuites.$inferSelect;
type EvalRunRow = typeof schema.evalRuns.$inferSelect;

const suiteView = (r: SuiteRow): EvalSuite => ({
  id: r.id,
  agent_id: r.agentId,
  name: r.name,
  cases: r.cases as Case[],
  pass_rate: r.passRate,
  created_by: r.createdBy,
  created_at: r.createdAt.toISOString(),
});

/** What of a case's expectations did not hold for a run that ended with `output`. */
export function caseProblems(
  expect: Expect,
  status: string,
  output: string,
  toolsCalled: string[],
): string[] {
  const out: string[] = [];
  if (status !== "succeeded") out.push(`the run ended ${status}`);
  if (expect.contains !== undefined && !output.includes(expect.contains))
    out.push(`the answer does not contain ${JSON.stringify(expect.contains)}`);
  if (expect.equals !== undefined && output.trim() !== expect.equals.trim())
    out.push(`the answer is not ${JSON.stringify(expect.equals)}`);
  if (expect.regex !== undefined && !new RegExp(expect.regex).test(output))
    out.push(`the answer does not match /${expect.regex}/`);
  if (expect.tool_called !== undefined && !toolsCalled.includes(expect.tool_called))
    out.push(`the tool ${expect.tool_called} was not called (and allowed)`);
  return out;
}

export class Evals {
  readonly #o: EvalsOptions;

  constructor(o: EvalsOptions) {
    this.#o = o;
  }

  /**
   * Writes a suite (a suite of the same name is replaced). Rewriting the suite an open gate
   * names changes what the gate asks: an owner's act, kept in the gate's history; the gate
   * then counts only evaluations by the suite as rewritten.
   */
  async saveSuite(
    who: Identity,
    agentId: string,
    body: { name: string; cases: Case[]; pass_rate: number },
  ): Promise<EvalSuite> {
    const agent = await this.#o.agents.load(who, agentId, "write");
    const gated =
      (await this.#o.gates.of(agent.id)) === body.name && (await this.#o.gates.suite(agent.id, body.name));
    if (gated)
      await this.#o.gates.ownerOnly(agent, who, `rewrites the suite ${body.name} its evaluation gate names`);
    const row = { cases: body.cases, passRate: body.pass_rate, createdBy: who.email, createdAt: new Date() };
    const [r] = await this.#o.db.transaction(async (tx) => {
      const written = await tx
        .insert(schema.evalSuites)
        .values({ id: newId("evs"), orgId: agent.orgId, agentId: agent.id, name: body.name, ...row })
        .onConflictDoUpdate({ target: [schema.evalSuites.agentId, schema.evalSuites.name], set: row })
        .returning();
      if (gated) await this.#o.gates.revision(tx, agent.id, body.name, who);
      return written;
    });
    return suiteView(r!);
  }

  async suites(who: Identity, agentId: string): Promise<EvalSuite[]> {
    const agent = await this.#o.agents.load(who, agentId, "read");
    const rows = await this.#o.db
      .select()
      .from(schema.evalSuites)
      .where(eq(schema.evalSuites.agentId, agent.id))
      .orderBy(asc(schema.evalSuites.name));
    return rows.map(suiteView);
  }

  /** Starts an evaluation of `version` by the suite: each case a real run of that version. */
  async evaluate(
    who: Identity,
    agentId: string,
    version: number,
    suiteName: string,
  ): Promise<{ eval_run_id: string }> {
    const agent = await this.#o.agents.load(who, agentId, "write");
    if (!(await this.#o.agents.specAt(agent.id, version)))
      throw new WarrenError("not_found", `the agent has no version ${version}`);
    const suite = await this.#o.gates.suite(agent.id, suiteName);
    if (!suite)
      throw new WarrenError("request.invalid", `suite: the agent has no suite named ${suiteName}`, {
        field: "suite",
      });
    const cases = suite.cases as Case[];
    const id = newId("evr");
    await this.#o.db.insert(schema.evalRuns).values({
      id,
      orgId: agent.orgId,
      agentId: agent.id,
      suiteId: suite.id,
      suiteName: suite.name,
      version,
      status: "running",
      cases: cases.map((c) => ({
        input: c.input,
        run_id: null,
        status: "pending",
        passed: null,
        reasons: [],
      })),
      startedBy: who.email,
    });
    void this.#drive(who, agent, id, version, cases, suite.passRate).catch(async (err: unknown) => {
      this.#o.logger.error({ err, evalRunId: id }, "an evaluation failed");
      await this.#o.db
        .update(schema.evalRuns)
        .set({ status: "error", endedAt: new Date() })
        .where(eq(schema.evalRuns.id, id))
        .catch((e: unknown) =>
          this.#o.logger.error({ err: e, evalRunId: id }, "an evaluation's end was not stored"),
        );
    });
    return { eval_run_id: id };
  }

  async #drive(who: Identity, agent: AgentRow, id: string, version: number, cases: Case[], rate: number) {
    const results: CaseResult[] = [];
    for (const c of cases) {
      const run = await this.#o.runs.start(
        who,
        agent.id,
        { kind: "agent", input: c.input, version },
        { evaluation: true },
      );
      const ended = await this.#ended(run.id);
      const calls = await this.#o.db
        .select({ data: schema.runEvents.data })
        .from(schema.runEvents)
        .where(and(eq(schema.runEvents.runId, run.id), eq(schema.runEvents.type, "tool_call")));
      const called = calls
        .map((e) => e.data as { tool?: string; decision?: string })
        .filter((d) => d.decision === "allow" && typeof d.tool === "string")
        .map((d) => d.tool!);
      const reasons = caseProblems(c.expect, ended.status, ended.output, called);
      results.push({
        input: c.input,
        run_id: run.id,
        status: ended.status,
        passed: reasons.length === 0,
        reasons,
      });
      const pending = cases.slice(results.length).map((x) => ({
        input: x.input,
        run_id: null,
        status: "pending",
        passed: null,
        reasons: [],
      }));
      await this.#o.db
        .update(schema.evalRuns)
        .set({ cases: [...results, ...pending] })
        .where(eq(schema.evalRuns.id, id));
    }
    const share = results.filter((r) => r.passed).length / results.length;
    await this.#o.db
      .update(schema.evalRuns)
      .set({ status: share >= rate ? "passed" : "failed", passRate: share, endedAt: new Date() })
      .where(eq(schema.evalRuns.id, id));
  }

  /** The run's row once it has ended. */
  async #ended(runId: string): Promise<{ status: string; output: string }> {
    for (;;) {
      const [r] = await this.#o.db
        .select({ status: schema.runs.status, output: schema.runs.output })
        .from(schema.runs)
        .where(eq(schema.runs.id, runId));
      if (!r) return { status: "lost", output: "" };
      if ((TERMINAL_RUN_STATUSES as readonly string[]).includes(r.status)) return r;
      // started: its bookkeeping ends with its record; queued: look again shortly
      await (this.#o.settled(runId) ?? new Promise((res) => setTimeout(res, 100)));
    }
  }

  async get(who: Identity, id: string): Promise<EvalRun> {
    const [r] = await this.#o.db.select().from(schema.evalRuns).where(eq(schema.evalRuns.id, id));
    if (!r) throw new WarrenError("not_found", "eval run was not found");
    await this.#o.access.require(r.orgId, who, "read", "eval run");
    const [s] = await this.#o.db
      .select({ passRate: schema.evalSuites.passRate })
      .from(schema.evalSuites)
      .where(eq(schema.evalSuites.id, r.suiteId));
    return evalRunView(r, s?.passRate ?? 1);
  }

  /**
   * Turns the gate on (a suite), changes its suite, or turns it off (null: an owner's act only,
   * while it is on); every change is a revision of the agent's gate history with its author.
   */
  async setGate(who: Identity, agentId: string, suite: string | null): Promise<EvalGate> {
    return this.#o.gates.set(await this.#o.agents.load(who, agentId, "write"), who, suite);
  }

  /** The agent's gate and every change of it, oldest first. */
  async gateView(who: Identity, agentId: string): Promise<EvalGateHistory> {
    const agent = await this.#o.agents.load(who, agentId, "read");
    const c = schema.agentEvalGateChanges;
    const rows = await this.#o.db.select().from(c).where(eq(c.agentId, agent.id)).orderBy(asc(c.revision));
    return {
      agent_id: agent.id,
      eval_gate: await this.#o.gates.of(agent.id),
      history: rows.map((r) => ({
        revision: r.revision,
        eval_gate: r.suiteName,
        by: r.by,
        at: r.createdAt.toISOString(),
      })),
    };
  }
}

function evalRunView(r: EvalRunRow, required: number): EvalRun {
  return {
    id: r.id,
    agent_id: r.agentId,
    suite: r.suiteName,
    version: r.version,
    status: r.status,
    passed: r.status === "running" ? null : r.status === "passed",
    pass_rate: r.passRate,
    required_pass_rate: required,
    cases: r.cases as CaseResult[],
    started_by: r.startedBy,
    created_at: r.createdAt.toISOString(),
    ended_at: r.endedAt?.toISOString() ?? null,
  };
}
