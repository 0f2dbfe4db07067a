// One run from its start to its end, for the run recorder (recorder.ts): its door opened, its
// `started` (or `taken_up`) event, its time limit, its runner's outcome, the run's own end
// (cancelled, timed out, stopped for its disk cap) winning over what the runner made of it,
// its `exit`, its measurement and its receipt, every record through its redaction set.
import type { AgentRow } from "../agents/service.js";
import type { SandboxPolicy } from "../contract/policy.js";
import type { RunReceipt, RunUsage } from "../contract/types.js";
import type { DiskCaps } from "../homes/caps.js";
import type { RunEventSink } from "../models/types.js";
import type { Logger } from "../observability/log.js";
import { countRun } from "../observability/telemetry.js";
import { contextOf, forgetRun, inSpan, rememberRun } from "../observability/tracing.js";
import type { Records } from "../records/index.js";
import type { MachineRow, Workloads } from "../workloads/index.js";
import type { MachineRuntime } from "../runtime/index.js";
import { awaitBox } from "./await-box.js";
import { RunCallLog } from "./call-log.js";
import type { RunOutcome, RunRequest } from "./runner.js";
import type { RunStops } from "./stops.js";
import type { RunRow, RunStatus } from "./view.js";

export type Sizes = { agentMib: number | null; machineMib: number | null };
/** What a run going on uses: its command tree, its models and tools so far, its sandbox policy. */
export type Live = {
  command?: { machineId: string; cgroup: string };
  usage?: RunUsage;
  policy?: SandboxPolicy;
};

export interface DriveDeps {
  records: Records;
  workloads: Workloads;
  caps: DiskCaps;
  /** Starts a machine's box (a run waits, queued with why, while it cannot: await-box.ts). */
  runtime: Pick<MachineRuntime, "ensure">;
  logger: Logger;
  version: string;
  stops: RunStops;
  /** What each run going on uses, by run id (the recorder's). */
  live: Map<string, Live>;
  /** An agent's runtime folder on the host (null where its box has none): its runs' call logs. */
  runtimeDir?: ((machineId: string, agentId: string) => string | null) | undefined;
}

/** Why a run was cancelled: the reason its generation was aborted with. */
function abortReason(signal: AbortSignal): string {
  const r: unknown = signal.reason;
  return r instanceof Error && r.message ? r.message : "cancelled";
}

export const messageOf = (err: unknown) => (err instanceof Error ? err.message : String(err));

/** One run from its start to its end, its records written through its redaction set: a span of its trace. */
export function driveRun(
  o: DriveDeps,
  run: RunRow,
  req: RunRequest,
  before: Sizes,
  signal: AbortSignal,
): Promise<void> {
  const attributes = {
    "warren.run.id": run.id,
    "warren.run.kind": run.kind,
    "warren.agent.id": req.agent.id,
    "warren.org.id": req.agent.orgId,
    "warren.machine.id": req.machine.id,
    ...(req.conversationId ? { "gen_ai.conversation.id": req.conversationId } : {}),
  };
  return inSpan(`run ${run.kind}`, attributes, async (span) => {
    // what the run's commands do outside its calls (egress) nests under it too
    rememberRun(run.id, contextOf(span));
    try {
      const status = await drive(o, run, req, before, signal);
      if (status) {
        span.setAttribute("warren.run.status", status);
        countRun(run.kind, status);
      }
    } finally {
      forgetRun(run.id);
    }
  });
}

/** Answers the run's final status (undefined: suspended, for the next server). */
async function drive(
  o: DriveDeps,
  run: RunRow,
  req: RunRequest,
  before: Sizes,
  signal: AbortSignal,
): Promise<RunStatus | undefined> {
  const { agent, machine } = req;
  // a run whose box cannot start now waits for it, queued with why, within its limit
  const waitStart = Date.now();
  if (!req.resume && needsBox(run, machine)) {
    const ended = await awaitBox(o, run, machine.id, signal);
    if (ended) {
      await o.records.updateRun(run.id, {
        status: ended.status,
        statusReason: ended.reason,
        endedAt: new Date(),
      });
      const { status, reason } = ended;
      await o.records.runEvent(run.id, "exit", {
        status,
        exit_code: null,
        signal: null,
        timed_out: status === "timed_out",
        reason,
      });
      return ended.status;
    }
  }
  const waited = Date.now() - waitStart;
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
  // its gateway calls are logged in the agent's runtime folder too (call-log.ts), from here alone
  const calls = new RunCallLog({
    dir: o.runtimeDir?.(machine.id, agent.id) ?? null,
    runId: run.id,
    uid: work.uid,
    redactor: recording.redactor,
    onError: (err) =>
      o.logger.warn({ runId: run.id, err: messageOf(err) }, "the run's call log was not written"),
  });
  const events: RunEventSink = async (type, data) => {
    const p = o.records.runEvent(run.id, type, data);
    pending.push(p, calls.note(type, data));
    await p;
  };
  const live: Live = req.sandboxPolicy ? { policy: req.sandboxPolicy } : {};
  o.live.set(run.id, live);
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
    const left = run.timeoutS * 1000 - (req.resume ? Date.now() - startedAt.getTime() : waited);
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
    if (out.status === "suspended") return undefined; // its row stays waiting, for the next server (resume.ts)
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
    if (!signal.aborted) [status, reason] = o.stops.ended(run.id, status, reason);
    await Promise.allSettled(pending);
    await events("exit", {
      status,
      exit_code: out.exitCode,
      signal: out.signal ?? null,
      timed_out: status === "timed_out",
      reason,
    });
    const after = await measure(o, agent, machine, events, req.instance?.id);
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
    return status;
  } finally {
    await calls.close();
    await work.unstage();
    await work.release();
    recording.close();
  }
}

/**
 * Whether the run waits for its box before it starts: every kind whose commands run in the box
 * from their start, and an assistant's turn while its machine's last start failed.
 */
function needsBox(run: RunRow, machine: MachineRow): boolean {
  if (run.kind !== "assistant") return true;
  return machine.state === "stopped" && (machine.stateReason ?? "").startsWith("start failed");
}

async function measure(
  o: Pick<DriveDeps, "caps">,
  agent: AgentRow,
  machine: MachineRow,
  events: RunEventSink,
  inst?: string,
): Promise<Sizes> {
  try {
    const sizes = await o.caps.measureAndStore(agent, machine, inst);
    const { agentMib: workspace_mib, machineMib: machine_workspace_mib, instanceMib } = sizes;
    const flow = instanceMib !== undefined ? { flow_workspace_mib: instanceMib } : {};
    await events("measurement", { workspace_mib, machine_workspace_mib, ...flow });
    return sizes;
  } catch (err) {
    await events("measurement", { error: messageOf(err) });
    return { agentMib: null, machineMib: null };
  }
}
