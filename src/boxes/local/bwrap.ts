// The bubblewrap command line of a box, as a pure function of the box's spec and the
// host's facts. docs/boxes.md explains every flag.

import path from "node:path";
import { BOX_PATHS } from "../paths.js";
import type { BoxMount, BoxSpec } from "../types.js";

/** A top-level system folder of the host and how it exists there. */
export type SystemDir = { path: string; kind: "dir" } | { path: string; kind: "symlink"; target: string };

/** Where boxd's own files are inside every box. */
export const IN_BOX = {
  /** Root-only (0700) folder on the box's root tmpfs: boxd, helper, filter, cgroups. */
  privDir: "/run/warren",
  /** boxd (native/boxd), run directly: nothing in the box needs node. */
  boxd: "/run/warren/boxd",
  spawnHelper: "/run/warren/boxd-spawn",
  /** Enters box root's user namespace, then becomes boxd (native/box-userns.c). */
  userns: "/run/warren/box-userns",
  seccomp: "/run/warren/seccomp.bpf",
  cgroupDir: "/run/warren/cg",
  /** Bind of the host's STATE_ROOT/run/boxes/<id>/boxd (0700): boxd's socket. */
  socketDir: "/run/boxd",
  socket: "/run/boxd/boxd.sock",
  /**
   * Bind of the host's STATE_ROOT/run/boxes/<id>/calls (0755, box root's): boxd's calls
   * socket (0666), which agents' commands reach with warren-secret.
   */
  callsDir: "/run/calls",
  callsSocket: "/run/calls/calls.sock",
  /** warren's own tools for agents' commands, read-only (on their PATH). */
  binDir: BOX_PATHS.bin,
  /** Mount point for a command's read-only /agent (bound per command by the helper). */
  agentDir: BOX_PATHS.agent,
  hostname: "box",
} as const;

/**
 * The host uid and gid of box root: boxes run in a user namespace (native/box-userns.c)
 * where 0 is this id, agents' ids (1000-65533) are themselves, and host root is nobody.
 */
export const BOX_ROOT_HOST_ID = 2_000_000;

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

/** Capabilities boxd keeps (every other one is dropped, and every one in agents' processes). */
export const BOXD_CAPS = [
  "CAP_SETUID", // become an agent (helper)
  "CAP_SETGID", // agent's gid and groups (helper)
  "CAP_SETPCAP", // drop the bounding set (helper)
  "CAP_KILL", // kill agents' process trees
  "CAP_SYS_ADMIN", // a private mount namespace and /agent bind per command (helper)
  "CAP_DAC_READ_SEARCH", // reach an agent_dir inside a 0700 home to bind it
] as const;

/** An entry of the host's /etc that boxes see (see etcEntries()). */
export type EtcEntry = { name: string; kind: "bind" } | { name: string; kind: "symlink"; target: string };

export interface BwrapPaths {
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
  /** The host id box root becomes (BOX_ROOT_HOST_ID). */
  boxRootId: number;
  /** The seccomp program file on the host (written by the provider). */
  seccompFile: string;
  /** Host folder bound at /run/boxd (boxd's socket). */
  socketDir: string;
  /** Host folder bound at /run/calls (boxd's calls socket, for agents); none = no calls. */
  callsDir?: string;
  /** The in-box client of the calls socket (dist/native/warren-secret). */
  warrenSecret?: string;
  /** Agents' cgroup folders on the host, one per hierarchy; bound under /run/warren/cg/<name>. */
  cgroups: { name: string; dir: string }[];
  cgroupVersion: 1 | 2;
  /** Generated /etc/passwd and /etc/group for agents, when present. */
  passwdFile?: string;
  groupFile?: string;
  /** Fd on which boxd says it listens. */
  readyFd?: number;
  /** boxd stops the box after this long without a server connection (and no command); 0: never. */
  orphanAfterS?: number;
  /** An fd bwrap reads boxd's own seccomp program from (socket families by list). */
  boxdSeccompFd?: number;
}

const ETC_NAME = /^[A-Za-z0-9_][A-Za-z0-9_.+-]*$/;

/**
 * What boxes see of the host's /etc: what the loader, the C library, shells, certificates,
 * time zones, Debian's alternatives and language runtimes read. Host names, users,
 * services' configuration, package manager state, credentials and keys stay out.
 */
export const ETC_ALLOW: readonly (string | RegExp)[] = [
  "alternatives",
  "bash.bashrc",
  "bash_completion.d",
  "ca-certificates",
  "ca-certificates.conf",
  "debian_version",
  "fonts",
  "gai.conf",
  "host.conf",
  "inputrc",
  /^java-[0-9]+-openjdk$/,
  "ld.so.cache",
  "ld.so.conf",
  "ld.so.conf.d",
  "locale.alias",
  "localtime",
  "magic",
  "magic.mime",
  "mime.types",
  "nsswitch.conf",
  "os-release",
  "perl",
  "profile",
  "profile.d",
  "protocols",
  /^python3(\.[0-9]+)?$/,
  "services",
  "shells",
  "skel",
  "ssl",
  "terminfo",
  "timezone",
  "vim",
];

export function etcAllowed(name: string): boolean {
  return ETC_ALLOW.some((rule) => (typeof rule === "string" ? rule === name : rule.test(name)));
}

/** The box's generated /etc files. No DNS server: the box has loopback only. */
export const ETC_GENERATED = {
  hostname: `${IN_BOX.hostname}\n`,
  hosts: `127.0.0.1\tlocalhost ${IN_BOX.hostname}\n::1\tlocalhost ip6-localhost ip6-loopback\n`,
  "resolv.conf": "# no name service in the box: it has loopback only\n",
} as const;

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
  a.push("--perms", "0711", "--dir", IN_BOX.privDir);
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

/**
 * The box's first command: box-userns puts box root in its user namespace, then becomes
 * boxd with these arguments (the same for every provider).
 */
export function boxdArgv(
  spec: BoxSpec,
  paths: Pick<
    BwrapPaths,
    "boxRootId" | "callsDir" | "cgroupVersion" | "cgroups" | "readyFd" | "orphanAfterS"
  >,
): string[] {
  const a: string[] = [];
  if (!Number.isInteger(paths.boxRootId) || paths.boxRootId <= 65533)
    throw new Error(`box root's host id must be above 65533, not ${paths.boxRootId}`);
  a.push(IN_BOX.userns, "--root-id", String(paths.boxRootId), "--");
  a.push(IN_BOX.boxd);
  a.push("--socket", IN_BOX.socket, "--spawn", IN_BOX.spawnHelper, "--seccomp", IN_BOX.seccomp);
  if (paths.callsDir) a.push("--calls-socket", IN_BOX.callsSocket);
  a.push("--cgroup-version", String(paths.cgroupVersion));
  for (const cg of paths.cgroups) a.push("--cgroup", `${cg.name}=${IN_BOX.cgroupDir}/${cg.name}`);
  for (const b of spec.bridges ?? []) {
    if (!/^[a-z0-9_-]{1,32}$/.test(b.name) || !Number.isInteger(b.port) || b.port < 1 || b.port >= 20000)
      throw new Error(`bad bridge ${JSON.stringify(b)}: a name of a-z0-9_- and a port below 20000`);
    a.push("--bridge", `${b.name}=${b.port}`);
  }
  if (paths.readyFd !== undefined) a.push("--ready-fd", String(paths.readyFd));
  if (paths.orphanAfterS !== undefined) {
    if (!Number.isInteger(paths.orphanAfterS) || paths.orphanAfterS < 0)
      throw new Error(`orphanAfterS must be a whole number of seconds >= 0, not ${paths.orphanAfterS}`);
    a.push("--orphan-after-s", String(paths.orphanAfterS));
  }
  return a;
}

/** The environment bwrap (and so boxd) starts with: nothing of the server's. */
export function bwrapEnv(): Record<string, string> {
  return { PATH: "/usr/local/bin:/usr/bin:/bin", LANG: "C.UTF-8" };
}
