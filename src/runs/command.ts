// Command runs: the run's own command in the box, its input staged at /agent/input, its
// output kept up to a limit and traced event by event, all of it through the agent's door.
import type { RunReceipt } from "../contract/types.js";
import type { BoxExecResult } from "../runtime/index.js";
import { BoundedOutput, type CommandLimits, type Workload } from "../workloads/index.js";
import type { RunnerContext, RunOutcome, RunRunner } from "./runner.js";

export const OUTPUT_LIMIT_BYTES = 1024 * 1024;
/** Output events kept in a run's trace; past this the trace says how much was left out. */
export const TRACE_OUTPUT_EVENTS = 2000;

export class CommandRunner implements RunRunner {
  constructor(
    private readonly asked: {
      argv: string[];
      env?: Record<string, string> | undefined;
      limits?: CommandLimits | undefined;
    },
  ) {}

  started(work: Workload): Record<string, unknown> {
    return { argv: this.asked.argv, uid: work.uid };
  }

  async run(ctx: RunnerContext): Promise<RunOutcome> {
    const { run, workload: work } = ctx;
    const output = new BoundedOutput(OUTPUT_LIMIT_BYTES);
    let stderrBytes = 0;
    let traced = 0;
    let dropped = 0;
    const pending: Promise<void>[] = [];
    const trace = (stream: "stdout" | "stderr", c: Buffer) => {
      if (traced >= TRACE_OUTPUT_EVENTS) {
        dropped++;
        return;
      }
      traced++;
      pending.push(ctx.events("output", { stream, data: c.toString("utf8") }));
    };
    let result: BoxExecResult | null = null;
    try {
      await work.stage({ input: ctx.input });
      result = await work.exec(
        {
          argv: run.argv,
          env: this.asked.env,
          timeoutMs: run.timeoutS * 1000,
          limits: this.asked.limits,
          main: true,
        },
        {
          signal: ctx.signal,
          onStdout: (c) => {
            output.push(c);
            trace("stdout", c);
          },
          onStderr: (c) => {
            stderrBytes += c.length;
            trace("stderr", c);
          },
          onStart: (_pid, cgroup) => {
            if (cgroup) ctx.commandStarted(cgroup);
          },
        },
      );
    } finally {
      await work.unstage();
      await Promise.allSettled(pending);
      if (dropped > 0) await ctx.events("output_dropped", { events: dropped });
    }
    const status = result.timedOut
      ? "timed_out"
      : result.cancelled
        ? "cancelled"
        : result.exitCode === 0
          ? "succeeded"
          : "failed";
    const receipt: Partial<RunReceipt> = {
      files: work.walls({ main: true }).files,
      duration_ms: result.durationMs,
      cpu_seconds: result.usage?.cpuSeconds ?? null,
      peak_memory_bytes: result.usage?.peakMemoryBytes ?? null,
      bytes_out: output.total + stderrBytes,
      stdout_bytes: output.total,
      stderr_bytes: stderrBytes,
      limits: this.asked.limits ?? null,
    };
    return {
      status,
      reason:
        status === "failed"
          ? result.signal
            ? `killed by ${result.signal}`
            : `exited with ${result.exitCode}`
          : null,
      exitCode: result.exitCode,
      signal: result.signal,
      output: output.text(),
      outputTruncated: output.truncated,
      receipt,
    };
  }
}
