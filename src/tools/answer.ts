// What a command run for a tool (run_command, script_run) answers the model: how it ended,
// then its stdout and stderr, each cut to what was kept.
import type { BoundedOutput, Workload } from "../workloads/index.js";
import { MAX_OUTPUT_BYTES } from "./impl.js";

export function commandAnswer(
  { result, stdout, stderr }: Awaited<ReturnType<Workload["collect"]>>,
  timeoutS: number,
): string {
  const head = result.timedOut
    ? `timed out after ${timeoutS} s`
    : result.cancelled
      ? "cancelled"
      : result.signal
        ? `killed by ${result.signal}`
        : `exit code ${result.exitCode}`;
  const part = (name: string, o: BoundedOutput) =>
    o.total === 0
      ? ""
      : `\n--- ${name}${o.truncated ? ` (first ${MAX_OUTPUT_BYTES} of ${o.total} bytes)` : ""}\n${o.text()}`;
  return `${head}${part("stdout", stdout)}${part("stderr", stderr)}`;
}
