// Agent runs: a generation of an agent by its kind (assistant: the loop in the server; a
// harness kind: its CLI in the box), through a gateway session that holds the run's models,
// budget and workload token. The run recorder drives it like every run; this runner opens
// the session, hands the kind's runner the run's door, and answers its output and usage.
import type { AgentSpec } from "../contract/spec.js";
import type { RunReceipt, RunUsage as RunUsageView } from "../contract/types.js";
import { WarrenError } from "../errors.js";
import type { ModelGateway } from "../models/types.js";
import type { Workload } from "../workloads/index.js";
import type { AgentRunContext, AgentRunners, AgentRunResult, RunUsage, TurnHooks } from "./kinds.js";
import type { RunnerContext, RunOutcome, RunRunner } from "./runner.js";
import { TextStream } from "./text-stream.js";

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

export class ModelRunner implements RunRunner {
  constructor(
    private readonly plan: AgentRunPlan,
    private readonly gateway: ModelGateway,
    private readonly runners: AgentRunners,
    /** A conversation's turn: its history and transcript (src/conversations); a run suspended and resumed (resume.ts). */
    private readonly turn: TurnHooks & Pick<AgentRunContext, "resume" | "suspend"> = {},
  ) {}

  started(): Record<string, unknown> {
    const { spec } = this.plan;
    return {
      kind: spec.kind,
      spec_version: this.plan.version,
      model: spec.model ? `${spec.model.provider}:${spec.model.name}` : null,
    };
  }

  async run(ctx: RunnerContext): Promise<RunOutcome> {
    const { spec } = this.plan;
    const work: Workload = ctx.workload;
    const agent = work.agent;
    const input = ctx.input.toString("utf8");
    let usage = emptyUsage();
    let result: AgentRunResult;
    let session: Awaited<ReturnType<ModelGateway["open"]>> | null = null;
    // the model's text as it streams, every kind of run alike: `output` events of stream text,
    // each naming its model step, written like every event of the run
    const text = new TextStream(ctx.recording.redactor, (data, step) =>
      ctx.events("output", { stream: "text", data, step }),
    );
    try {
      const runner = this.runners.get(spec.kind);
      if (!runner) throw new Error(`this server runs no agents of kind ${spec.kind}`);
      session = await this.gateway.open({
        runId: ctx.run.id,
        agent: { id: agent.id, orgId: agent.orgId, machineId: agent.machineId },
        spec,
        input,
        events: ctx.events,
      });
      // the workload token is redacted from the box's output and the run's records, like a secret
      work.protect([session.token]);
      // the models this run may call, in order: the one its input routes to, then the fallback
      await ctx.events("models", { candidates: session.candidates().map((m) => m.label) });
      result = await runner.run({
        runId: ctx.run.id,
        workload: work,
        spec,
        input,
        signal: ctx.signal,
        events: ctx.events,
        gateway: session,
        ...this.turn,
        onText: (delta, step) => text.push(delta, step),
        progress: (u) => {
          usage = u;
          ctx.progress(usageView(u));
        },
      });
      usage = result.usage;
    } catch (err) {
      const m = session?.usage();
      if (m) usage = { ...usage, ...m };
      result = {
        status: "failed",
        reason: err instanceof Error ? err.message : String(err),
        output: "",
        exitCode: null,
        usage,
        models: [],
      };
    } finally {
      await text.end();
      session?.close();
    }
    // the server stopped while a call waited for an approval: the run goes on in the next server
    if (result.status === "suspended") return { status: "suspended", exitCode: null, output: "" };
    const output = ctx.recording.redactor.redactText(result.output);
    if (output) await ctx.events("output", { stream: "stdout", data: output });
    const budget = session?.reached();
    const receipt: Partial<RunReceipt> = {
      kind: spec.kind,
      argv: [],
      spec_version: this.plan.version,
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
    return {
      status: result.status,
      reason: result.reason ?? null,
      exitCode: result.exitCode,
      output,
      receipt,
      usage: usageView(usage),
    };
  }
}
