// The run recorder: every run of every kind (a command, an assistant, a harness CLI; later a
// conversation turn, a schedule, an evaluation) is started, queued, traced, timed out,
// cancelled, measured, given its receipt and ended here, once. What a kind does is its runner
// (RunRunner): given the run's door (a Workload), its input and a signal, it answers an
// outcome; the recorder writes everything around it through the one record writer.
import type { Fence } from "../areas/fence.js";
import { and, eq, inArray, notInArray } from "drizzle-orm";
import type { AgentRow } from "../agents/service.js";
import type { SandboxPolicy } from "../contract/policy.js";
import type { Run, RunReceipt, RunUsage } from "../contract/types.js";
import type { DiskCaps } from "../homes/caps.js";
import { newId } from "../ids.js";
import type { RunEventSink } from "../models/types.js";
import type { Logger } from "../observability/log.js";
import type { Records, RunRecording } from "../records/index.js";
import type { MachineRuntime } from "../runtime/index.js";
import { schema } from "../store/index.js";
import type { Db } from "../store/index.js";
import type { MachineRow, Workload, Workloads } from "../workloads/index.js";
import type { InstanceRef } from "../workspaces/service.js";
import type { Generation, GenerationRegistry } from "./registry.js";
import { runView, type RunRow, type RunStatus } from "./view.js";
import { RunStops } from "./stops.js";

type Sizes = { agentMib: number | null; machineMib: number | null };
/** What a run going on uses: its command tree, its models and tools so far, its sandbox policy. */
type Live = { command?: { machineId: string; cgroup: string }; usage?: RunUsage; policy?: SandboxPolicy };

/** What a runner is given: the run's door, its input, its signal, its trace. */
export interface RunnerContext {
  run: RunRow;
  workload: Workload;
  input: Buffer;
  /** Aborted on cancel, on the run's time limit and at shutdown. */
  signal: AbortSignal;
  /** One event of the run's trace (redacted by the record writer). */
  events: RunEventSink;
  /** The run's records' redaction set (a runner adds what it protects through the workload). */
  recording: RunRecording;
  /** The command tree of the run's own command, for its live usage. */
  commandStarted(cgroup: string): void;
  /** What the run used so far (GET /api/runs/:id while it runs). */
  progress(usage: RunUsage): void;
}

/** What a runner answers; the recorder decides a timed-out or cancelled run's status itself. */
export interface RunOutcome {
  /** suspended: the run stays waiting for the next server, which takes it up (resume.ts). */
  status: "succeeded" | "failed" | "timed_out" | "cancelled" | "suspended";
  reason?: string | null | undefined;
  exitCode: number | null;
  signal?: string | null | undefined;
  output: string;
  outputTruncated?: boolean | undefined;
  /** The receipt's fields of this kind (the recorder writes the common ones). */
  receipt?: Partial<RunReceipt> | undefined;
  usage?: RunUsage | undefined;
}

export interface RunRunner {
  /** What the run's `started` event says of this kind (beyond agent, input and time limit). */
  started(work: Workload): Record<string, unknown>;
  run(ctx: RunnerContext): Promise<RunOutcome>;
}

/** A run to start: what its row says, and its runner. */
export interface RunRequest {
  agent: AgentRow;
  machine: MachineRow;
  kind: RunRow["kind"];
  argv: string[];
  specVersion: number | null;
  timeoutS: number;
  input: Buffer;
  /** false: refuse the run when it cannot start now, instead of queueing it. */
  wait: boolean;
  runner: RunRunner;
  /** The run's id, when its caller wrote about it first (a conversation's turn); else a new one. */
  id?: string | undefined;
  /** The door's narrowing of the run's secrets (a persona's): only these names reach its commands. */
  secrets?: readonly string[] | undefined;
  /** The conversation the run is a turn of: its events are the conversation's too. */
  conversationId?: string | undefined;
  /** The folders of the home the run keeps (a fenced conversation's turn); absent: the whole home. */
  fence?: Fence | undefined;
  /** Where the run's commands run when they name no folder (relative to the home); the home when absent. */
  cwd?: string | undefined;
  /** A conversation's worktree (from) the run finds at its repository's folder (at), never the repository's own. */
  place?: { from: string; at: string } | undefined;
  /** The sandbox policy of the run's version, kept for its whole life; default the agent's as it is. */
  sandboxPolicy?: SandboxPolicy | undefined;
  /** The flow instance the run is made in: its /workspace is the instance's. */
  instance?: InstanceRef | undefined;
  /** A suspended run's row, taken up again after a restart (resume.ts): no new row is written. */
  resume?: RunRow | undefined;
}

export interface RunRecorderOptions {
  db: Db;
  records: Records;
  registry: GenerationRegistry;
  workloads: Workloads;
  caps: DiskCaps;
  runtime: Pick<MachineRuntime, "commandUsage" | "onRunaway" | "onDiskFull">;
  logger: Logger;
  version: string;
}

/** Why a run was cancelled: the reason its generation was aborted with. */
function abortReason(signal: AbortSignal): string {
  const r: unknown = signal.reason;
  return r instanceof Error && r.message ? r.message : "cancelled";
}

const messageOf = (err: unknown) => (err instanceof Error ? err.message : String(err));

export class RunRecorder {
  readonly #o: RunRecorderOptions;
  /** The bookkeeping of each run this server started, by run id, until it is recorded. */
  readonly #pending = new Map<string, Promise<void>>();
  /** What each run going on uses: its command tree, its models and tools so far. */
  readonly #live = new Map<string, Live>();
  /** Who hears of each run's end, once its record is written (a schedule counts its failures). */
  readonly #ended = new Set<(runId: string, status: RunStatus) => void>();

  /** Trees of runs the health loop stopped: recorded on the run; a disk cap's ends it as workspace.full. */
  readonly #stops: RunStops;
  constructor(o: RunRecorderOptions) {
    this.#o = o;
    this.#stops = new RunStops(o.runtime, o.records);
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
          await this.#drive(row, req, before, gen.controller.signal);
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
    const placed = o.registry.enqueue(
      { agentId: agent.id, orgId: agent.orgId, runId: id, start: launch },
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

  /** One run from its start to its end, its records written through its redaction set. */
  async #drive(run: RunRow, req: RunRequest, before: Sizes, signal: AbortSignal): Promise<void> {
    const o = this.#o;
    const { agent, machine } = req;
    // opened once, as the generation starts: a change of secrets reaches the next generation
    const scope = { id: run.id, ...(req.sandboxPolicy ? { policy: req.sandboxPolicy } : {}) };
    const work = await o.workloads.open(agent, {
      machine,
      run: scope,
      secrets: req.secrets,
      fence: req.fence,
      cwd: req.cwd,
      place: req.place,
      instance: req.instance,
    });
    const recording = o.records.openRun(run.id, agent.id, work.secrets);
    work.recordInto(recording);
    const pending: Promise<void>[] = [];
    const events: RunEventSink = async (type, data) => {
      const p = o.records.runEvent(run.id, type, data);
      pending.push(p);
      await p;
    };
    const live: Live = req.sandboxPolicy ? { policy: req.sandboxPolicy } : {};
    this.#live.set(run.id, live);
    const timer = new AbortController();
    let t: NodeJS.Timeout | undefined;
    try {
      const startedAt = run.startedAt ?? new Date();
      await o.records.updateRun(run.id, { status: "running", startedAt });
      await events(req.resume ? "taken_up" : "started", {
        ...req.runner.started(work),
        agent_id: agent.id,
        input_bytes: req.input.length,
        timeout_s: run.timeoutS,
      });
      // a run taken up again (resume.ts) keeps the limit it had from its start
      const left = run.timeoutS * 1000 - (req.resume ? Date.now() - startedAt.getTime() : 0);
      t = setTimeout(() => timer.abort(new Error(`ran past its ${run.timeoutS} s limit`)), Math.max(0, left));
      let out: RunOutcome;
      try {
        out = await req.runner.run({
          run,
          workload: work,
          input: req.input,
          signal: AbortSignal.any([signal, timer.signal]),
          events,
          recording,
          commandStarted: (cgroup) => (live.command = { machineId: machine.id, cgroup }),
          progress: (u) => (live.usage = u),
        });
      } catch (err) {
        o.logger.info({ runId: run.id, err }, "the run failed before its runner answered");
        out = { status: "failed", reason: messageOf(err), exitCode: null, output: "", usage: live.usage };
      } finally {
        clearTimeout(t);
      }
      if (out.status === "suspended") return; // its row stays waiting, for the next server (resume.ts)
      // a memory: false workspace goes before the run is measured and recorded as ended
      await work.release();
      // the run's own end wins over what the runner made of the abort
      let status: RunStatus = out.status;
      let reason = out.reason ?? null;
      if (signal.aborted) {
        status = "cancelled";
        reason = abortReason(signal);
      } else if (timer.signal.aborted || out.status === "timed_out") {
        status = "timed_out";
        reason = `ran past its ${run.timeoutS} s limit`;
      }
      if (!signal.aborted) [status, reason] = this.#stops.ended(run.id, status, reason);
      await Promise.allSettled(pending);
      await events("exit", {
        status,
        exit_code: out.exitCode,
        signal: out.signal ?? null,
        timed_out: status === "timed_out",
        reason,
      });
      const after = await this.#measure(agent, machine, events, req.instance?.id);
      const endedAt = new Date();
      const receipt: RunReceipt = {
        run_id: run.id,
        kind: run.kind,
        argv: run.argv,
        agent_id: agent.id,
        agent_name: agent.name,
        machine_id: machine.id,
        uid: work.uid,
        server_version: o.version,
        started_at: startedAt.toISOString(),
        ended_at: endedAt.toISOString(),
        duration_ms: endedAt.getTime() - startedAt.getTime(),
        exit_code: out.exitCode,
        signal: out.signal ?? null,
        cpu_seconds: null,
        peak_memory_bytes: null,
        bytes_out: Buffer.byteLength(out.output),
        stdout_bytes: Buffer.byteLength(out.output),
        stderr_bytes: 0,
        input_bytes: req.input.length,
        limits: null,
        disk_before_mib: before.agentMib,
        disk_after_mib: after.agentMib,
        machine_disk_before_mib: before.machineMib,
        machine_disk_after_mib: after.machineMib,
        ...out.receipt,
      };
      await o.records.updateRun(run.id, {
        status,
        statusReason: reason,
        exitCode: out.exitCode,
        signal: out.signal ?? null,
        output: out.output,
        outputTruncated: out.outputTruncated ?? false,
        endedAt,
        receipt,
        ...(out.usage ? { usage: out.usage } : {}),
      });
    } finally {
      await work.unstage();
      await work.release();
      recording.close();
    }
  }

  async #measure(agent: AgentRow, machine: MachineRow, events: RunEventSink, inst?: string): Promise<Sizes> {
    try {
      const sizes = await this.#o.caps.measureAndStore(agent, machine, inst);
      const { agentMib: workspace_mib, machineMib: machine_workspace_mib, instanceMib } = sizes;
      const flow = instanceMib !== undefined ? { flow_workspace_mib: instanceMib } : {};
      await events("measurement", { workspace_mib, machine_workspace_mib, ...flow });
      return sizes;
    } catch (err) {
      await events("measurement", { error: messageOf(err) });
      return { agentMib: null, machineMib: null };
    }
  }

  /** Ends runs taken out of line before they started: cancelled, with why. */
  async endWaiting(runIds: string[], reason: string): Promise<void> {
    if (runIds.length === 0) return;
    const ids = await this.#o.records.endQueued(runIds, reason, "cancelled", { reason, queued: true });
    await this.#tellEnded(ids);
  }

  /** Calls `fn` with each run's id and final status once its record is written. */
  onEnded(fn: (runId: string, status: RunStatus) => void): void {
    this.#ended.add(fn);
  }

  async #tellEnded(runIds: string[]): Promise<void> {
    if (this.#ended.size === 0 || runIds.length === 0) return;
    try {
      for (let i = 0; i < runIds.length; i += 1000) {
        const rows = await this.#o.db
          .select({ id: schema.runs.id, status: schema.runs.status })
          .from(schema.runs)
          .where(inArray(schema.runs.id, runIds.slice(i, i + 1000)));
        for (const r of rows) for (const fn of this.#ended) fn(r.id, r.status);
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
