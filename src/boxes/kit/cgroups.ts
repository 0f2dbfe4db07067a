// Cgroups of a box, the thin part: applies a plan (cgroup-plan.ts, the pure part), reads a
// box's usage, freezes and kills command trees, and tears a box's cgroups down.

import fs from "node:fs";
import path from "node:path";
import type { BoxUsage, UsageSample } from "../types.js";
import { chooseLayout, parseCgroupMounts, type CgroupPlan, type CgroupLayout } from "./cgroup-plan.js";

export * from "./cgroup-plan.js";

// ---- the thin part -----------------------------------------------------------------

/** Detects this host's layout from /proc/self/mountinfo. */
export function detectLayout(): CgroupLayout | null {
  const mountinfo = fs.readFileSync("/proc/self/mountinfo", "utf8");
  return chooseLayout(parseCgroupMounts(mountinfo), (mp) => {
    try {
      const controllers = fs.readFileSync(path.join(mp, "cgroup.controllers"), "utf8").split(/\s+/);
      if (!["memory", "pids", "cpu"].every((c) => controllers.includes(c))) return false;
      fs.accessSync(mp, fs.constants.W_OK);
      return true;
    } catch {
      return false;
    }
  });
}

export function applyPlan(plan: CgroupPlan): void {
  for (const dir of plan.dirs) fs.mkdirSync(dir, { recursive: true });
  for (const w of plan.writes) {
    const file = path.join(w.dir, w.file);
    if (w.optional && !fs.existsSync(file)) continue;
    try {
      fs.writeFileSync(file, w.value);
    } catch (err) {
      // Enabling a controller already enabled, or a limit the kernel rounds: only real
      // failures matter, and they show as a read-back mismatch on limits.
      if (w.file === "cgroup.subtree_control") continue;
      throw new Error(`cannot write ${w.value} to ${file}: ${(err as Error).message}`, { cause: err });
    }
  }
}

/**
 * Hands the plan's `delegate` to box root (`id` on the host): the agents' folders, their
 * files and any folder below, so that boxd makes, limits and joins one per command.
 */
export function delegateCgroups(delegate: CgroupPlan["delegate"], id: number): void {
  for (const file of delegate.files) fs.chownSync(file, id, id);
  for (const dir of delegate.trees) {
    for (const d of treeDeepestFirst(dir)) {
      for (const f of fs.readdirSync(d, { withFileTypes: true }))
        if (f.isFile()) fs.chownSync(path.join(d, f.name), id, id);
      fs.chownSync(d, id, id);
    }
  }
}

/** Every cgroup folder under `dir` (itself included), deepest first. */
function treeDeepestFirst(dir: string): string[] {
  const out: string[] = [];
  const walk = (d: string): void => {
    let entries: fs.Dirent[];
    try {
      entries = fs.readdirSync(d, { withFileTypes: true });
    } catch {
      return;
    }
    for (const e of entries) if (e.isDirectory()) walk(path.join(d, e.name));
    out.push(d);
  };
  walk(dir);
  return out;
}

function procsOf(dir: string): number[] {
  try {
    return fs
      .readFileSync(path.join(dir, "cgroup.procs"), "utf8")
      .split("\n")
      .filter(Boolean)
      .map(Number)
      .filter((n) => Number.isInteger(n) && n > 0);
  } catch {
    return [];
  }
}

/** Pids in the box's cgroups (every hierarchy, every sub-folder). */
export function boxPids(boxDirs: string[]): number[] {
  const pids = new Set<number>();
  for (const root of boxDirs) for (const d of treeDeepestFirst(root)) for (const p of procsOf(d)) pids.add(p);
  return [...pids];
}

/**
 * Ends every process of the box at once, then removes its cgroups. The whole tree is frozen
 * first, so boxd and its commands die together: boxd never sees a command end before it
 * goes, and a command running when its box stops is answered "box gone", not a kill signal.
 * `first` is called while the tree stands still (the provider kills the box's outer process).
 */
export async function destroyBoxCgroups(
  boxDirs: string[],
  timeoutMs = 10_000,
  first?: () => void,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  // a tree left frozen (a kill cut short) would never end: thaw everything first
  for (const root of boxDirs) freezeCgroup(treeDeepestFirst(root), false);
  await killFrozen(boxDirs, () => boxPids(boxDirs), deadline, first);
  for (;;) {
    let busy = false;
    for (const root of boxDirs) {
      for (const d of treeDeepestFirst(root)) {
        try {
          fs.rmdirSync(d);
        } catch (err) {
          const code = (err as NodeJS.ErrnoException).code;
          if (code !== "ENOENT") busy = true;
        }
      }
    }
    if (!busy) return;
    if (Date.now() > deadline) throw new Error(`cannot remove the box's cgroups under ${boxDirs.join(", ")}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

// ---- usage (read on the host) ------------------------------------------------------

/** What one cgroup (the same path in every hierarchy) has used, and its limits. */
export type CgroupUsage = UsageSample;

/**
 * A file of the cgroup's, read from the hierarchy that has it: on v1 the one whose mount names
 * the file's controller (`memory.stat` under `.../memory/...`, `cpuacct.usage` under
 * `.../cpu,cpuacct/...`) is tried first, then the others, so a read costs one open, not one
 * failed open per other hierarchy (the health tick reads every box's usage each second).
 */
function readText(dirs: string[], file: string): string | null {
  const controller = file.slice(0, file.indexOf("."));
  const owns = (d: string) => d.split("/").some((seg) => seg.split(",").includes(controller));
  for (const d of dirs.length > 1 ? [...dirs.filter(owns), ...dirs.filter((d) => !owns(d))] : dirs) {
    try {
      return fs.readFileSync(path.join(d, file), "utf8");
    } catch {
      // another hierarchy, or not on this kernel
    }
  }
  return null;
}

/** A number from a one-value file, or null ("max", missing). */
export function numberOf(text: string | null): number | null {
  if (text === null) return null;
  const t = text.trim();
  if (!/^\d+$/.test(t)) return null;
  return Number(t);
}

/** The value of `key` in a flat keyed file (`oom_kill 3`), or 0. */
export function keyed(text: string | null, key: string): number {
  if (text === null) return 0;
  for (const line of text.split("\n")) {
    const [k, v] = line.trim().split(/\s+/);
    if (k === key && v !== undefined && /^\d+$/.test(v)) return Number(v);
  }
  return 0;
}

/** Reads a cgroup's usage; `dirs` are its folder in each hierarchy (one on v2). */
export function readCgroupUsage(dirs: string[]): CgroupUsage {
  // v2 has one hierarchy, so one folder; several folders are v1's hierarchies
  const v2 = dirs.length === 1 && readText(dirs, "cgroup.controllers") !== null;
  const limitOf = (n: number | null): number | null => (n === null || n >= 2 ** 60 ? null : n); // v1's "unlimited" is a huge number
  if (v2) {
    const stat = readText(dirs, "memory.stat");
    const events = readText(dirs, "memory.events");
    return {
      cpuSeconds: keyed(readText(dirs, "cpu.stat"), "usage_usec") / 1e6,
      memoryBytes: numberOf(readText(dirs, "memory.current")) ?? 0,
      memoryPeakBytes: numberOf(readText(dirs, "memory.peak")) ?? 0,
      unreclaimableBytes: keyed(stat, "anon") + keyed(stat, "shmem"),
      pids: numberOf(readText(dirs, "pids.current")) ?? 0,
      oomKills: keyed(events, "oom_kill"),
      memoryLimitHits: keyed(events, "max"),
      pidsLimitHits: keyed(readText(dirs, "pids.events"), "max"),
      memoryLimitBytes: limitOf(numberOf(readText(dirs, "memory.max"))),
      pidsLimit: numberOf(readText(dirs, "pids.max")),
    };
  }
  const stat = readText(dirs, "memory.stat");
  return {
    cpuSeconds: (numberOf(readText(dirs, "cpuacct.usage")) ?? 0) / 1e9,
    memoryBytes: numberOf(readText(dirs, "memory.usage_in_bytes")) ?? 0,
    memoryPeakBytes: numberOf(readText(dirs, "memory.max_usage_in_bytes")) ?? 0,
    unreclaimableBytes: keyed(stat, "total_rss") + keyed(stat, "total_shmem"),
    pids: numberOf(readText(dirs, "pids.current")) ?? 0,
    oomKills: keyed(readText(dirs, "memory.oom_control"), "oom_kill"),
    memoryLimitHits: numberOf(readText(dirs, "memory.failcnt")) ?? 0,
    pidsLimitHits: keyed(readText(dirs, "pids.events"), "max"),
    memoryLimitBytes: limitOf(numberOf(readText(dirs, "memory.limit_in_bytes"))),
    pidsLimit: numberOf(readText(dirs, "pids.max")),
  };
}

/** A box's usage from its cgroups: the whole box, the agents' commands together, each command tree. */
export function boxUsage(boxDirs: string[]): BoxUsage {
  const agentsDirs = boxDirs.map((d) => path.join(d, "agents"));
  const commands = commandGroups(agentsDirs).map((name) => ({
    name,
    ...readCgroupUsage(agentsDirs.map((d) => path.join(d, name))),
  }));
  return { box: readCgroupUsage(boxDirs), agents: readCgroupUsage(agentsDirs), commands };
}

/** The commands' cgroups under the agents' folder (names boxd gave them). */
export function commandGroups(agentsDirs: string[]): string[] {
  const names = new Set<string>();
  for (const d of agentsDirs) {
    try {
      for (const e of fs.readdirSync(d, { withFileTypes: true }))
        if (e.isDirectory() && /^[A-Za-z0-9_.-]+$/.test(e.name)) names.add(e.name);
    } catch {
      // gone
    }
  }
  return [...names].sort();
}

/**
 * Freezes (or thaws) a cgroup given its folder in each hierarchy: v1 `freezer.state`
 * where the box has a freezer hierarchy, v2 `cgroup.freeze`. True when a freezer took it.
 */
export function freezeCgroup(dirs: string[], frozen: boolean): boolean {
  let done = false;
  for (const d of dirs) {
    for (const [file, value] of [
      ["freezer.state", frozen ? "FROZEN" : "THAWED"],
      ["cgroup.freeze", frozen ? "1" : "0"],
    ] as const) {
      const f = path.join(d, file);
      if (!fs.existsSync(f)) continue;
      try {
        fs.writeFileSync(f, value);
        done = true;
      } catch {
        // gone, or not this kernel's
      }
    }
  }
  return done;
}

/** Whether every freezer of the cgroup says frozen (v1 `FROZEN`, v2 `frozen 1`). */
export function isFrozen(dirs: string[]): boolean {
  for (const d of dirs) {
    const v1 = readText([d], "freezer.state");
    if (v1 !== null && v1.trim() !== "FROZEN") return false;
    if (
      v1 === null &&
      readText([d], "cgroup.freeze") !== null &&
      keyed(readText([d], "cgroup.events"), "frozen") !== 1
    )
      return false;
  }
  return true;
}

/**
 * Freezes (or thaws) a whole box and waits until its freezer says so (up to `timeoutMs`):
 * a box paused in memory, every process of it standing still, none of them told. False
 * when the box has no freezer. A freeze that does not take in time is undone and throws.
 */
export async function freezeBox(boxDirs: string[], frozen: boolean, timeoutMs = 10_000): Promise<boolean> {
  if (!freezeCgroup(boxDirs, frozen)) return false;
  const deadline = Date.now() + timeoutMs;
  for (let round = 1; ; round++) {
    const done = frozen ? isFrozen(boxDirs) : !anyFrozen(boxDirs);
    if (done) return true;
    // a v1 freezer left FREEZING (a task that could not stop then) tries again when asked again
    if (round % 50 === 0) freezeCgroup(boxDirs, frozen);
    if (Date.now() > deadline) {
      if (frozen) freezeCgroup(boxDirs, false);
      throw new Error(`the box's cgroups under ${boxDirs[0] ?? "?"} did not ${frozen ? "freeze" : "thaw"}`);
    }
    await new Promise((r) => setTimeout(r, 1));
  }
}

/** Whether any freezer of the cgroup still says frozen or freezing. */
function anyFrozen(dirs: string[]): boolean {
  for (const d of dirs) {
    const v1 = readText([d], "freezer.state");
    if (v1 !== null && v1.trim() !== "THAWED") return true;
    if (v1 === null && keyed(readText([d], "cgroup.events"), "frozen") === 1) return true;
  }
  return false;
}

/**
 * Ends every process of one command's cgroup (folder in each hierarchy), whatever it
 * does meanwhile: no new fork is allowed in it (pids.max 0), it is frozen where the box
 * has a freezer (up to 2 s for the freeze to take), every process SIGKILLed while it
 * stands still, thawed (the signalled processes end at once), then SIGKILL rounds until
 * it is empty. The number of processes it ended.
 */
export async function killCgroup(dirs: string[], timeoutMs = 10_000): Promise<number> {
  for (const d of dirs) {
    try {
      fs.writeFileSync(path.join(d, "pids.max"), "0");
    } catch {
      // not the pids hierarchy
    }
  }
  const seen = new Set<number>();
  await killFrozen(
    dirs,
    () => {
      const pids = new Set<number>();
      for (const d of dirs) for (const p of procsOf(d)) pids.add(p);
      for (const p of pids) seen.add(p);
      return [...pids];
    },
    Date.now() + timeoutMs,
  );
  return seen.size;
}

/**
 * Freezes `dirs` where they have a freezer (up to 2 s for the freeze to take), calls
 * `first`, SIGKILLs every process `pids` lists while they stand still, thaws (the
 * signalled processes end together), then SIGKILL rounds until `pids` lists none.
 */
async function killFrozen(
  dirs: string[],
  pids: () => number[],
  deadline: number,
  first?: () => void,
): Promise<void> {
  const signal = (): number => {
    const now = pids();
    for (const pid of now) {
      try {
        process.kill(pid, "SIGKILL");
      } catch {
        // gone already
      }
    }
    return now.length;
  };
  let frozen = freezeCgroup(dirs, true);
  try {
    if (frozen) {
      const until = Math.min(deadline, Date.now() + 2000);
      while (!isFrozen(dirs) && Date.now() < until) await new Promise((r) => setTimeout(r, 2));
    }
    first?.();
    signal();
    if (frozen) {
      freezeCgroup(dirs, false);
      frozen = false;
    }
    for (let round = 0; ; round++) {
      const left = pids();
      if (left.length === 0) return;
      if (Date.now() > deadline)
        throw new Error(`processes ${left.slice(0, 10).join(", ")} of ${dirs[0] ?? "?"} survive SIGKILL`);
      // A cgroup below that froze itself stays frozen when its parent thaws (v1
      // self-freezing), and its SIGKILLed processes wait in the refrigerator: boxd, killed
      // between freezing a command's cgroup and thawing it, leaves exactly that behind.
      if (round % 25 === 0) for (const d of dirs) freezeCgroup(treeDeepestFirst(d), false);
      signal();
      await new Promise((r) => setTimeout(r, 2));
    }
  } finally {
    if (frozen) freezeCgroup(dirs, false);
  }
}
