// Cgroups of a box. Pure parts (layout parsing, the plan of folders and writes) are
// tested without a kernel; the thin part applies a plan and tears a box's cgroups down.
//
// Tree (per v1 hierarchy, or once on v2):
//   <parent>/<box id>/          the box: limits + boxd's reserve
//   <parent>/<box id>/boxd/     bwrap, its reaper and boxd
//   <parent>/<box id>/agents/   agents' commands: the machine's limits
//   <parent>/<box id>/agents/x… one per command (created by boxd, killed as a whole)
// boxd's reserve keeps it alive and answering when agents hit their limits.

import fs from "node:fs";
import path from "node:path";
import type { BoxLimits, UsageSample } from "../types.js";

export const BOXD_RESERVE = { memoryMib: 64, pids: 64 } as const;
export const CPU_PERIOD_US = 100_000;

/** The controllers a box uses (v1 names; cpuacct and freezer when the host has them). */
export const BOX_CONTROLLERS = ["memory", "pids", "cpu", "cpuacct", "freezer"] as const;

export type CgroupLayout =
  | { version: 1; hierarchies: { controllers: string[]; mountPoint: string }[] }
  | { version: 2; mountPoint: string };

export interface CgroupWrite {
  controller: string;
  dir: string;
  file: string;
  value: string;
  /** Skipped (not an error) when the file does not exist on this kernel. */
  optional?: boolean;
}

export interface CgroupPlan {
  version: 1 | 2;
  /** Folders to create, parents first. */
  dirs: string[];
  writes: CgroupWrite[];
  /** cgroup.procs files the box's first process joins before bwrap starts. */
  joinProcs: string[];
  /** The agents' folder per hierarchy, bound into the box for boxd. */
  agents: { name: string; dir: string }[];
  /** The box's folder per hierarchy (what stop() kills and removes). */
  boxDirs: string[];
  /**
   * What box root (boxd in its user namespace) is given: whole trees (folders, files,
   * sub-folders: the agents' folders) and single files. On v2 that includes the box
   * folder's cgroup.procs: moving a process from boxd/ to agents/<x> needs write access to
   * their common ancestor's. The box's limits stay the host's.
   */
  delegate: { trees: string[]; files: string[] };
}

/** Reads cgroup mounts from /proc/self/mountinfo text. */
export function parseCgroupMounts(mountinfo: string): {
  v1: { controllers: string[]; mountPoint: string }[];
  v2: string[];
} {
  const v1: { controllers: string[]; mountPoint: string }[] = [];
  const v2: string[] = [];
  for (const line of mountinfo.split("\n")) {
    const sep = line.indexOf(" - ");
    if (sep < 0) continue;
    const left = line.slice(0, sep).split(" ");
    const right = line.slice(sep + 3).split(" ");
    const mountPoint = left[4]?.replace(/\\040/g, " ");
    const fstype = right[0];
    const superOpts = right[2] ?? "";
    if (!mountPoint) continue;
    if (fstype === "cgroup2") v2.push(mountPoint);
    else if (fstype === "cgroup") {
      const controllers = superOpts
        .split(",")
        .filter((o) => (BOX_CONTROLLERS as readonly string[]).includes(o));
      if (controllers.length) v1.push({ controllers, mountPoint });
    }
  }
  return { v1, v2 };
}

/**
 * Chooses the layout: v2 when a cgroup2 mount offers memory, pids and cpu and is
 * writable; else v1 when memory, pids and cpu hierarchies exist; else null.
 */
export function chooseLayout(
  mounts: ReturnType<typeof parseCgroupMounts>,
  v2Usable: (mountPoint: string) => boolean,
): CgroupLayout | null {
  for (const mp of mounts.v2) if (v2Usable(mp)) return { version: 2, mountPoint: mp };
  const needed = ["memory", "pids", "cpu"];
  const have = new Set(mounts.v1.flatMap((h) => h.controllers));
  if (needed.every((c) => have.has(c))) {
    const seen = new Set<string>();
    const hierarchies = mounts.v1.filter((h) => !seen.has(h.mountPoint) && seen.add(h.mountPoint));
    return { version: 1, hierarchies };
  }
  return null;
}

function checkName(name: string, what: string): void {
  if (!/^[A-Za-z0-9][A-Za-z0-9_.-]*$/.test(name) || name.length > 100)
    throw new Error(`bad cgroup ${what} ${JSON.stringify(name)}`);
}

/** The folders and writes that give a box its cgroups and limits. */
export function cgroupPlan(
  limits: BoxLimits,
  layout: CgroupLayout,
  where: { parent: string; boxId: string },
): CgroupPlan {
  for (const part of where.parent.split("/")) checkName(part, "parent");
  checkName(where.boxId, "box id");
  if (!(limits.memoryMib >= 16) || !(limits.cpus > 0) || !(limits.pids >= 16))
    throw new Error("limits: memoryMib >= 16, cpus > 0, pids >= 16");
  const mib = (n: number): string => String(Math.round(n * 1024 * 1024));
  const boxMemory = mib(limits.memoryMib + BOXD_RESERVE.memoryMib);
  const agentsMemory = mib(limits.memoryMib);
  const quota = String(Math.max(1000, Math.round(limits.cpus * CPU_PERIOD_US)));

  const plan: CgroupPlan = {
    version: layout.version,
    dirs: [],
    writes: [],
    joinProcs: [],
    agents: [],
    boxDirs: [],
    delegate: { trees: [], files: [] },
  };
  const parentParts = where.parent.split("/");

  if (layout.version === 1) {
    for (const h of layout.hierarchies) {
      const name = h.controllers.join(",");
      let dir = h.mountPoint;
      for (const part of parentParts) {
        dir = path.posix.join(dir, part);
        plan.dirs.push(dir);
      }
      const box = path.posix.join(dir, where.boxId);
      const boxd = path.posix.join(box, "boxd");
      const agents = path.posix.join(box, "agents");
      plan.dirs.push(box, boxd, agents);
      plan.boxDirs.push(box);
      plan.joinProcs.push(path.posix.join(boxd, "cgroup.procs"));
      plan.agents.push({ name, dir: agents });
      plan.delegate.trees.push(agents);
      for (const c of h.controllers) {
        switch (c) {
          case "memory":
            // memsw (memory+swap) must stay >= the memory limit: set after it.
            plan.writes.push({ controller: c, dir: box, file: "memory.limit_in_bytes", value: boxMemory });
            plan.writes.push({
              controller: c,
              dir: box,
              file: "memory.memsw.limit_in_bytes",
              value: boxMemory,
              optional: true,
            });
            plan.writes.push({
              controller: c,
              dir: agents,
              file: "memory.limit_in_bytes",
              value: agentsMemory,
            });
            plan.writes.push({
              controller: c,
              dir: agents,
              file: "memory.memsw.limit_in_bytes",
              value: agentsMemory,
              optional: true,
            });
            break;
          case "pids":
            plan.writes.push({
              controller: c,
              dir: box,
              file: "pids.max",
              value: String(limits.pids + BOXD_RESERVE.pids),
            });
            plan.writes.push({ controller: c, dir: agents, file: "pids.max", value: String(limits.pids) });
            break;
          case "cpu":
            plan.writes.push({
              controller: c,
              dir: box,
              file: "cpu.cfs_period_us",
              value: String(CPU_PERIOD_US),
            });
            plan.writes.push({ controller: c, dir: box, file: "cpu.cfs_quota_us", value: quota });
            break;
          default:
            break; // cpuacct: accounting only; freezer: used when a tree is killed
        }
      }
    }
    return plan;
  }

  // v2: one tree; controllers enabled down to the agents' folder (no process may sit in
  // a folder that enables controllers for its children, hence boxd/ and agents/).
  const enable = "+memory +pids +cpu";
  let dir = layout.mountPoint;
  plan.writes.push({ controller: "cgroup", dir, file: "cgroup.subtree_control", value: enable });
  for (const part of parentParts) {
    dir = path.posix.join(dir, part);
    plan.dirs.push(dir);
    plan.writes.push({ controller: "cgroup", dir, file: "cgroup.subtree_control", value: enable });
  }
  const box = path.posix.join(dir, where.boxId);
  const boxd = path.posix.join(box, "boxd");
  const agents = path.posix.join(box, "agents");
  plan.dirs.push(box, boxd, agents);
  plan.boxDirs.push(box);
  plan.writes.push({ controller: "cgroup", dir: box, file: "cgroup.subtree_control", value: enable });
  plan.writes.push({ controller: "cgroup", dir: agents, file: "cgroup.subtree_control", value: enable });
  plan.writes.push({ controller: "memory", dir: box, file: "memory.max", value: boxMemory });
  plan.writes.push({ controller: "memory", dir: box, file: "memory.swap.max", value: "0", optional: true });
  plan.writes.push({
    controller: "pids",
    dir: box,
    file: "pids.max",
    value: String(limits.pids + BOXD_RESERVE.pids),
  });
  plan.writes.push({ controller: "cpu", dir: box, file: "cpu.max", value: `${quota} ${CPU_PERIOD_US}` });
  plan.writes.push({ controller: "memory", dir: agents, file: "memory.max", value: agentsMemory });
  plan.writes.push({ controller: "pids", dir: agents, file: "pids.max", value: String(limits.pids) });
  plan.joinProcs.push(path.posix.join(boxd, "cgroup.procs"));
  plan.agents.push({ name: "unified", dir: agents });
  plan.delegate.trees.push(agents);
  plan.delegate.files.push(path.posix.join(box, "cgroup.procs"));
  return plan;
}

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

/** SIGKILLs every process of the box until none is left, then removes its cgroups. */
export async function destroyBoxCgroups(boxDirs: string[], timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  // a tree left frozen (a kill cut short) would never end: thaw everything first
  for (const root of boxDirs) freezeCgroup(treeDeepestFirst(root), false);
  for (;;) {
    const pids = boxPids(boxDirs);
    if (pids.length === 0) break;
    for (const pid of pids) {
      try {
        process.kill(pid, "SIGKILL");
      } catch {
        // gone already
      }
    }
    if (Date.now() > deadline)
      throw new Error(`processes ${pids.slice(0, 10).join(", ")} of the box survive SIGKILL`);
    await new Promise((r) => setTimeout(r, 2));
  }
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

function readText(dirs: string[], file: string): string | null {
  for (const d of dirs) {
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
  const v2 = readText(dirs, "cgroup.controllers") !== null;
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
function isFrozen(dirs: string[]): boolean {
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
  const deadline = Date.now() + timeoutMs;
  const seen = new Set<number>();
  const signal = (): number => {
    const pids = new Set<number>();
    for (const d of dirs) for (const p of procsOf(d)) pids.add(p);
    for (const pid of pids) {
      seen.add(pid);
      try {
        process.kill(pid, "SIGKILL");
      } catch {
        // gone already
      }
    }
    return pids.size;
  };
  let frozen = freezeCgroup(dirs, true);
  try {
    if (frozen) {
      const until = Math.min(deadline, Date.now() + 2000);
      while (!isFrozen(dirs) && Date.now() < until) await new Promise((r) => setTimeout(r, 5));
      signal();
      freezeCgroup(dirs, false);
      frozen = false;
    }
    for (;;) {
      if (signal() === 0) return seen.size;
      if (Date.now() > deadline) throw new Error(`processes of ${dirs[0] ?? "?"} survive SIGKILL`);
      await new Promise((r) => setTimeout(r, 5));
    }
  } finally {
    if (frozen) freezeCgroup(dirs, false);
  }
}
