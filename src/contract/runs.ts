import { z } from "zod";
import { idOf, items } from "./common.js";
import { COMMAND_LIMITS, RUN_STATUSES } from "./lists.js";
import { BoxUsage } from "./machines.js";
import { argvField, commandField, CommandLimits, envField, exactlyOneCommand } from "./exec.js";

export const RunStatus = z.enum(RUN_STATUSES).meta({ id: "RunStatus" });

/** What a run did and used, written when it ends. */
export const RunReceipt = z
  .object({
    run_id: z.string(),
    kind: z.string(),
    argv: z.array(z.string()),
    agent_id: z.string(),
    agent_name: z.string(),
    machine_id: z.string(),
    uid: z.number(),
    files: z
      .object({ read: z.array(z.string()), write: z.array(z.string()) })
      .optional()
      .describe("the file access it ran under: folders to read and execute, and to write too"),
    server_version: z.string(),
    started_at: z.string(),
    ended_at: z.string(),
    duration_ms: z.number(),
    exit_code: z.number().nullable(),
    signal: z.string().nullable(),
    cpu_seconds: z.number().nullable(),
    peak_memory_bytes: z.number().nullable(),
    bytes_out: z.number().describe("stdout and stderr bytes together"),
    stdout_bytes: z.number(),
    stderr_bytes: z.number(),
    input_bytes: z.number(),
    limits: CommandLimits.nullable(),
    disk_before_mib: z.number().nullable(),
    disk_after_mib: z.number().nullable(),
    machine_disk_before_mib: z.number().nullable(),
    machine_disk_after_mib: z.number().nullable(),
    spec_version: z.number().nullable().optional().describe("an agent run: the agent's spec version it ran"),
    models: z
      .array(z.string())
      .optional()
      .describe("an agent run: the models it called (provider:name), in order"),
    model_calls: z.number().optional(),
    tokens_in: z.number().optional(),
    tokens_out: z.number().optional(),
    usd: z.number().optional(),
    steps: z.number().optional(),
    tool_calls: z.number().optional(),
    tool_calls_allowed: z.number().optional(),
    tool_calls_refused: z.number().optional(),
    budget_reached: z
      .object({
        limit: z.enum(["tokens", "usd"]),
        max: z.number(),
        used: z.number(),
        on_limit: z.enum(["stop", "finish"]),
      })
      .optional(),
  })
  .meta({ id: "RunReceipt" });

/** Why a queued run waits. */
export const RunWaiting = z
  .object({
    reason: z
      .enum(["agent_busy", "org_limit", "approval"])
      .describe(
        "agent_busy: its agent has a run going on or an earlier one waiting; org_limit: its organisation runs as many as WARREN_ORG_MAX_RUNS; approval: a tool call waits for a person's decision (status waiting)",
      ),
    since: z.string(),
    position: z
      .number()
      .int()
      .min(1)
      .describe(
        "1 for the next to start in the line it waits in: its agent's (agent_busy) or its organisation's (org_limit)",
      ),
  })
  .meta({ id: "RunWaiting" });

/** What an agent run used: tokens and dollars of its model calls, steps, tool calls. */
export const RunUsage = z
  .object({
    tokens_in: z.number(),
    tokens_out: z.number(),
    usd: z.number(),
    steps: z.number(),
    tool_calls: z.number(),
    tool_refusals: z.number(),
  })
  .meta({ id: "RunUsage" });

export const Run = z
  .object({
    id: z.string(),
    agent_id: z.string(),
    machine_id: z.string(),
    kind: z.string(),
    status: RunStatus,
    status_reason: z.string().nullable().describe("why the run is in its status, when there is more to say"),
    argv: z.array(z.string()),
    exit_code: z.number().nullable(),
    signal: z.string().nullable(),
    output: z.string().describe("what the run printed on stdout, redacted"),
    output_truncated: z.boolean(),
    retained: z
      .literal(false)
      .optional()
      .describe("false once the organisation's retention deleted the run's output and trace"),
    output_deleted_at: z
      .string()
      .optional()
      .describe("when the organisation's retention deleted the run's output and trace"),
    timeout_s: z.number(),
    created_at: z.string(),
    started_at: z.string().nullable(),
    ended_at: z.string().nullable(),
    receipt: RunReceipt.nullable().describe("what the run did and used, once it ended"),
    output_withheld: z
      .boolean()
      .optional()
      .describe("true when the caller's role (auditor) may not see workloads: output is then empty"),
    waiting: RunWaiting.optional().describe("while the run is queued: why it waits, since when, its place"),
    box_usage: BoxUsage.optional().describe(
      "while the run is running: what its command tree (with what it started in the background) uses now",
    ),
    usage: RunUsage.optional().describe("an agent run: what it used so far, then in all"),
    version: z
      .number()
      .nullable()
      .optional()
      .describe("the agent's spec version the run keeps for its whole life (its sandbox policy too)"),
    schedule_id: z.string().optional().describe("a run a schedule started: the schedule"),
    scheduled_for: z.string().optional().describe("a run a schedule started: the slot it was for"),
  })
  .meta({ id: "Run" });
export const RunList = items(Run, "RunList");

// The input's own limit (256 KiB) is checked by the service to answer run.input_too_large;
// the schema only bounds what it will even read.
const runInput = z
  .string()
  .max(4 * 1024 * 1024)
  .describe("becomes the file /agent/input in the run; at most 256 KiB");
const runTimeout = z.number().int().min(1).max(COMMAND_LIMITS.runTimeoutSMax);

/** Which version of the agent a run runs, and the key that keeps it on one side of a canary. */
const runVersion = {
  version: z
    .number()
    .int()
    .min(1)
    .optional()
    .describe(
      "a version of the agent's spec to run by number; default the current one (or the canary's share)",
    ),
  routing_key: z
    .string()
    .min(1)
    .max(256)
    .optional()
    .describe("runs with the same key go to the same side of a canary; default a new key per run"),
};

const runWait = z
  .boolean()
  .default(true)
  .describe(
    "true (default): a busy agent or an organisation at its cap queues the run; false: refuse it (409 generation.busy, 429 run.org_limit)",
  );

/** Runs the agent by its kind (assistant, claude-code, codex, opencode) on the input. */
export const AgentRunCreateRequest = z
  .object({
    kind: z.literal("agent"),
    input: runInput.describe("the user's message to the agent; at most 256 KiB"),
    timeout_s: runTimeout.optional().describe("at most the spec's limits.max_run_s (its default)"),
    wait: runWait,
    ...runVersion,
  })
  .strict()
  .meta({ id: "AgentRunCreateRequest" });

export const CommandRunCreateRequest = z
  .object({
    kind: z.literal("command"),
    argv: argvField.optional(),
    command: commandField.optional(),
    env: envField.optional(),
    input: z
      .string()
      .max(4 * 1024 * 1024)
      .optional()
      .describe("becomes the file /agent/input in the run; at most 256 KiB"),
    timeout_s: z.number().int().min(1).max(COMMAND_LIMITS.runTimeoutSMax).optional(),
    limits: CommandLimits.optional(),
    wait: runWait,
    ...runVersion,
  })
  .strict()
  .refine(exactlyOneCommand.check, { message: exactlyOneCommand.message, path: exactlyOneCommand.path })
  .meta({ id: "CommandRunCreateRequest" });

export const RunCreateRequest = z
  .discriminatedUnion("kind", [CommandRunCreateRequest, AgentRunCreateRequest])
  .meta({ id: "RunCreateRequest" });

export const RunListQuery = z
  .object({
    limit: z.coerce.number().int().min(1).max(500).default(50).describe("1-500, newest first"),
    before: idOf("run").optional().describe("runs older than this run (the next page)"),
  })
  .strict();

export const RunEvent = z
  .object({ id: z.number(), type: z.string(), at: z.string(), data: z.unknown() })
  .meta({ id: "RunEvent" });
export const RunEventList = items(RunEvent, "RunEventList");
export const RunEventsQuery = z
  .object({ after: z.coerce.number().int().min(0).optional().describe("only events after this event id") })
  .strict();

/** One model call, as counted and written to the trace as a `model_call` event. */
export interface ModelCallRecord {
  provider: string;
  model: string;
  tokens_in: number;
  tokens_out: number;
  usd: number;
  latency_ms: number;
  finish_reason: string | null;
  status: "ok" | "error";
  error?: string;
  /** Set when this call was made on a fallback: from which model and why. */
  fallback_from?: { provider: string; model: string; reason: string };
  /** Which face made it: the in-process loop, or a harness through the HTTP face. */
  via: "loop" | "http";
  /** Set when the answer was cut before its usage came: the counts are estimated from what flowed. */
  estimated?: boolean;
  /** Set when the client hung up before the answer's end (the answer was still read to its end). */
  client_closed?: boolean;
}
