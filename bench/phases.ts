// The phases of one warm exec, from the exec trace (src/runtime/trace.ts: the runtime's
// marks and those boxd and its helper report) and the client's own clock: the bench and
// the server share one process, and process.hrtime is the CLOCK_MONOTONIC boxd reads.
import { execTrace, monotonicUs, type ExecPhases } from "../src/runtime/trace.js";
import { percentile } from "./stats.js";

export interface Phase {
  what: string;
  n: number;
  p50: number;
  p99: number;
}

type Marks = ExecPhases & { sentUs: number; receivedUs: number };

const PHASES: [string, (m: Marks) => number | undefined][] = [
  ["HTTP, validation and the store (request to the runtime)", (m) => m.runtimeUs - m.sentUs],
  ["runtime to boxd (ensure, connect, the request)", (m) => m.box && m.box.requestUs - m.runtimeUs],
  ["boxd: limits, options to the ready helper", (m) => m.box && m.box.specSentUs - m.box.requestUs],
  [
    "cgroups: waiting for the ready helper to join its cgroups",
    (m) => m.box && Math.max(0, m.box.joinedUs - m.box.specSentUs),
  ],
  [
    "spawn helper: options read, privileges dropped, cwd",
    (m) => m.box && m.box.privilegesUs - Math.max(m.box.specSentUs, m.box.joinedUs),
  ],
  ["Landlock", (m) => m.box && m.box.landlockUs - m.box.privilegesUs],
  ["seccomp", (m) => m.box && m.box.seccompUs - m.box.landlockUs],
  ["the program (execve to reaped)", (m) => m.box && m.box.exitUs - m.box.seccompUs],
  ["boxd: usage read, the answer", (m) => m.box && m.box.answerUs - m.box.exitUs],
  ["boxd to the runtime", (m) => m.box && m.answeredUs - m.box.answerUs],
  ["runtime to the HTTP answer (records, the reply)", (m) => m.receivedUs - m.answeredUs],
  ["whole exec", (m) => m.receivedUs - m.sentUs],
];

/** Runs `exec` n times with the trace on; each phase's p50 and p99 in ms. */
export async function tracePhases(n: number, exec: () => Promise<void>): Promise<Phase[]> {
  const marks: Marks[] = [];
  execTrace.enabled = true;
  try {
    for (let i = 0; i < n + 5; i++) {
      execTrace.last = undefined;
      const sentUs = monotonicUs();
      await exec();
      const receivedUs = monotonicUs();
      const last = execTrace.last as ExecPhases | undefined;
      if (!last?.box) throw new Error("a traced exec came back without boxd's trace");
      if (i >= 5) marks.push({ ...last, sentUs, receivedUs });
    }
  } finally {
    execTrace.enabled = false;
  }
  return PHASES.map(([what, of]) => {
    const v = marks
      .map(of)
      .filter((x): x is number => x !== undefined)
      .map((us) => us / 1000)
      .sort((a, b) => a - b);
    return { what, n: v.length, p50: percentile(v, 50), p99: percentile(v, 99) };
  });
}
