// The tools' seam: a run's toolset, opened from its agent's spec at the run's start. Every
// call is decided first by the agent's Cedar tool policy; a refused or failed call is an
// answer for the model, never a thrown error.
import type { AgentSpec } from "../contract/spec.js";
import type { Workload } from "../workloads/index.js";

/** A JSON Schema of an object: a tool's parameters as the model sees them. */
export type ToolParameters = {
  type: "object";
  properties?: Record<string, unknown>;
  required?: string[];
} & Record<string, unknown>;

export interface RunTool {
  /** The name the model calls it by (an MCP server's tools: `<server>__<tool>`). */
  name: string;
  description: string;
  parameters: ToolParameters;
}

/** One tool call, as written to the trace as a `tool_call` event (arguments redacted by the sink). */
export interface ToolCallRecord {
  tool: string;
  arguments: unknown;
  decision: "allow" | "deny";
  /** The ids of the policies that decided (Cedar's reasons); empty when none matched. */
  policies: string[];
  result_bytes: number;
  duration_ms: number;
  error?: string;
  /** A stable code of a failure the server decided (`tool.address_refused`: the address rule refused the fetch). */
  code?: string;
}

export interface ToolOutcome {
  /** What the model is told: the result, or why the call was refused or failed. */
  output: string;
  record: ToolCallRecord;
}

export interface ToolRunContext {
  runId: string;
  /** The run's door to its agent's box: the agent, its machine and trust, its secrets. */
  workload: Workload;
  spec: AgentSpec;
  signal: AbortSignal;
  /** Who calls the tools: the Assistant loop in the server, or a harness CLI through the tool gateway (default loop). */
  via?: "loop" | "gateway";
  /**
   * Where every call is written (the run's `tool_call` events), the loop's and the tool
   * gateway's alike; the runner redacts it as all run output. Without it, calls are only
   * answered in ToolOutcome.record.
   */
  record?: (call: ToolCallRecord) => Promise<void>;
}

export interface Toolset {
  readonly tools: readonly RunTool[];
  /** What went wrong while opening (an MCP server that could not be listed, a policy that does not validate). */
  readonly warnings: readonly string[];
  /**
   * Decides the call by the policy (waiting for a person's decision when a permit asks for
   * one), then runs it; never throws for a refusal or a tool's failure. `callId` is the
   * model's id of the call, which an approval names.
   */
  call(name: string, args: unknown, callId?: string, keep?: KeepWaiting): Promise<ToolOutcome>;
  close(): Promise<void>;
}

export interface ToolsetFactory {
  open(ctx: ToolRunContext): Promise<Toolset>;
}

/** One exact tool call that waits for a person's decision (a permit annotated `@approval("required")`). */
export interface ApprovalAsk {
  runId: string;
  toolCallId: string;
  tool: string;
  /** The arguments as the record shows them (redacted). */
  arguments: unknown;
  /** SHA-256 of the canonical arguments the call would run with (hex). */
  argsSha256: string;
  /** The deciding policies' ids. */
  policies: string[];
  /** Who the asking permits name to decide (emails, roles); empty: owners, admins, editors. */
  deciders: string[];
}

export interface ApprovalAnswer {
  decision: "allow" | "deny";
  message: string | null;
  decidedBy: string | null;
}

/**
 * Why ApprovalDoor.ask did not answer: the server stopped while the call waited. The approval
 * stays waiting for the next server, which takes the run up again (src/runs/resume.ts).
 */
export class ApprovalSuspended extends Error {
  constructor() {
    super("the server stopped while the call waited for a decision");
  }
}

/**
 * Keeps where the run's loop stands, redacted, while a call of it waits for a decision (the
 * run loop's: src/runs/assistant.ts): a server that dies meanwhile leaves it for the next
 * one to take the run up from (src/runs/resume.ts).
 */
export type KeepWaiting = () => Promise<void>;

/** Where a call that asks waits for its decision (src/versions/approvals.ts). */
export interface ApprovalDoor {
  ask(req: ApprovalAsk, signal: AbortSignal, keep?: KeepWaiting): Promise<ApprovalAnswer>;
}
