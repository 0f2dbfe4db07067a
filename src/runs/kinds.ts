// Run kinds beyond command: a runner per agent kind (assistant: the loop in the server;
// claude-code, codex, opencode: a harness CLI in the box). The runs service gives each the
// run's context and writes what it answers.
import type { ModelMessage } from "ai";
import type { AgentSpec } from "../contract/spec.js";
import type { GatewaySession, ModelUsage, RunEventSink } from "../models/types.js";
import type { Workload } from "../workloads/index.js";
import type { HarnessSession } from "./harness.js";
import type { Runner, RunOutcome } from "./runner.js";

export interface RunUsage extends ModelUsage {
  steps: number;
  tool_calls: number;
  tool_refusals: number;
}

export interface AgentRunContext {
  runId: string;
  /** The run's door to its agent's box: the agent, its machine, its secrets, its commands. */
  workload: Workload;
  spec: AgentSpec;
  input: string;
  /** Aborted on cancel, on the run's time limit and at shutdown. */
  signal: AbortSignal;
  events: RunEventSink;
  gateway: GatewaySession;
  /** Tells the run's record what the run used so far (GET /api/runs/:id while it runs). */
  progress?: (usage: RunUsage) => void;
  /** A conversation's turn: the model history before this turn's message (the assistant's loop). */
  history?: readonly ModelMessage[] | undefined;
  /** A conversation's turn: what the turn adds to the model history, as it is added. */
  append?: ((messages: ModelMessage[]) => Promise<void>) | undefined;
  /** The model's text as it streams, piece by piece, with the model step it belongs to (1 for the first). */
  onText?: ((delta: string, step: number) => void) | undefined;
  /** A conversation's turn of a harness kind: its CLI resumes its own session of the conversation. */
  session?: HarnessSession | undefined;
  /** An assistant run taken up again after a restart: where its loop stopped (src/runs/resume.ts). */
  resume?: SuspendedLoop | undefined;
  /** Keeps where the loop stops when the server stops while a call waits for an approval. */
  suspend?: ((runId: string, agentId: string, state: SuspendedLoop) => Promise<void>) | undefined;
}

/**
 * Where an assistant run's loop stopped when the server stopped while one of its calls waited
 * for an approval: the model messages so far (the assistant message that asked for the calls
 * last), the answers of the step's calls made before, and the calls still to make.
 */
export interface SuspendedLoop {
  input: string;
  system: string;
  messages: ModelMessage[];
  results: Extract<ModelMessage, { role: "tool" }>["content"];
  pending: { id: string; name: string; input: unknown }[];
  counts: { steps: number; tool_calls: number; tool_refusals: number };
  /** What the models used before the stop (the run's usage goes on from there). */
  used: ModelUsage;
  models: string[];
  last: string;
}

/** What a conversation's turn adds to an agent run: its history, its transcript, its CLI session. */
export type TurnHooks = Pick<AgentRunContext, "history" | "append" | "session">;

/**
 * What an agent kind's loop answers: a run's outcome in the same words (suspended: the server
 * stopped while a call waited for an approval; the run goes on in the next), with its usage
 * counted the kind's way and the models it called, in order of first use.
 */
export type AgentRunResult = Pick<RunOutcome, "status" | "reason" | "exitCode" | "output"> & {
  usage: RunUsage;
  models: string[];
};

/** An agent kind's loop is a runner like every other (runner.ts), given the agent run's context. */
export type AgentRunner = Runner<AgentRunContext, AgentRunResult>;

/** The runners of agent kinds, by kind: each kind's module registers its own at composition. */
export class AgentRunners {
  readonly #byKind = new Map<AgentSpec["kind"], AgentRunner>();

  /** Registers the runner of a kind; answers the registry (the image kind is registered as it is made). */
  register(kind: Exclude<AgentSpec["kind"], "command">, runner: AgentRunner): this {
    if (this.#byKind.has(kind)) throw new Error(`a runner of kind ${kind} is already registered`);
    this.#byKind.set(kind, runner);
    return this;
  }

  get(kind: AgentSpec["kind"]): AgentRunner | undefined {
    return this.#byKind.get(kind);
  }

  kinds(): AgentSpec["kind"][] {
    return [...this.#byKind.keys()];
  }
}
