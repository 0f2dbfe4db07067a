// Runs suspended at a server's stop, taken up by the next. An assistant run whose tool call
// waited for an approval when the server stopped is not ended: where its loop stood (its model
// messages, the step's calls still to make) was kept redacted through the record writer, its
// row stays `waiting` and its approval `waiting`. At boot these runs are not marked lost; the
// run recorder drives each again (same row, its events going on) with the loop starting from
// that state, and its call re-attaches to the approval still waiting (src/approvals/service.ts).
// What is kept is written as soon as the call waits (so a server that dies, not only one that
// stops, leaves it), and let go once the call is decided. A conversation's turn is taken up as
// a turn by Conversations itself (src/conversations/turns.ts: its transcript, branch and
// fence), with the two functions here: which runs wait, and taking each up or losing it.
import { eq, inArray } from "drizzle-orm";
import type { Logger } from "../observability/log.js";
import type { Records } from "../records/index.js";
import { schema, type Db } from "../store/index.js";
import type { AgentRunners, SuspendedLoop } from "./kinds.js";
import type { RunRecorder } from "./recorder.js";
import { runRequest, type RunRequestDeps, type VersionForRun } from "./request.js";
import type { RunsOptions } from "./service.js";
import type { RunRow } from "./view.js";

/** A run suspended by the last server's stop, with where its loop stood. */
interface SuspendedRun {
  run: RunRow;
  state: SuspendedLoop;
}

interface RunResumerOptions {
  db: Db;
  records: Pick<Records, "suspendRun" | "updateRun" | "runEvent">;
  recorder: RunRecorder;
  agents: RunRequestDeps["agents"];
  gateway: RunsOptions["gateway"];
  runners: AgentRunners;
  versionFor: VersionForRun;
  logger: Logger;
}

/**
 * At boot (the runs cut short recorded as lost, the boxes recovered): the suspended runs still
 * waiting, conversations' turns (`turns`) or the others. What was kept of a run that ended
 * meanwhile is dropped.
 */
export async function suspendedRuns(db: Db, turns: boolean): Promise<SuspendedRun[]> {
  const rows = await db
    .select({ run: schema.runs, state: schema.runSuspensions.state, turn: schema.conversationTurns.runId })
    .from(schema.runSuspensions)
    .innerJoin(schema.runs, eq(schema.runs.id, schema.runSuspensions.runId))
    .leftJoin(schema.conversationTurns, eq(schema.conversationTurns.runId, schema.runSuspensions.runId));
  const stale = rows.filter((r) => r.run.status !== "waiting").map((r) => r.run.id);
  if (stale.length > 0)
    await db.delete(schema.runSuspensions).where(inArray(schema.runSuspensions.runId, stale));
  return rows
    .filter((r) => r.run.status === "waiting" && (r.turn !== null) === turns)
    .map((r) => ({ run: r.run, state: r.state as SuspendedLoop }));
}

/** Takes each suspended run up again with `takeUp`; one that cannot go on is lost, saying why. */
export async function takeUpEach(
  o: { db: Db; records: Pick<Records, "updateRun" | "runEvent">; logger: Logger },
  found: SuspendedRun[],
  takeUp: (run: RunRow, state: SuspendedLoop) => Promise<void>,
): Promise<number> {
  let n = 0;
  for (const { run, state } of found) {
    try {
      // taken up once: a run that is suspended again keeps where it stands then
      await o.db.delete(schema.runSuspensions).where(eq(schema.runSuspensions.runId, run.id));
      await takeUp(run, state);
      n++;
    } catch (err) {
      const reason = `the server restarted while the run waited, and it could not be taken up again: ${err instanceof Error ? err.message : String(err)}`;
      o.logger.warn({ err, runId: run.id }, "a suspended run could not be taken up again");
      const set = { status: "lost" as const, statusReason: reason, endedAt: new Date() };
      if (await o.records.updateRun(run.id, set, eq(schema.runs.status, "waiting")))
        await o.records.runEvent(run.id, "lost", { reason, queued: false });
    }
  }
  if (n > 0) o.logger.info({ runs: n }, "runs suspended by the server's stop are taken up again");
  return n;
}

export class RunResumer {
  readonly #o: RunResumerOptions;

  constructor(o: RunResumerOptions) {
    this.#o = o;
  }

  /** Takes each suspended run (a turn's aside) up again through the run recorder. */
  async takeUp(): Promise<number> {
    return takeUpEach(this.#o, await suspendedRuns(this.#o.db, false), (run, state) =>
      this.#takeUp(run, state),
    );
  }

  async #takeUp(run: RunRow, state: SuspendedLoop): Promise<void> {
    const o = this.#o;
    const [agent] = await o.db.select().from(schema.agents).where(eq(schema.agents.id, run.agentId));
    if (!agent) throw new Error("its agent was deleted");
    // the version the run began with (its sandbox policy too), and its limit
    const suspend: RunRequestDeps["suspend"] = (runId, agentId, at) =>
      o.records.suspendRun(runId, agentId, at);
    const req = await runRequest(
      { ...o, suspend },
      {
        agent,
        input: state.input,
        version: { ask: { version: run.specVersion ?? undefined } },
        timeoutS: run.timeoutS,
        resume: { run, state },
      },
    );
    await o.recorder.start(req);
  }
}
