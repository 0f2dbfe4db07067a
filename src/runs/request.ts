// One way to start agent work: every run of an agent (a run asked for, a conversation's turn,
// a schedule's fire, an evaluation's case, a guild's message, a flow's step, a run taken up
// after a restart) is a run request built here, then handed to the run recorder. Here its
// version is chosen (asked by number, the canary's share by routing key, or pinned: a
// conversation's, a resumed run's), its persona narrows its spec and secrets, its fence and
// its limits are settled, and its runner is made: the agent's kind (ModelRunner), a command
// (CommandRunner), or the caller's own (a turn's).
import type { Fence } from "../areas/fence.js";
import type { AgentRow, Agents } from "../agents/service.js";
import type { AgentSpec } from "../contract/spec.js";
import type { ModelGateway } from "../models/types.js";
import type { CommandLimits } from "../workloads/index.js";
import { CommandRunner } from "./command.js";
import type { AgentRunContext, AgentRunners, SuspendedLoop } from "./kinds.js";
import { ModelRunner, planAgentRun, type AgentRunPlan } from "./model-run.js";
import type { RunRequest, RunRunner } from "./runner.js";
import type { RunRow } from "./view.js";

type VersionAsk = { version?: number | undefined; routing_key?: string | undefined };

/** The version a run runs (asked by number, a canary's, or the current one) with its spec. */
export type VersionForRun = (
  agent: AgentRow,
  ask: VersionAsk,
) => Promise<{ spec: AgentSpec; version: number | null }>;

/** What building a run request reads: the agent's versions and machine, the kinds' runners. */
export interface RunRequestDeps {
  agents: Pick<Agents, "specOf" | "specAt" | "machineOf">;
  gateway: ModelGateway;
  runners: AgentRunners;
  /** Picks an asked-for version (src/versions); default the agent's current one. */
  versionFor?: VersionForRun | undefined;
  /** Keeps where an assistant run stands while a call waits for an approval (resume.ts). */
  suspend?: AgentRunContext["suspend"];
}

/** The agent work to start. */
export interface AgentWork {
  agent: AgentRow;
  input: string;
  /**
   * asked: by number, or the canary's share by routing key; pinned: that version while it is
   * kept, else the current one (a conversation's canary, a turn taken up again).
   */
  version: { ask: VersionAsk } | { pinned: number | null | undefined };
  /** The run's limit in seconds; at most (and by default) the version's max_run_s. */
  timeoutS?: number | undefined;
  /** A command run instead of the agent's kind (its limit by default an hour). */
  command?: { argv: string[]; env?: Record<string, string> | undefined; limits?: CommandLimits | undefined };
  /** A persona: it narrows the spec (tools, instructions) and the secrets that reach the run. */
  persona?: { narrow(spec: AgentSpec): AgentSpec; secrets: readonly string[] | undefined } | undefined;
  /** The folders of the home the run keeps; null: the whole home. */
  fence?: Fence | undefined;
  /**
   * The runner of the work, given its plan and the agent's kind's runner (ModelRunner, the
   * default), which it may wrap: a new way of running agent work is a runner made here.
   */
  runner?: ((plan: AgentRunPlan, base: RunRunner) => RunRunner) | undefined;
  /** A run suspended by the last server's stop: its row and where its loop stood. */
  resume?: { run: RunRow; state: SuspendedLoop } | undefined;
  /** What the recorder takes as it is (see RunRequest). */
  rest?:
    Partial<Pick<RunRequest, "id" | "wait" | "instance" | "conversationId" | "cwd" | "place">> | undefined;
}

async function chooseVersion(d: RunRequestDeps, agent: AgentRow, v: AgentWork["version"]) {
  if ("ask" in v) return (d.versionFor ?? ((a: AgentRow) => d.agents.specOf(a)))(agent, v.ask);
  const spec = v.pinned == null ? null : await d.agents.specAt(agent.id, v.pinned);
  return spec && v.pinned != null ? { spec, version: v.pinned } : d.agents.specOf(agent);
}

/** The run request of agent work, or request.invalid when the agent cannot run that way. */
export async function runRequest(d: RunRequestDeps, w: AgentWork): Promise<RunRequest> {
  const { agent } = w;
  const machine = await d.agents.machineOf(agent);
  // the run keeps this version (its sandbox policy too) for its whole life
  const chosen = await chooseVersion(d, agent, w.version);
  const common = {
    ...w.rest,
    agent,
    machine,
    input: Buffer.from(w.input, "utf8"),
    wait: w.rest?.wait ?? true,
    sandboxPolicy: chosen.spec.sandbox_policy,
    ...(w.resume ? { resume: w.resume.run, id: w.resume.run.id } : {}),
  };
  if (w.command) {
    const argv = w.command.argv;
    const runner = new CommandRunner({ argv, env: w.command.env, limits: w.command.limits });
    const timeoutS = w.timeoutS ?? 3600;
    return { ...common, kind: "command", argv, specVersion: chosen.version, timeoutS, runner };
  }
  const spec = w.persona ? w.persona.narrow(chosen.spec) : chosen.spec;
  const plan = planAgentRun(spec, chosen.version, d.runners, w.timeoutS);
  const base = new ModelRunner(plan, d.gateway, d.runners, {
    ...(d.suspend ? { suspend: d.suspend } : {}),
    ...(w.resume ? { resume: w.resume.state } : {}),
  });
  // a conversation's turn of a harness kind keeps its CLI's session folder of the conversation too
  const session = w.rest?.conversationId && plan.spec.kind !== "assistant";
  const fence =
    w.fence && session ? [...w.fence, `.warren/conversations/${w.rest?.conversationId}`] : w.fence;
  return {
    ...common,
    kind: plan.spec.kind,
    argv: [],
    specVersion: plan.version,
    timeoutS: plan.timeoutS,
    runner: w.runner?.(plan, base) ?? base,
    ...(w.persona ? { secrets: w.persona.secrets } : {}),
    ...(fence !== undefined ? { fence } : {}),
  };
}
