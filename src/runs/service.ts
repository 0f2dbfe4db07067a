// Command runs: a generation with an input, an output and a record (status, exit, output,
// a trace of events and a receipt). At most one generation per agent at a time.
import { and, asc, desc, eq, gt, inArray, lt } from "drizzle-orm";
import type { Access, Identity, Role } from "../access/index.js";
import type { AgentRow, Agents } from "../agents/service.js";
import { WarrenError } from "../errors.js";
import { BoundedOutput } from "../exec/output.js";
import { argvOf, agentEnv, commandWalls, limitsOf, redactedIo, type CommandLimits } from "../exec/service.js";
import type { ResolvedSecrets, Secrets } from "../secrets/service.js";
import type { DiskCaps } from "../homes/caps.js";
import { newId } from "../ids.js";
import { homeOf } from "../machines/placement.js";
import type { MachineRuntime } from "../runtime/index.js";
import type { HomeLayout } from "../boxes/index.js";
import type { Logger } from "../observability/log.js";
import type { Db } from "../store/index.js";
import { schema } from "../store/index.js";
import type { Generation, GenerationRegistry } from "./registry.js";
import type { Run, RunReceipt, RunUsage } from "../contract/types.js";
import type { ModelGateway } from "../models/types.js";
import { AgentRuns, planAgentRun, type AgentRunPlan } from "./agent-run.js";
import type { AgentRunners } from "./kinds.js";
import type { Records } from "../records/index.js";

export const MAX_INPUT_BYTES = 256 * 1024;
export const OUTPUT_LIMIT_BYTES = 1024 * 1024;
/** Output events kept in a run's trace; past this the trace says how much was left out. */
export const TRACE_OUTPUT_EVENTS = 2000;

export type RunRow = typeof schema.runs.$inferSelect;
export type RunStatus = RunRow["status"];
export const terminal: RunStatus[] = ["succeeded", "failed", "timed_out", "cancelled", "lost"];

export type RunInput = CommandRunInput | AgentRunInput;

/** Runs the agent by its kind (src/runs/agent-run.ts). */
export interface AgentRunInput {
  kind: "agent";
  input: string;
  timeout_s?: number | undefined;
  /** false: refuse the run when it cannot start now, instead of queueing it. */
  wait?: boolean | undefined;
}

export interface CommandRunInput {
  kind: "command";
  argv?: string[] | undefined;
  command?: string | undefined;
  input?: string | undefined;
  timeout_s?: number | undefined;
  env?: Record<string, string> | undefined;
  /** The run's own limits, tighter than its machine's. */
  limits?: CommandLimits | undefined;
  /** false: refuse the run when it cannot start now, instead of queueing it. */
  wait?: boolean | undefined;
}

/** Why a run was cancelled: the reason its generation was aborted with. */
function abortReason(signal: AbortSignal): string {
  const r: unknown = signal.reason;
  return r instanceof Error && r.message ? r.message : "cancelled";
}

export function runView(r: RunRow): Run {
  return {
    id: r.id,
    agent_id: r.agentId,
    machine_id: r.machineId,
    kind: r.kind,
    status: r.status,
    status_reason: r.statusReason,
    argv: r.argv,
    exit_code: r.exitCode,
    signal: r.signal,
    output: r.output,
    output_truncated: r.outputTruncated,
    timeout_s: r.timeoutS,
    created_at: r.createdAt.toISOString(),
    started_at: r.startedAt?.toISOString() ?? null,
    ended_at: r.endedAt?.toISOString() ?? null,
    // written by this service in the contract's shape (see finish)
    receipt: r.receipt as RunReceipt | null,
    // written by agent runs in the contract's shape (src/runs/agent-run.ts)
    ...(r.usage ? { usage: r.usage as RunUsage } : {}),
  };
}

/** An auditor reads the record of a run (status, times, receipt) without its workload: no output. */
function viewFor(role: Role | null, r: RunRow): Run {
  const v = runView(r);
  if (role === "auditor") return { ...v, output: "", output_withheld: true };
  return v;
}

/** Where a run's private files go: written on the host, seen in the box at /agent. */
export interface RunStaging {
  stage(
    machineId: string,
    runId: string,
    files: Record<string, Buffer>,
    uid: number,
  ): Promise<{ boxPath: string }>;
  unstage(machineId: string, runId: string): Promise<void>;
}

export interface RunsOptions {
  db: Db;
  access: Access;
  agents: Agents;
  runtime: MachineRuntime;
  registry: GenerationRegistry;
  caps: DiskCaps;
  staging: RunStaging;
  homes: HomeLayout;
  logger: Logger;
  version: string;
  secrets: Secrets;
  /** The one writer of run records (trace events, status_reason, output), redacting them. */
  records: Records;
  /** Agent runs: the model gateway and the runners of agent kinds. */
  gateway: ModelGateway;
  runners: AgentRunners;
}

export class Runs {
  readonly #o: RunsOptions;
  /** The bookkeeping of each run this server started, by run id, until it is recorded. */
  readonly #pending = new Map<string, Promise<void>>();
  /** The command tree (cgroup) of each running run, for its live usage. */
  readonly #commands = new Map<string, { machineId: string; cgroup: string }>();
  readonly #agentRuns: AgentRuns;

  constructor(o: RunsOptions) {
    this.#o = o;
    this.#agentRuns = new AgentRuns({
      db: o.db,
      gateway: o.gateway,
      runners: o.runners,
      caps: o.caps,
      logger: o.logger,
      version: o.version,
      records: o.records,
    });
    // a runaway tree of a run is recorded on the run too (it may have left it in the background)
    o.runtime.onRunaway(async (e) => {
      if (!e.owner?.runId) return;
      await this.#event(e.owner.runId, "runaway", {
        limit: e.limit,
        reason: e.reason,
        held_s: e.heldS,
        pids: e.pids,
        memory_bytes: e.memoryBytes,
        fork_failures: e.forkFailures,
        ended: e.ended,
        detail: e.detail,
      });
    });
  }

  /**
   * At boot: runs that were going on when the server stopped become lost; runs that were
   * still queued (nothing of them ran, and their input was never kept) become lost too, with
   * a reason that says so: start them again.
   */
  async markLost(reason = "the server stopped while the run was going on"): Promise<number> {
    const queued = "the server stopped before the run started (nothing of it ran); start it again";
    let n = 0;
    for (const [status, why] of [
      ["running", reason],
      ["queued", queued],
    ] as const) {
      const ids = await this.#o.records.updateRuns(eq(schema.runs.status, status), {
        status: "lost",
        statusReason: why,
        endedAt: new Date(),
      });
      for (const id of ids) await this.#event(id, "lost", { reason: why, queued: status === "queued" });
      n += ids.length;
    }
    return n;
  }

  async #event(runId: string, type: string, data: Record<string, unknown>): Promise<void> {
    await this.#o.records.runEvent(runId, type, data);
  }

  async start(who: Identity, agentId: string, input: RunInput): Promise<Run> {
    const o = this.#o;
    const agent = await o.agents.load(who, agentId, "write");
    const inputBytes = Buffer.from(input.input ?? "", "utf8");
    if (inputBytes.length > MAX_INPUT_BYTES) {
      throw new WarrenError(
        "run.input_too_large",
        `the input is ${inputBytes.length} bytes, above the ${MAX_INPUT_BYTES}-byte limit; pass large data as a file in the home`,
      );
    }
    let plan: AgentRunPlan | null = null;
    if (input.kind === "agent") {
      const current = await o.agents.specOf(agent);
      plan = planAgentRun(current.spec, current.version, o.runners, input.timeout_s);
    }
    const argv = input.kind === "command" ? argvOf(input) : [];
    const [machine] = await o.db
      .select()
      .from(schema.machines)
      .where(eq(schema.machines.id, agent.machineId));
    if (!machine) throw new WarrenError("not_found", "machine was not found");
    const id = newId("run");
    // a home over its cap refuses the run now, queued or not (and again when it starts)
    const gated = await o.caps.gate(agent, machine);
    // the run takes its place in line before its record exists; it starts once both are there
    let recorded!: (row: RunRow | null) => void;
    const record = new Promise<RunRow | null>((r) => (recorded = r));
    let startedNow = false;
    const launch = (gen: Generation) => {
      const p = record
        .then(async (row) => {
          if (!row) return;
          // a run that waited is gated again: its home may have grown meanwhile
          const before = startedNow ? gated : await o.caps.gate(agent, machine);
          // resolved once, as the generation starts: a change reaches the next generation
          const secrets = await o.secrets.resolve(agent);
          const signal = gen.controller.signal;
          await (plan
            ? this.#agentRuns.execute(row, agent, machine, inputBytes, plan, before, secrets, signal)
            : this.#execute(
                row,
                agent,
                machine,
                inputBytes,
                input as CommandRunInput,
                before,
                secrets,
                signal,
              ));
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
          this.#commands.delete(id);
        });
      this.#pending.set(id, p);
    };
    const placed = o.registry.enqueue(
      { agentId: agent.id, orgId: agent.orgId, runId: id, start: launch },
      { wait: input.wait ?? true },
    );
    startedNow = placed === "started";
    try {
      const timeoutS = plan ? plan.timeoutS : (input.timeout_s ?? 3600);
      const [row] = await o.db
        .insert(schema.runs)
        .values({
          id,
          orgId: agent.orgId,
          agentId: agent.id,
          machineId: machine.id,
          kind: plan ? plan.spec.kind : input.kind,
          status: "queued",
          argv,
          specVersion: plan?.version ?? null,
          inputBytes: inputBytes.length,
          timeoutS,
        })
        .returning();
      if (!row) throw new Error("run insert returned nothing");
      if (!startedNow) await this.#event(id, "queued", { ...this.#waitingView(id) });
      recorded(row);
      return this.#withWaiting(runView(row));
    } catch (err) {
      o.registry.dequeue(id);
      recorded(null);
      throw err;
    }
  }

  /** A run that could not start once its turn came: failed, with why. */
  async #refuse(runId: string, err: unknown): Promise<void> {
    const reason = err instanceof Error ? err.message : String(err);
    const changed = await this.#o.records.updateRun(
      runId,
      { status: "failed", statusReason: reason, endedAt: new Date() },
      eq(schema.runs.status, "queued"),
    );
    if (changed) await this.#event(runId, "refused", { reason });
    else this.#o.logger.error({ err, runId }, "run bookkeeping failed");
  }

  /** Ends runs taken out of line before they started: cancelled, with why. */
  async #endWaiting(runIds: string[], reason: string): Promise<void> {
    if (runIds.length === 0) return;
    const ids = await this.#o.records.updateRuns(
      and(inArray(schema.runs.id, runIds), eq(schema.runs.status, "queued"))!,
      { status: "cancelled", statusReason: reason, endedAt: new Date() },
    );
    for (const id of ids) await this.#event(id, "cancelled", { reason, queued: true });
  }

  #waitingView(runId: string): Run["waiting"] {
    const w = this.#o.registry.waiting(runId);
    return w ? { reason: w.reason, since: w.since.toISOString(), position: w.position } : undefined;
  }

  /** A queued run's view says why it waits. */
  #withWaiting(v: Run): Run {
    if (v.status !== "queued") return v;
    const w = this.#o.registry.waiting(v.id);
    if (!w) return v;
    return {
      ...v,
      status_reason: w.detail,
      waiting: { reason: w.reason, since: w.since.toISOString(), position: w.position },
    };
  }

  /** A command run, its records written through the run's redaction set while it goes on. */
  async #execute(
    run: RunRow,
    agent: AgentRow,
    machine: typeof schema.machines.$inferSelect,
    input: Buffer,
    asked: Pick<CommandRunInput, "env" | "limits">,
    before: { agentMib: number | null; machineMib: number | null },
    secrets: ResolvedSecrets,
    signal: AbortSignal,
  ): Promise<void> {
    const recording = this.#o.records.openRun(run.id, agent.id, secrets);
    try {
      await this.#executeCommand(run, agent, machine, input, asked, before, secrets, signal);
    } finally {
      recording.close();
    }
  }

  async #executeCommand(
    run: RunRow,
    agent: AgentRow,
    machine: typeof schema.machines.$inferSelect,
    input: Buffer,
    asked: Pick<CommandRunInput, "env" | "limits">,
    before: { agentMib: number | null; machineMib: number | null },
    secrets: ResolvedSecrets,
    signal: AbortSignal,
  ): Promise<void> {
    const o = this.#o;
    const walls = commandWalls(agent, machine.trust, o.homes, { run: true });
    const { uid, files } = walls;
    const output = new BoundedOutput(OUTPUT_LIMIT_BYTES);
    let stderrBytes = 0;
    let traced = 0;
    let dropped = 0;
    const pendingEvents: Promise<void>[] = [];
    const trace = (stream: "stdout" | "stderr", c: Buffer) => {
      if (traced >= TRACE_OUTPUT_EVENTS) {
        dropped++;
        return;
      }
      traced++;
      pendingEvents.push(this.#event(run.id, "output", { stream, data: c.toString("utf8") }));
    };
    const startedAt = new Date();
    await o.records.updateRun(run.id, { status: "running", startedAt });
    await this.#event(run.id, "started", {
      argv: run.argv,
      agent_id: agent.id,
      uid,
      input_bytes: input.length,
      timeout_s: run.timeoutS,
    });

    let status: RunStatus = "failed";
    let reason: string | null = null;
    let result: Awaited<ReturnType<MachineRuntime["exec"]>> | null = null;
    try {
      const staged = await o.staging.stage(machine.id, run.id, { input }, uid);
      // what leaves the box (output and trace) passes through redaction of every secret that reached it
      const io = redactedIo(
        {
          signal,
          onStdout: (c: Buffer) => {
            output.push(c);
            trace("stdout", c);
          },
          onStderr: (c: Buffer) => {
            stderrBytes += c.length;
            trace("stderr", c);
          },
          onStart: (_pid: number, cgroup?: string) => {
            if (cgroup) this.#commands.set(run.id, { machineId: machine.id, cgroup });
          },
        },
        secrets,
      );
      try {
        result = await o.runtime.exec(
          machine.id,
          {
            argv: run.argv,
            env: agentEnv(agent, {
              ...asked.env,
              ...secrets.env,
              WARREN_RUN_ID: run.id,
              WARREN_INPUT: "/agent/input",
            }),
            cwd: homeOf(agent.id),
            ...walls,
            timeoutMs: run.timeoutS * 1000,
            agentDir: staged.boxPath,
            generation: true,
            limits: limitsOf(asked.limits),
          },
          io,
          { agentId: agent.id, runId: run.id, argv: run.argv },
        );
      } finally {
        io.flush();
        await o.staging
          .unstage(machine.id, run.id)
          .catch((err: unknown) => o.logger.warn({ err, runId: run.id }, "unstaging failed"));
      }
      status = result.timedOut
        ? "timed_out"
        : result.cancelled || signal.aborted
          ? "cancelled"
          : result.exitCode === 0
            ? "succeeded"
            : "failed";
      if (status === "timed_out") reason = `ran past its ${run.timeoutS} s limit`;
      else if (status === "cancelled") reason = abortReason(signal);
      else if (status === "failed")
        reason = result.signal ? `killed by ${result.signal}` : `exited with ${result.exitCode}`;
    } catch (err) {
      status = signal.aborted ? "cancelled" : "failed";
      reason = signal.aborted ? abortReason(signal) : err instanceof Error ? err.message : String(err);
    }
    await Promise.allSettled(pendingEvents);
    if (dropped > 0) await this.#event(run.id, "output_dropped", { events: dropped });
    await this.#event(run.id, "exit", {
      exit_code: result?.exitCode ?? null,
      signal: result?.signal ?? null,
      timed_out: result?.timedOut ?? false,
      status,
    });

    let after: { agentMib: number | null; machineMib: number | null } = { agentMib: null, machineMib: null };
    try {
      const sizes = await o.caps.measureAndStore(agent, machine);
      after = sizes;
      await this.#event(run.id, "measurement", {
        workspace_mib: sizes.agentMib,
        machine_workspace_mib: sizes.machineMib,
      });
    } catch (err) {
      await this.#event(run.id, "measurement", { error: err instanceof Error ? err.message : String(err) });
    }
    const endedAt = new Date();
    const receipt = {
      run_id: run.id,
      kind: run.kind,
      argv: run.argv,
      agent_id: agent.id,
      agent_name: agent.name,
      machine_id: machine.id,
      uid,
      files,
      server_version: o.version,
      started_at: startedAt.toISOString(),
      ended_at: endedAt.toISOString(),
      duration_ms: result?.durationMs ?? endedAt.getTime() - startedAt.getTime(),
      exit_code: result?.exitCode ?? null,
      signal: result?.signal ?? null,
      cpu_seconds: result?.usage?.cpuSeconds ?? null,
      peak_memory_bytes: result?.usage?.peakMemoryBytes ?? null,
      bytes_out: output.total + stderrBytes,
      stdout_bytes: output.total,
      stderr_bytes: stderrBytes,
      input_bytes: input.length,
      limits: asked.limits ?? null,
      disk_before_mib: before.agentMib,
      disk_after_mib: after.agentMib,
      machine_disk_before_mib: before.machineMib,
      machine_disk_after_mib: after.machineMib,
    };
    await o.records.updateRun(run.id, {
      status,
      statusReason: reason,
      exitCode: result?.exitCode ?? null,
      signal: result?.signal ?? null,
      output: output.text(),
      outputTruncated: output.truncated,
      endedAt,
      receipt,
    });
  }

  async #load(who: Identity, id: string, perm: "read" | "inspect" | "write"): Promise<RunRow> {
    return (await this.#loadWithRole(who, id, perm)).row;
  }

  async #loadWithRole(
    who: Identity,
    id: string,
    perm: "read" | "inspect" | "write",
  ): Promise<{ row: RunRow; role: Role }> {
    const [r] = await this.#o.db.select().from(schema.runs).where(eq(schema.runs.id, id));
    if (!r) throw new WarrenError("not_found", "run was not found");
    // runs outlive their agents: access follows the run's organisation
    const role = await this.#o.access.require(r.orgId, who, perm, "run");
    return { row: r, role };
  }

  async get(who: Identity, id: string): Promise<Run> {
    const { row, role } = await this.#loadWithRole(who, id, "read");
    const view = this.#withWaiting(viewFor(role, row));
    const cmd = row.status === "running" ? this.#commands.get(id) : undefined;
    const usage = cmd ? this.#o.runtime.commandUsage(cmd.machineId, cmd.cgroup) : null;
    const live = row.status === "running" ? this.#agentRuns.live(id) : undefined;
    return { ...view, ...(usage ? { box_usage: usage } : {}), ...(live ? { usage: live } : {}) };
  }

  async events(
    who: Identity,
    id: string,
    after?: number,
  ): Promise<{ id: number; type: string; at: string; data: unknown }[]> {
    await this.#load(who, id, "inspect");
    const where =
      after === undefined
        ? eq(schema.runEvents.runId, id)
        : and(eq(schema.runEvents.runId, id), gt(schema.runEvents.id, after));
    const rows = await this.#o.db
      .select()
      .from(schema.runEvents)
      .where(where)
      .orderBy(asc(schema.runEvents.id))
      .limit(5000);
    return rows.map((e) => ({ id: e.id, type: e.type, at: e.at.toISOString(), data: e.data }));
  }

  async list(
    who: Identity,
    agentId: string,
    opts: { limit: number; before?: string | undefined },
  ): Promise<Run[]> {
    const agent = await this.#o.agents.load(who, agentId, "read");
    const role = await this.#o.access.roleIn(agent.orgId, who);
    const where = [eq(schema.runs.agentId, agent.id)];
    if (opts.before) {
      const [b] = await this.#o.db
        .select({ createdAt: schema.runs.createdAt })
        .from(schema.runs)
        .where(eq(schema.runs.id, opts.before));
      if (b) where.push(lt(schema.runs.createdAt, b.createdAt));
    }
    const rows = await this.#o.db
      .select()
      .from(schema.runs)
      .where(and(...where))
      .orderBy(desc(schema.runs.createdAt), desc(schema.runs.id))
      .limit(opts.limit);
    return rows.map((r) => this.#withWaiting(viewFor(role, r)));
  }

  async cancel(who: Identity, id: string): Promise<Run> {
    const r = await this.#load(who, id, "write");
    if (terminal.includes(r.status)) {
      throw new WarrenError("run.not_cancellable", `the run already ended as ${r.status}`);
    }
    if (this.#o.registry.dequeue(id)) {
      await this.#endWaiting([id], "cancelled by an operator while it waited");
      return this.#load(who, id, "write").then(runView);
    }
    this.#o.registry.cancel(id, "cancelled by an operator");
    return runView(r);
  }

  /** Cancels the agent's generation, if any, and waits until its record is written. */
  async stopAgent(agentId: string, reason: string): Promise<void> {
    const waiting = this.#o.registry.waiters(agentId).filter((id) => this.#o.registry.dequeue(id));
    await this.#endWaiting(waiting, reason);
    const g = this.#o.registry.forAgent(agentId);
    if (!g) return;
    this.#o.registry.cancel(g.runId, reason);
    await this.#pending.get(g.runId);
  }

  /** Waits up to `ms` for the runs going on to end by themselves; true when none is left. */
  async drain(ms: number): Promise<boolean> {
    // what still waits does not start while the server stops
    await this.#endWaiting(this.#o.registry.close(), "the server stopped before the run started");
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
    await this.#endWaiting(this.#o.registry.close(), `${reason} before the run started`);
    for (const agentId of this.#o.registry.activeAgents()) {
      const g = this.#o.registry.forAgent(agentId);
      if (g) this.#o.registry.cancel(g.runId, reason);
    }
    await Promise.allSettled([...this.#pending.values()]);
  }
}
