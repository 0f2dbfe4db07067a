import { z } from "zod";
import { noNul } from "./common.js";
import { COMMAND_LIMITS } from "./lists.js";

const envName = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** A command's own limits (exec and runs): memory of its whole tree and its processes. */
export const CommandLimits = z
  .object({
    memory_mib: z
      .number()
      .int()
      .min(COMMAND_LIMITS.memoryMibMin, `must be at least ${COMMAND_LIMITS.memoryMibMin}`)
      .max(COMMAND_LIMITS.memoryMibMax)
      .optional(),
    pids: z.number().int().min(1).max(COMMAND_LIMITS.pidsMax).optional(),
  })
  .strict()
  .meta({ id: "CommandLimits", description: "a command's own limits, tighter than its machine's" });

export const argvField = z
  .array(noNul(128 * 1024))
  .min(1)
  .max(4096)
  .describe("the program and its arguments; give this or command");
export const commandField = noNul(256 * 1024)
  .min(1)
  .describe("shell text run by /bin/bash -c; give this or argv");
export const envField = z.record(
  z.string().regex(envName, "names must match [A-Za-z_][A-Za-z0-9_]*").max(256),
  noNul(128 * 1024),
);

export const exactlyOneCommand = {
  check: (b: { argv?: unknown; command?: unknown }) => (b.argv === undefined) !== (b.command === undefined),
  message: "give exactly one of argv or command",
  path: ["argv"],
};

export const ExecRequest = z
  .object({
    argv: argvField.optional(),
    command: commandField.optional(),
    cwd: noNul(4096).optional().describe("default: the agent's home"),
    env: envField.optional(),
    stdin: z
      .string()
      .max(8 * 1024 * 1024)
      .optional(),
    timeout_ms: z
      .number()
      .int()
      .min(1)
      .max(COMMAND_LIMITS.execTimeoutMsMax)
      .optional()
      .describe(`default ${COMMAND_LIMITS.execTimeoutMsDefault}`),
    limits: CommandLimits.optional(),
  })
  .strict()
  .refine(exactlyOneCommand.check, { message: exactlyOneCommand.message, path: exactlyOneCommand.path })
  .meta({ id: "ExecRequest" });

export const ExecResult = z
  .object({
    exit_code: z.number().nullable(),
    signal: z.string().nullable(),
    stdout: z.string(),
    stderr: z.string(),
    duration_ms: z.number(),
    timed_out: z.boolean(),
    stdout_truncated: z.boolean(),
    stderr_truncated: z.boolean(),
  })
  .meta({ id: "ExecResult" });

/** A piece of output of a streamed exec, as it arrives. */
export const ExecOutputEvent = z
  .object({ stream: z.enum(["stdout", "stderr"]), data: z.string() })
  .meta({ id: "ExecOutputEvent" });

/** The last line of a streamed exec. */
export const ExecExitEvent = z
  .object({
    exit_code: z.number().nullable(),
    signal: z.string().nullable(),
    duration_ms: z.number(),
    timed_out: z.boolean(),
  })
  .meta({ id: "ExecExitEvent" });

/** One line of a streamed exec (application/x-ndjson): output, then the exit, or an error. */
export const ExecStreamEvent = z
  .union([
    ExecOutputEvent,
    ExecExitEvent,
    z.object({ error: z.object({ code: z.string(), message: z.string() }) }),
  ])
  .meta({ id: "ExecStreamEvent" });
