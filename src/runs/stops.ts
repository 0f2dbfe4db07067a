// Command trees of runs stopped by the box health loop (src/runtime/health.ts): each is
// recorded on its run (it may have been left in the background), and a run whose tree was
// stopped because its home passed its disk cap ends failed with `workspace.full` as its
// status reason (the recorder asks here as the run ends).
import type { Records } from "../records/index.js";
import type { MachineRuntime } from "../runtime/index.js";

/** Runs remembered as stopped for their disk cap, at most (the oldest go first). */
const KEPT = 1000;

export class RunStops {
  /** By run id: the watcher's `workspace.full: ...`. */
  readonly #full = new Map<string, string>();

  constructor(runtime: Pick<MachineRuntime, "onRunaway" | "onDiskFull">, records: Pick<Records, "runEvent">) {
    // told before the kill, so that the run's end (the killed command's answer) already knows
    runtime.onDiskFull((runId, detail) => {
      this.#full.set(runId, detail);
      for (const old of this.#full.keys()) {
        if (this.#full.size <= KEPT) break;
        this.#full.delete(old);
      }
    });
    runtime.onRunaway(async (e) => {
      const runId = e.owner?.runId;
      if (!runId) return;
      await records.runEvent(runId, "runaway", {
        limit: e.limit,
        reason: e.reason,
        held_s: e.heldS,
        pids: e.pids,
        memory_bytes: e.memoryBytes,
        fork_failures: e.forkFailures,
        ended: e.ended,
        detail: e.detail,
      });
    });
  }

  /**
   * A run's status and reason as it ends (not cancelled): failed with the watcher's
   * `workspace.full: ...` when its tree was stopped for its disk cap, else as given.
   */
  ended<S extends string>(runId: string, status: S, reason: string | null): [S | "failed", string | null] {
    const why = this.#full.get(runId);
    this.#full.delete(runId);
    return why === undefined ? [status, reason] : ["failed", why];
  }
}
