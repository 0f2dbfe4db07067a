// The tools' seam: a run's toolset, opened from its agent's spec at the run's start. Every
// call is decided first by the agent's Cedar tool policy; a refused or failed call is an
// answer for the model, never a thrown error.
import type { AgentSpec } from "../contract/spec.js";
import type { Workload } from "../workloads/index.js";
import type { KeepWaiting } from "../approvals/types.js";

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
