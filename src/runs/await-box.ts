// Placement that waits: a run whose machine's box cannot start now (no room on the host, the
// provider down, a capability missing) stays queued with why in its status_reason, tries again
// with a growing pause, and starts once the box does, within its time limit.
import { and, eq } from "drizzle-orm";
import { WarrenError } from "../errors.js";
import type { Records } from "../records/index.js";
import type { MachineRuntime } from "../runtime/index.js";
import { schema } from "../store/index.js";
import type { RunRow } from "./view.js";

export interface AwaitBoxDeps {
  records: Pick<Records, "updateRun" | "runEvent">;
  runtime: Pick<MachineRuntime, "ensure">;
}

/** The pauses between tries, in ms (the last one repeats). */
const PAUSES_MS = [250, 500, 1000, 2000, 4000];

/** The reason a queued run shows while its box cannot start. */
export const boxWaitReason = (why: string) => `waiting for its machine's box to start: ${why}`;

const pause = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve) => {
    if (signal.aborted) return resolve();
    const t = setTimeout(done, ms);
    function done() {
      clearTimeout(t);
      signal.removeEventListener("abort", done);
      resolve();
    }
    signal.addEventListener("abort", done, { once: true });
  });

/**
 * Starts the run's box, waiting while it cannot start. Answers null once the box runs, or why
 * the run ends without it (its limit passed, or it was cancelled: `signal`). Errors other than
 * box.unavailable are thrown as they are.
 */
export async function awaitBox(
  o: AwaitBoxDeps,
  run: RunRow,
  machineId: string,
  signal: AbortSignal,
): Promise<{ status: "timed_out" | "cancelled"; reason: string } | null> {
  const deadline = Date.now() + run.timeoutS * 1000;
  let told: string | null = null;
  for (let i = 0; ; i++) {
    try {
      await o.runtime.ensure(machineId);
      if (told !== null) {
        await o.records.updateRun(run.id, { statusReason: null }, eq(schema.runs.status, "queued"));
        await o.records.runEvent(run.id, "placed", { machine_id: machineId });
      }
      return null;
    } catch (err) {
      if (!(err instanceof WarrenError) || err.code !== "box.unavailable") throw err;
      const reason = boxWaitReason(err.message);
      if (reason !== told) {
        told = reason;
        await o.records.updateRun(
          run.id,
          { statusReason: reason },
          and(eq(schema.runs.id, run.id), eq(schema.runs.status, "queued")),
        );
        await o.records.runEvent(run.id, "placement_waiting", { reason, machine_id: machineId });
      }
      if (signal.aborted) return { status: "cancelled", reason: "cancelled while it waited for its box" };
      const left = deadline - Date.now();
      if (left <= 0)
        return {
          status: "timed_out",
          reason: `no box could start within its ${run.timeoutS} s limit (${err.message})`,
        };
      await pause(Math.min(left, PAUSES_MS[Math.min(i, PAUSES_MS.length - 1)]!), signal);
    }
  }
}
