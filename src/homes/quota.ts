// Whether the file system holding the homes enforces a quota per folder (a project quota:
// ext4 or xfs mounted with prjquota). Read from the mount table, never assumed: the answer
// is logged at boot, and the disk watcher (watch.ts) is what holds the caps either way
// (warren does not set project quotas up yet; docs/homes.md, "Disk caps during a command").
import { readFileSync, realpathSync } from "node:fs";

export interface QuotaSupport {
  /** The mount point holding the folder, and its file system type. */
  mount: string;
  fs: string;
  /** Mounted with project quotas enforced (`prjquota`, or xfs's `pquota`). */
  project: boolean;
  detail: string;
}

/** A mount table field with its escapes (`\040` for a space) undone. */
const unescape = (s: string): string =>
  s.replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(parseInt(o, 8)));

/** What /proc/self/mountinfo says of the mount holding `dir` (the longest mount point above it). */
export function quotaSupport(dir: string, mountinfo?: string): QuotaSupport {
  let where = dir;
  try {
    where = realpathSync(dir);
  } catch {
    // a folder not made yet: its path as given
  }
  let table = mountinfo;
  if (table === undefined) {
    try {
      table = readFileSync("/proc/self/mountinfo", "utf8");
    } catch {
      return { mount: "", fs: "unknown", project: false, detail: "the mount table cannot be read" };
    }
  }
  let best: { mount: string; fs: string; options: string[] } | undefined;
  for (const line of table.split("\n")) {
    const [left, right] = line.split(" - ");
    if (left === undefined || right === undefined) continue;
    const f = left.split(" ");
    const mount = unescape(f[4] ?? "");
    const [fs = "", , superOptions = ""] = right.split(" ");
    const under = mount === "/" || where === mount || where.startsWith(`${mount}/`);
    if (!under || (best !== undefined && mount.length < best.mount.length)) continue;
    best = { mount, fs, options: [...(f[5] ?? "").split(","), ...superOptions.split(",")] };
  }
  if (!best) return { mount: "", fs: "unknown", project: false, detail: `no mount holds ${where}` };
  const project =
    (best.fs === "ext4" || best.fs === "xfs") &&
    best.options.some(
      (o) => o === "prjquota" || o === "pquota" || o === "prjjquota" || o.startsWith("prjjquota="),
    );
  return {
    mount: best.mount,
    fs: best.fs,
    project,
    detail: project
      ? `${best.fs} at ${best.mount} enforces project quotas; warren does not set them up yet: the disk watcher holds the caps`
      : `${best.fs} at ${best.mount} has no project quota (mount option prjquota): the disk watcher holds the caps`,
  };
}
