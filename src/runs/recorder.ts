// The run recorder: every run of every kind (a command, an assistant, a harness CLI; later a
// conversation turn, a schedule, an evaluation) is started, queued, traced, timed out,
// cancelled, measured, given its receipt and ended here, once. What a kind does is its runner
// (RunRunner, runner.ts): given the run's door (a Workload), its input and a signal, it answers
// an outcome; the recorder keeps the line and the runs going on, and drive.ts writes one run
// from its start to its end through the one record writer.
import { and, eq, inArray, notInArray } from "drizzle-orm";
import type { SandboxPolicy } from "../contract/policy.js";
import type { Run } from "../contract/types.js";
import type { DiskCaps } from "../homes/caps.js";
import { newId } from "../ids.js";
import type { Logger } from "../observability/log.js";
import { bindActive } from "../observability/tracing.js";
import type { Records } from "../records/index.js";
import type { MachineRuntime } from "../runtime/index.js";
import { schema } from "../store/index.js";
import type { Db } from "../store/index.js";
import type { Workloads } from "../workloads/index.js";
import { driveRun, messageOf, type Live } from "./drive.js";
import type { Generation, GenerationRegistry } from "./registry.js";
import type { RunRequest } from "./runner.js";
import { runView, type RunRow } from "./view.js";
import { RunStops } from "./stops.js";
import type { EventBus } from "../events/index.js";

export interface RunRecorderOptions {
  db: Db;
  records: Records;
  registry: GenerationRegistry;
  workloads: Workloads;
  caps: DiskCaps;
  runtime: Pick<MachineRuntime, "commandUsage" | "onRunaway" | "onDiskFull" | "ensure">;
  logger: Logger;
  version: string;
  /** Where each run's end is told once its record is written (run.ended). */
  events: Pick<EventBus, "emit">;
  /** An agent's runtime folder on the host (null where its box has none): its runs' call logs. */
  runtimeDir?: (machineId: string, agentId: string) => string | null;
}

export class RunRecorder {
  readonly #o: RunRecorderOptions;
  /** The bookkeeping of each run this server started, by run id, until it is recorded. */
  readonly #pending = new Map<string, Promise<void>>();
  /** What each run going on uses: its command tree, its models and tools so far. */
  readonly #live = new Map<string, Live>();

  /** What driving a run needs, with the trees of runs the health loop stopped (stops.ts). */
  readonly #drive: Parameters<typeof driveRun>[0];
  constructor(o: RunRecorderOptions) {
    this.#o = o;
    this.#drive = { ...o, stops: new RunStops(o.runtime, o.records), live: this.#live };
  }

  /**
   * At boot: runs that were going on when the server stopped become lost; runs that were
   * still queued (nothing of them ran, and their input was never kept) become lost too, with
   * a reason that says so: start them again. Runs suspended to be taken up again (resume.ts) are not.
   */
  async markLost(reason = "the server stopped while the run was going on"): Promise<number> {
    const queued = "the server stopped before the run started (nothing of it ran); start it again";
    let n = 0;
    for (const [status, why] of [
      ["running", reason],
      ["waiting", reason],
      ["queued", queued],
    ] as const) {
      const suspended = this.#o.db.select({ id: schema.runSuspensions.runId }).from(schema.runSuspensions);
      const where = and(eq(schema.runs.status, status), notInArray(schema.runs.id, suspended))!;
      const ids = await this.#o.records.updateRuns(where, {
        status: "lost",
        statusReason: why,
        endedAt: new Date(),
      });
      for (const id of ids)
        await this.#o.records.runEvent(id, "lost", { reason: why, queued: status === "queued" });
      n += ids.length;
    }
    return n;
  }

  /** Queues a run (or starts it now) and writes its row; it starts once both are there. */
  async start(req: RunRequest): Promise<Run> {
    const o = this.#o;
    const { agent, machine } = req;
    const id = req.id ?? newId("run");
    // the record writer learns here whether the run's events are a conversation's too, so
    // that no event of any run asks the store
    o.records.conversations.knowTurn(id, req.conversationId ?? null);
    // a home over its cap refuses the run now, queued or not (and again when it starts)
    const gated = await o.caps.gate(agent, machine, req.instance?.id);
    let recorded!: (row: RunRow | null) => void;
    const record = new Promise<RunRow | null>((r) => (recorded = r));
    let startedNow = false;
    const launch = (gen: Generation) => {
      const p = record
        .then(async (row) => {
          if (!row) return;
          // a run that waited is gated again: its home may have grown meanwhile
          const before = startedNow ? gated : await o.caps.gate(agent, machine, req.instance?.id);
          await driveRun(this.#drive, row, req, before, gen.controller.signal);
        })
        .catch(async (err: unknown) => {
          // refused as it left the line (home over its cap, secrets): the run ends as failed
          await this.#refuse(id, err).catch((e: unknown) =>
            o.logger.error({ err: e, runId: id }, "run bookkeeping failed"),
          );
        })
        .finally(() => {
          o.registry.release(gen);
          this.#pending.delete(id);
          this.#live.delete(id);
        })
        .then(() => this.#tellEnded([id]));
      this.#pending.set(id, p);
    };
    // a run that waits in line starts, when its turn comes, in the trace of what asked for it
    const placed = o.registry.enqueue(
      { agentId: agent.id, orgId: agent.orgId, runId: id, start: bindActive(launch) },
      { wait: req.wait },
    );
    startedNow = placed === "started";
    try {
      const [row] = req.resume
        ? [req.resume]
        : await o.db
            .insert(schema.runs)
            .values({
              id,
              orgId: agent.orgId,
              agentId: agent.id,
              machineId: machine.id,
              kind: req.kind,
              status: "queued",
              argv: req.argv,
              specVersion: req.specVersion,
              inputBytes: req.input.length,
              timeoutS: req.timeoutS,
            })
            .returning();
      if (!row) throw new Error("run insert returned nothing");
      if (!startedNow) await o.records.runEvent(id, "queued", { ...this.#waitingView(id) });
      recorded(row);
      return this.withWaiting(runView(row));
    } catch (err) {
      o.registry.dequeue(id);
      recorded(null);
      throw err;
    }
  }

  /** A queued run's view says why it waits. */
  withWaiting(v: Run): Run {
    if (v.status !== "queued") return v;
    const w = this.#o.registry.waiting(v.id);
    if (!w) return v;
    return {
      ...v,
      status_reason: w.detail,
      waiting: { reason: w.reason, since: w.since.toISOString(), position: w.position },
    };
  }

  /** What a running run uses now: its command tree's box usage, its models' usage. */
  live(runId: string): Pick<Run, "box_usage" | "usage"> {
    const l = this.#live.get(runId);
    if (!l) return {};
    const box = l.command ? this.#o.runtime.commandUsage(l.command.machineId, l.command.cgroup) : null;
    return { ...(box ? { box_usage: box } : {}), ...(l.usage ? { usage: l.usage } : {}) };
  }

  /** The bookkeeping of a run that has started in this server, until its record is written; else undefined. */
  settled(runId: string): Promise<void> | undefined {
    return this.#pending.get(runId);
  }

  /** The sandbox policy a run going on keeps (its version's), or undefined. */
  policyOfRun(runId: string): SandboxPolicy | undefined {
    return this.#live.get(runId)?.policy;
  }

  #waitingView(runId: string): Run["waiting"] {
    const w = this.#o.registry.waiting(runId);
    return w ? { reason: w.reason, since: w.since.toISOString(), position: w.position } : undefined;
  }

  /** A run that could not start once its turn came: failed, with why. */
  async #refuse(runId: string, err: unknown): Promise<void> {
    const reason = messageOf(err);
    const changed = await this.#o.records.updateRun(
      runId,
      { status: "failed", statusReason: reason, endedAt: new Date() },
      eq(schema.runs.status, "queued"),
    );
    if (changed) await this.#o.records.runEvent(runId, "refused", { reason });
    else this.#o.logger.error({ err, runId }, "run bookkeeping failed");
  }

  /** Ends runs taken out of line before they started: cancelled, with why. */
  async endWaiting(runIds: string[], reason: string): Promise<void> {
    if (runIds.length === 0) return;
    const ids = await this.#o.records.endQueued(runIds, reason, "cancelled", { reason, queued: true });
    await this.#tellEnded(ids);
  }

  /** Tells each run's end on the event bus (run.ended), with its final status. */
  async #tellEnded(runIds: string[]): Promise<void> {
    if (runIds.length === 0) return;
    try {
      for (let i = 0; i < runIds.length; i += 1000) {
        const rows = await this.#o.db
          .select({ id: schema.runs.id, status: schema.runs.status })
          .from(schema.runs)
          .where(inArray(schema.runs.id, runIds.slice(i, i + 1000)));
        for (const r of rows) this.#o.events.emit("run.ended", { runId: r.id, status: r.status });
      }
    } catch (err) {
      this.#o.logger.error({ err, runIds }, "telling of the runs' end failed");
    }
  }

  /** Cancels a run: taken out of line (true) or its generation aborted (false). */
  async cancel(runId: string, reason: string): Promise<boolean> {
    if (this.#o.registry.dequeue(runId)) {
      await this.endWaiting([runId], `${reason} while it waited`);
      return true;
    }
    this.#o.registry.cancel(runId, reason);
    return false;
  }

  /** Cancels the agent's generation, if any, and waits until its record is written. */
  async stopAgent(agentId: string, reason: string): Promise<void> {
    const r = this.#o.registry;
    // the whole backlog leaves the line in one walk and ends in a statement per 1000 runs
    // (and no run of it is taken while it is deleted: schedules may go on firing until then)
    await this.endWaiting(r.dequeueAgent(agentId, 60_000), reason);
    const g = r.forAgent(agentId);
    if (g) {
      r.cancel(g.runId, reason);
      await this.#pending.get(g.runId);
    }
    // a run put in line as its backlog left it had its row written after: ended too
    const late = await this.#o.db
      .select({ id: schema.runs.id })
      .from(schema.runs)
      .where(and(eq(schema.runs.agentId, agentId), eq(schema.runs.status, "queued")));
    await this.endWaiting(
      late.map((x) => x.id),
      reason,
    );
  }

  /** Waits up to `ms` for the runs going on to end by themselves; true when none is left. */
  async drain(ms: number): Promise<boolean> {
    // what still waits does not start while the server stops
    await this.endWaiting(this.#o.registry.close(), "the server stopped before the run started");
    if (this.#pending.size === 0) return true;
    let timer: NodeJS.Timeout | undefined;
    const all = Promise.allSettled([...this.#pending.values()]).then(() => true);
    const late = new Promise<boolean>((r) => (timer = setTimeout(() => r(false), ms)));
    try {
      return await Promise.race([all, late]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** Cancels every generation and waits for their records (shutdown). */
  async stopAll(reason: string): Promise<void> {
    const r = this.#o.registry;
    await this.endWaiting(r.close(), `${reason} before the run started`);
    for (const agentId of r.activeAgents()) {
      const g = r.forAgent(agentId);
      if (g) r.cancel(g.runId, reason);
    }
    await Promise.allSettled([...this.#pending.values()]);
  }
}
