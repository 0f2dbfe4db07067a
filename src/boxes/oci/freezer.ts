// An oci box's own cgroup, found on this host so that the provider freezes and thaws it
// itself: what an engine's pause and unpause do (they write the same freezer), without the
// engine's runtime process started for each (20-40 ms on Podman, most of a resume). Found
// only where the engine runs on this host: the container's process is read in /proc and its
// cgroup path must name the container's id, so a pid of an engine elsewhere (another host's
// numbers) never names a cgroup here. Elsewhere the provider asks the engine (provider.ts).
import fs from "node:fs";
import path from "node:path";
import { parseCgroupMounts } from "../kit/cgroup-plan.js";

/**
 * The freezer folders of the cgroup in `procCgroup` (a /proc/<pid>/cgroup's text), by the
 * cgroup mounts of `mountinfo`: v1's freezer hierarchy, else v2's `cgroup.freeze`. Only
 * paths that name `containerId`; [] when none does.
 */
export function freezerDirsOf(procCgroup: string, mountinfo: string, containerId: string): string[] {
  if (!/^[0-9a-f]{12,}$/.test(containerId)) return [];
  const { v1, v2 } = parseCgroupMounts(mountinfo);
  const out: string[] = [];
  for (const line of procCgroup.split("\n")) {
    const m = /^(\d+):([^:]*):(\/.*)$/.exec(line);
    if (!m || !m[3]!.includes(containerId)) continue;
    const [, , controllers, rel] = m;
    if (controllers === "") {
      for (const mp of v2) out.push(path.join(mp, rel!));
      continue;
    }
    if (!controllers!.split(",").includes("freezer")) continue;
    const mount = v1.find((h) => h.controllers.includes("freezer"));
    if (mount) out.push(path.join(mount.mountPoint, rel!));
  }
  // v1's freezer when there is one: a v2 hierarchy beside it holds no controller
  const v1Dirs = out.filter((d) => fs.existsSync(path.join(d, "freezer.state")));
  return v1Dirs.length ? v1Dirs : out.filter((d) => fs.existsSync(path.join(d, "cgroup.freeze")));
}

/** The freezer folders of the container `containerId` whose process is `pid` on this host. */
export function containerFreezerDirs(pid: number, containerId: string): string[] {
  if (!Number.isInteger(pid) || pid <= 0) return [];
  try {
    return freezerDirsOf(
      fs.readFileSync(`/proc/${pid}/cgroup`, "utf8"),
      fs.readFileSync("/proc/self/mountinfo", "utf8"),
      containerId,
    );
  } catch {
    return [];
  }
}
