// Agent runs: a generation of an agent by its kind (assistant: the loop in the server; a
// harness kind: its CLI in the box), through a gateway session that holds the run's models,
// budget and workload token. The runs service claims the agent and writes the row; this
// module runs the kind's runner and writes the record: trace, output, usage and receipt.
import type { AgentRow } from "../agents/service.js";
import type { AgentSpec } from "../contract/spec.js";
import type { RunReceipt, RunUsage as RunUsageView } from "../contract/types.js";
import { WarrenError } from "../errors.js";
import type { DiskCaps } from "../homes/caps.js";
import { uidOf } from "../machines/placement.js";
import type { ModelGateway, RunEventSink } from "../models/types.js";
import type { Logger } from "../observability/log.js";
import type { ResolvedSecrets } from "../secrets/service.js";
import type { Records } from "../records/index.js";
import type { Db } from "../store/index.js";
import { schema } from "../store/index.js";
import type { AgentRunners, AgentRunResult, RunUsage } from "./kinds.js";

type RunRow = typeof schema.runs.$inferSelect;
type MachineRow = typeof schema.machines.$inferSelect;

/** What an agent run is made from, settled before its row is written. */
export interface AgentRunPlan {
  spec: AgentSpec;
  version: number | null;
  timeoutS: number;
}

/** The plan of an agent run, or request.invalid when the agent cannot run that way. */
export function planAgentRun(
  spec: AgentSpec,
  version: number | null,
  runners: AgentRunners,
  timeoutS: number | undefined,
): AgentRunPlan {
  if (spec.kind === "command")
    throw new WarrenError(
      "request.invalid",
      'kind: this agent is of kind command; start a run with {kind: "command", argv | command}, or give the agent a kind and a model',
    );
  if (!runners.get(spec.kind))
    throw new WarrenError(
      "request.invalid",
      `kind: this server runs no agents of kind ${spec.kind} (it runs: ${runners.kinds().join(", ") || "none"})`,
    );
  const max = spec.limits.max_run_s;
  return { spec, version, timeoutS: Math.min(timeoutS ?? max, max) };
}

const emptyUsage = (): RunUsage => ({
  tokens_in: 0,
  tokens_out: 0,
  usd: 0,
  calls: 0,
  steps: 0,
  tool_calls: 0,
  tool_refusals: 0,
});

export function usageView(u: RunUsage): RunUsageView {
  return {
    tokens_in: u.tokens_in,
    tokens_out: u.tokens_out,
    usd: Math.round(u.usd * 1e9) / 1e9,
    steps: u.steps,
    tool_calls: u.tool_calls,
    tool_refusals: u.tool_refusals,
  };
}

export interface AgentRunsOptions {
  db: Db;
  gateway: ModelGateway;
  runners: AgentRunners;
  caps: DiskCaps;
  logger: Logger;
  version: string;
  /** The one writer of run records, redacting them. */
  records: Records;
}

export class AgentRuns {
  /** What each agent run going on used so far. */
  readonly #live = new Map<string, RunUsage>();

  constructor(private readonly o: AgentRunsOptions) {}

  /** What a running agent run used so far, or undefined. */
  live(runId: string): RunUsageView | undefined {
    const u = this.#live.get(runId);
    return u ? usageView(u) : undefined;
  }

  async execute(
    run: RunRow,
    agent: AgentRow,
    machine: MachineRow,
    input: Buffer,
    plan: AgentRunPlan,
    before: { agentMib: number | null; machineMib: number | null },
    secrets: ResolvedSecrets,
    signal: AbortSignal,
  ): Promise<void> {
    const o = this.o;
    const { spec } = plan;
    // the run's records pass through the redaction of every secret that reached the agent,
    // every value the agent stores from its box from now on (warren-secret store), and the
    // run's workload token once its session is open
    const recording = o.records.openRun(run.id, agent.id, secrets);
    const redactor = recording.redactor;
    const pending: Promise<void>[] = [];
    const events: RunEventSink = async (type, data) => {
      const p = o.records.runEvent(run.id, type, data);
      pending.push(p);
      await p;
    };
    const startedAt = new Date();
    await o.records.updateRun(run.id, { status: "running", startedAt });
    await events("started", {
      kind: spec.kind,
      agent_id: agent.id,
      spec_version: plan.version,
      model: spec.model ? `${spec.model.provider}:${spec.model.name}` : null,
      input_bytes: input.length,
      timeout_s: plan.timeoutS,
    });

    const timer = new AbortController();
    const t = setTimeout(
      () => timer.abort(new Error(`ran past its ${plan.timeoutS} s limit`)),
      plan.timeoutS * 1000,
    );
    const runSignal = AbortSignal.any([signal, timer.signal]);
    let result: AgentRunResult;
    let usage = emptyUsage();
    this.#live.set(run.id, usage);
    let session: Awaited<ReturnType<ModelGateway["open"]>> | null = null;
    try {
      const runner = o.runners.get(spec.kind);
      if (!runner) throw new Error(`this server runs no agents of kind ${spec.kind}`);
      session = await o.gateway.open({
        runId: run.id,
        agent: { id: agent.id, orgId: agent.orgId, machineId: agent.machineId },
        spec,
        input: input.toString("utf8"),
        events,
      });
      recording.add([session.token]);
      // the models this run may call, in order: the one its input routes to, then the fallback
      await events("models", { candidates: session.candidates().map((m) => m.label) });
      result = await runner.run({
        runId: run.id,
        agent: {
          id: agent.id,
          orgId: agent.orgId,
          machineId: agent.machineId,
          slot: agent.slot,
          name: agent.name,
        },
        spec,
        input: input.toString("utf8"),
        signal: runSignal,
        events,
        gateway: session,
        progress: (u) => {
          usage = u;
          this.#live.set(run.id, u);
        },
      });
      usage = result.usage;
    } catch (err) {
      o.logger.info({ runId: run.id, err }, "the agent run failed before its runner answered");
      const m = session?.usage();
      if (m) usage = { ...usage, ...m };
      result = {
        status: "failed",
        status_reason: err instanceof Error ? err.message : String(err),
        output: "",
        exit_code: null,
        usage,
        models: [],
      };
    } finally {
      clearTimeout(t);
      session?.close();
    }
    // the run's own end wins over what the runner made of the abort
    if (timer.signal.aborted && !signal.aborted) {
      result = { ...result, status: "timed_out", status_reason: `ran past its ${plan.timeoutS} s limit` };
    } else if (signal.aborted) {
      const r: unknown = signal.reason;
      result = {
        ...result,
        status: "cancelled",
        status_reason: r instanceof Error && r.message ? r.message : "cancelled",
      };
    }
    const output = redactor.redactText(result.output);
    if (output) await events("output", { stream: "stdout", data: output });
    await events("exit", {
      status: result.status,
      exit_code: result.exit_code,
      reason: result.status_reason ?? null,
    });
    await Promise.allSettled(pending);

    let after: { agentMib: number | null; machineMib: number | null } = { agentMib: null, machineMib: null };
    try {
      after = await o.caps.measureAndStore(agent, machine);
      await events("measurement", { workspace_mib: after.agentMib, machine_workspace_mib: after.machineMib });
    } catch (err) {
      await events("measurement", { error: err instanceof Error ? err.message : String(err) });
    }
    const endedAt = new Date();
    const budget = session?.reached();
    const receipt: RunReceipt = {
      run_id: run.id,
      kind: spec.kind,
      argv: [],
      agent_id: agent.id,
      agent_name: agent.name,
      machine_id: machine.id,
      uid: uidOf(agent.slot),
      server_version: o.version,
      started_at: startedAt.toISOString(),
      ended_at: endedAt.toISOString(),
      duration_ms: endedAt.getTime() - startedAt.getTime(),
      exit_code: result.exit_code,
      signal: null,
      cpu_seconds: null,
      peak_memory_bytes: null,
      bytes_out: Buffer.byteLength(output),
      stdout_bytes: Buffer.byteLength(output),
      stderr_bytes: 0,
      input_bytes: input.length,
      limits: null,
      disk_before_mib: before.agentMib,
      disk_after_mib: after.agentMib,
      machine_disk_before_mib: before.machineMib,
      machine_disk_after_mib: after.machineMib,
      spec_version: plan.version,
      models: result.models,
      model_calls: usage.calls,
      tokens_in: usage.tokens_in,
      tokens_out: usage.tokens_out,
      usd: usageView(usage).usd,
      steps: usage.steps,
      tool_calls: usage.tool_calls,
      tool_calls_allowed: usage.tool_calls - usage.tool_refusals,
      tool_calls_refused: usage.tool_refusals,
      ...(budget && !budget.ok
        ? {
            budget_reached: {
              limit: budget.limit,
              max: budget.max,
              used: budget.used,
              on_limit: budget.on_limit,
            },
          }
        : {}),
    };
    await o.records.updateRun(run.id, {
      status: result.status,
      statusReason: result.status_reason ?? null,
      exitCode: result.exit_code,
      output,
      outputTruncated: false,
      endedAt,
      receipt,
      usage: usageView(usage),
    });
    this.#live.delete(run.id);
    recording.close();
  }
}
