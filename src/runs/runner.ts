// What every kind of run is to the run recorder (recorder.ts): its runner, given the run's
// door (a Workload), its input, a signal and its trace, answers an outcome; the request that
// starts a run names its row, its runner and where it runs (request.ts builds it for agent work).
import type { Fence } from "../areas/fence.js";
import type { AgentRow } from "../agents/service.js";
import type { SandboxPolicy } from "../contract/policy.js";
import type { RunReceipt, RunUsage } from "../contract/types.js";
import type { RunEventSink } from "../models/types.js";
import type { RunRecording } from "../records/index.js";
import type { MachineRow, Workload } from "../workloads/index.js";
import type { InstanceRef } from "../workspaces/service.js";
import type { RunRow } from "./view.js";

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

/**
 * The one runner interface: given a context, it answers an outcome. A run's runner is given
 * the run's context (RunRunner); an agent kind's loop, inside ModelRunner, the agent run's
 * (kinds.ts: AgentRunner), and answers in the same words.
 */
export interface Runner<C = RunnerContext, O = RunOutcome> {
  run(ctx: C): Promise<O>;
}

/** A run's runner, which also says what the run's `started` event tells of its kind. */
export interface RunRunner extends Runner {
  /** What the run's `started` event says of this kind (beyond agent, input and time limit). */
  started(work: Workload): Record<string, unknown>;
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
