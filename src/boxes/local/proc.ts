// Process facts from /proc, so a recorded pid is never confused with a reused one; how a
// box's first process joins its cgroups; the end of a box's log.

import fs from "node:fs";

/** Field 22 of /proc/<pid>/stat (start time in clock ticks since boot), or null if gone. */
export function parseStartTime(stat: string): string | null {
  // comm (field 2) may hold spaces and parentheses: split after the last ')'.
  const close = stat.lastIndexOf(")");
  if (close < 0) return null;
  const fields = stat.slice(close + 2).split(" ");
  // fields[0] is field 3 (state); field 22 is fields[19].
  return fields[19] ?? null;
}

export function pidStartTime(pid: number): string | null {
  try {
    return parseStartTime(fs.readFileSync(`/proc/${pid}/stat`, "utf8"));
  } catch {
    return null;
  }
}

/** True if `pid` runs and started at `startTime` (not a zombie, not a reused pid). */
export function isSameProcess(pid: number, startTime: string): boolean {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
    const close = stat.lastIndexOf(")");
    const state = stat.slice(close + 2, close + 3);
    return state !== "Z" && state !== "X" && parseStartTime(stat) === startTime;
  } catch {
    return false;
  }
}

/** Joins the box's cgroups with the shell's own pid, then becomes bwrap: nothing forks before. */
export const JOIN_AND_EXEC =
  'for f; do [ "$f" = -- ] && break; echo $$ > "$f" || exit 125; shift; done; shift; exec "$@"';

/** The last bytes of a file (a box's log), or "" when it cannot be read. */
export function tail(file: string, bytes = 600): string {
  try {
    const text = fs.readFileSync(file, "utf8");
    return text.slice(-bytes).trim();
  } catch {
    return "";
  }
}
