// The phase times of execs, for `make bench`'s breakdown of a warm exec: collected only
// while `execTrace.enabled` (WARREN_EXEC_TRACE=1 at start, or set by the bench), else
// nothing is marked or asked of boxd.
import type { ExecTrace } from "../boxd/index.js";

/** µs of CLOCK_MONOTONIC (process.hrtime, which boxd's clock_gettime shares). */
export const monotonicUs = (): number => Number(process.hrtime.bigint() / 1000n);

export interface ExecPhases {
  /** The runtime took the exec. */
  runtimeUs: number;
  /** boxd's own marks and its helper's (see ExecTrace); absent when boxd sent none. */
  box?: ExecTrace;
  /** The runtime had boxd's answer. */
  answeredUs: number;
}

export const execTrace: { enabled: boolean; last: ExecPhases | undefined } = {
  enabled: process.env.WARREN_EXEC_TRACE === "1",
  last: undefined,
};
