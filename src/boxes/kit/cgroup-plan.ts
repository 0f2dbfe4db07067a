// The pure part of a box's cgroups: the host's layout parsed from mountinfo, and the plan of
// folders and writes for a box (tested without a kernel). cgroups.ts applies a plan.
//
// Tree (per v1 hierarchy, or once on v2):
//   <parent>/<box id>/          the box: limits + boxd's reserve
//   <parent>/<box id>/boxd/     bwrap, its reaper and boxd
//   <parent>/<box id>/agents/   agents' commands: the machine's limits
//   <parent>/<box id>/agents/x… one per command (created by boxd, killed as a whole)
// boxd's reserve keeps it alive and answering when agents hit their limits.

import path from "node:path";
import type { BoxLimits } from "../types.js";

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
 * The v1 controllers warren uses: limits (memory, pids, cpu), a command's CPU time
 * (cpuacct) and freezing a tree while it is killed (freezer).
 */
const V1_USED = ["memory", "pids", "cpu", "cpuacct", "freezer"];

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
    // only hierarchies with a controller warren uses: every other one would cost each box
    // and each command a folder, a move and a removal for nothing
    const hierarchies = mounts.v1.filter(
      (h) =>
        h.controllers.some((c) => V1_USED.includes(c)) && !seen.has(h.mountPoint) && seen.add(h.mountPoint),
    );
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
