// The bubblewrap command line of a box, as a pure function of the box's spec and the
// host's facts. docs/boxes.md explains every flag.

import path from "node:path";
import { BOX_PATHS } from "../paths.js";
import type { BoxMount, BoxSpec } from "../types.js";
import { BOXD_CAPS, boxdArgv, IN_BOX, type BoxdArgs, type EtcEntry, type SystemDir } from "../kit/boxd.js";

/** Paths in the box that mounts from the spec may not cover or shadow. */
const RESERVED = [
  "/",
  "/proc",
  "/dev",
  "/run",
  "/agent",
  BOX_PATHS.workspace,
  "/usr",
  "/bin",
  "/lib",
  "/lib64",
  "/sbin",
  "/etc",
  BOX_PATHS.bin,
];

/** What bwrap's command line is made from, besides boxd's own (BoxdArgs). */
export interface BwrapPaths extends BoxdArgs {
  /** The host's /usr, /bin, /lib, /lib64, /sbin as they exist (see systemDirs()). */
  systemDirs: SystemDir[];
  /** The allowed entries of the host's /etc (see etcEntries()); nothing else of it. */
  etc: EtcEntry[];
  /** Generated /etc files of the box (hosts, hostname, resolv.conf), by name. */
  etcFiles: Record<string, string>;
  /** The boxd binary (dist/native/boxd). */
  boxdBinary: string;
  spawnHelper: string;
  /** The user namespace launcher (dist/native/box-userns). */
  userns: string;
  /** The seccomp program file on the host (written by the provider). */
  seccompFile: string;
  /** Host folder bound at /run/warren (the agents' runtime folders; kit/runtime-dirs.ts). */
  runtimeDir?: string;
  /** Host folder bound at /run/boxd (boxd's socket). */
  socketDir: string;
  /** The in-box client of the calls socket (dist/native/warren-secret). */
  warrenSecret?: string;
  /** Generated /etc/passwd and /etc/group for agents, when present. */
  passwdFile?: string;
  groupFile?: string;
  /** An fd bwrap reads boxd's own seccomp program from (socket families by list). */
  boxdSeccompFd?: number;
}

const ETC_NAME = /^[A-Za-z0-9_][A-Za-z0-9_.+-]*$/;

function clean(p: string, what: string): string {
  if (!path.isAbsolute(p) || p.includes("\0"))
    throw new Error(`${what} must be an absolute path: ${JSON.stringify(p)}`);
  const norm = path.posix.normalize(p);
  if (norm !== p.replace(/\/+$/, "") && norm !== p)
    throw new Error(`${what} must be a normalised path: ${JSON.stringify(p)}`);
  return norm;
}

function checkTarget(target: string): string {
  const t = clean(target, "mount target");
  for (const r of RESERVED) {
    if (t === r || (r !== "/" && t.startsWith(`${r}/`)))
      throw new Error(
        `mount target ${t} is reserved by the box (${r}); mount elsewhere, e.g. under /home or /data`,
      );
  }
  return t;
}

function mountArgs(m: BoxMount): string[] {
  switch (m.kind) {
    case "bind":
      return [m.readOnly ? "--ro-bind" : "--bind", clean(m.source, "mount source"), checkTarget(m.target)];
    case "tmpfs": {
      if (!Number.isInteger(m.sizeMib) || m.sizeMib < 1)
        throw new Error(`tmpfs ${m.target} needs a size in MiB`);
      const mode = (m.mode ?? (m.target === "/tmp" ? 0o1777 : 0o755)).toString(8).padStart(4, "0");
      return ["--perms", mode, "--size", String(m.sizeMib * 1024 * 1024), "--tmpfs", checkTarget(m.target)];
    }
  }
}

/**
 * bwrap's arguments (without the bwrap binary itself) that start boxd as the box's first
 * process. Order matters: bwrap applies mount operations in the order given.
 */
export function bwrapArgv(spec: BoxSpec, paths: BwrapPaths): string[] {
  const a: string[] = [];
  // Namespaces: every one but the user namespace (we are real root; agents get real,
  // unprivileged uids). bwrap's own pid 1 reaps orphans; boxd is pid 2.
  a.push("--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts");
  // A cgroup namespace hides host cgroup paths. On v2 it would also confine cgroup
  // migrations to the namespace root, which must be the box's boxd cgroup: not wanted.
  if (paths.cgroupVersion === 1) a.push("--unshare-cgroup-try");
  a.push("--hostname", IN_BOX.hostname);
  a.push("--new-session");
  // Capabilities: boxd keeps only what it needs.
  a.push("--cap-drop", "ALL");
  for (const cap of BOXD_CAPS) a.push("--cap-add", cap);

  // System folders, read-only; symlinks (usrmerge) recreated as symlinks.
  for (const d of paths.systemDirs) {
    const p = clean(d.path, "system folder");
    if (d.kind === "dir") a.push("--ro-bind", p, p);
    else a.push("--symlink", d.target, p);
  }
  // /etc: a folder on the box's root with only the allowed entries of the host's, and
  // the box's own names (passwd, group, hosts, hostname, resolv.conf).
  a.push("--perms", "0755", "--dir", "/etc");
  const generated = new Map<string, string>(Object.entries(paths.etcFiles));
  if (paths.passwdFile) generated.set("passwd", paths.passwdFile);
  if (paths.groupFile) generated.set("group", paths.groupFile);
  for (const e of paths.etc) {
    if (!ETC_NAME.test(e.name)) throw new Error(`bad /etc entry ${JSON.stringify(e.name)}`);
    if (generated.has(e.name) || e.name === "mtab") continue;
    if (e.kind === "symlink") a.push("--symlink", e.target, `/etc/${e.name}`);
    else a.push("--ro-bind", `/etc/${e.name}`, `/etc/${e.name}`);
  }
  for (const [name, file] of generated) {
    if (!ETC_NAME.test(name)) throw new Error(`bad /etc entry ${JSON.stringify(name)}`);
    a.push("--ro-bind", clean(file, `${name} file`), `/etc/${name}`);
  }
  a.push("--symlink", "../proc/self/mounts", "/etc/mtab");
  a.push("--proc", "/proc");
  a.push("--dev", "/dev");
  // the host's GPU devices of a `gpu` machine, at their own paths
  for (const d of spec.devices ?? []) a.push("--dev-bind", clean(d, "device"), d);

  // The spec's mounts: /home (the machine's folder), /data, /opt/warren/contracts, /tmp.
  const targets = new Set<string>();
  for (const m of spec.mounts) {
    const t = path.posix.normalize(m.target);
    if (targets.has(t)) throw new Error(`two mounts on ${t}`);
    targets.add(t);
  }
  const hasTmp = targets.has("/tmp");
  // /opt/warren (contracts, warren's tools): folders agents may pass through; bwrap would
  // make them 0700 on the way to a mount
  for (const d of ["/opt", "/opt/warren"]) if (!targets.has(d)) a.push("--perms", "0755", "--dir", d);
  const sorted = [...spec.mounts].sort((x, y) => x.target.split("/").length - y.target.split("/").length);
  for (const m of sorted) a.push(...mountArgs(m));
  if (!hasTmp) a.push(...mountArgs({ kind: "tmpfs", target: "/tmp", sizeMib: spec.limits.tmpMib }));

  // boxd's private files: a folder on the root tmpfs, read-only binds inside. 0711: box
  // root (an unprivileged host id once in its user namespace) passes through it; agents'
  // commands cannot open anything under /run (Landlock), and nothing there is theirs.
  // With a runtime folder on the host (0711, root's), the folder is that one, bound: the
  // agents' runtime folders (/run/warren/<agent id>, each its uid's alone) appear in it live.
  // (/run made first, 0755: bwrap would make a bind's missing parents 0700)
  if (paths.runtimeDir)
    a.push(
      "--perms",
      "0755",
      "--dir",
      "/run",
      "--bind",
      clean(paths.runtimeDir, "runtime folder"),
      IN_BOX.privDir,
    );
  else a.push("--perms", "0711", "--dir", IN_BOX.privDir);
  a.push("--ro-bind", clean(paths.boxdBinary, "boxd binary"), IN_BOX.boxd);
  a.push("--ro-bind", clean(paths.spawnHelper, "spawn helper"), IN_BOX.spawnHelper);
  a.push("--ro-bind", clean(paths.userns, "user namespace launcher"), IN_BOX.userns);
  a.push("--ro-bind", clean(paths.seccompFile, "seccomp file"), IN_BOX.seccomp);
  a.push("--perms", "0711", "--dir", IN_BOX.cgroupDir);
  for (const cg of paths.cgroups) {
    if (!/^[a-z_,]+$/.test(cg.name)) throw new Error(`bad cgroup name ${cg.name}`);
    a.push("--bind", clean(cg.dir, "cgroup folder"), `${IN_BOX.cgroupDir}/${cg.name}`);
  }
  a.push("--bind", clean(paths.socketDir, "socket folder"), IN_BOX.socketDir);
  if (paths.callsDir) a.push("--bind", clean(paths.callsDir, "calls folder"), IN_BOX.callsDir);
  if (paths.warrenSecret) a.push("--perms", "0755", "--dir", IN_BOX.binDir);
  if (paths.warrenSecret)
    a.push("--ro-bind", clean(paths.warrenSecret, "warren-secret"), `${IN_BOX.binDir}/warren-secret`);
  a.push("--dir", IN_BOX.agentDir);
  // the mount point of a command's /workspace (bound per command by the helper)
  a.push("--perms", "0755", "--dir", BOX_PATHS.workspace);
  // Nothing may be created at the root of the box after this.
  a.push("--remount-ro", "/");
  // boxd's own filter (and so of everything in the box): socket families by list.
  if (paths.boxdSeccompFd !== undefined) a.push("--seccomp", String(paths.boxdSeccompFd));
  a.push("--chdir", "/");
  a.push("--");
  a.push(...boxdArgv(spec, paths));
  return a;
}

/** The environment bwrap (and so boxd) starts with: nothing of the server's. */
export function bwrapEnv(): Record<string, string> {
  return { PATH: "/usr/local/bin:/usr/bin:/bin", LANG: "C.UTF-8" };
}
