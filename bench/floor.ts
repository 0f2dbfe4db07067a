// The real floor of running a command: a bare posix_spawn of /bin/true and its waitpid,
// timed by a small C helper (native/spawn-floor.c, built here with gcc, as the native build does) that does nothing
// else, beside which Node's child_process.spawn is shown. Every "vs floor" ratio of the
// table is against this one.
import { execFileSync, spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { summarize, type Sample } from "./stats.js";

const source = path.join(path.dirname(fileURLToPath(import.meta.url)), "native", "spawn-floor.c");

/** Builds the helper into a temporary folder; the caller removes the folder. */
export function buildFloor(): { binary: string; dir: string } {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "warren-bench-floor-"));
  const binary = path.join(dir, "spawn-floor");
  execFileSync("gcc", ["-O2", "-Wall", "-Wextra", "-Werror", "-o", binary, source], { stdio: "inherit" });
  return { binary, dir };
}

/**
 * n spawns of /bin/true after `warmup` unmeasured ones, each timed by the helper itself;
 * with gapUs, each after the CPU rested that long.
 */
export function timeFloor(
  binary: string,
  n: number,
  warmup: number,
  gapUs = 0,
): Sample & { samples_ms: number[] } {
  const r = spawnSync(binary, [String(n + warmup), "/bin/true", String(gapUs)], { encoding: "utf8" });
  if (r.status !== 0) throw new Error(`spawn-floor exited ${r.status ?? r.signal}: ${r.stderr.trim()}`);
  return floorTimes(r.stdout, n, warmup);
}

/** The helper's C source, for a build elsewhere (inside a box, as an agent's command). */
export function floorSource(): string {
  return fs.readFileSync(source, "utf8");
}

/**
 * The shell command that builds the helper from its source on stdin and runs it (n + warmup
 * spawns), in a folder of its own that goes afterwards.
 */
export function floorCommand(n: number, warmup: number): string {
  return `d=$(mktemp -d) && cat > "$d/f.c" && gcc -O2 -o "$d/f" "$d/f.c" && "$d/f" ${n + warmup} /bin/true; r=$?; rm -rf "$d"; exit $r`;
}

/** The helper's output (one time in µs per line) as milliseconds, its warmup left out. */
export function floorTimes(stdout: string, n: number, warmup: number): Sample & { samples_ms: number[] } {
  const ms = stdout
    .trim()
    .split("\n")
    .map((l) => Number(l) / 1000)
    .slice(warmup);
  if (ms.length !== n || ms.some((x) => !Number.isFinite(x)))
    throw new Error(`spawn-floor printed ${ms.length} times, expected ${n}`);
  return { ...summarize(ms), samples_ms: ms };
}
