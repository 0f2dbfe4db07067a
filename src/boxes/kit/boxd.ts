// What every provider's box is entered by and sees of the host, whatever runs it: box root's
// host id and capabilities, where boxd's files are inside the box, the host's /etc entries
// a box may see and the ones generated for it, and boxd's command line (box-userns, then
// boxd). The local provider binds these with bubblewrap, oci as a container's mounts.
import { BOX_PATHS } from "../paths.js";
import type { BoxSpec } from "../types.js";

/** What boxd's command line is made from. */
export interface BoxdArgs {
  /** The host id box root becomes (BOX_ROOT_HOST_ID). */
  boxRootId: number;
  /** Host folder bound at /run/calls (boxd's calls socket, for agents); none = no calls. */
  callsDir?: string;
  /** Agents' cgroup folders on the host, one per hierarchy; bound under /run/warren/cg/<name>. */
  cgroups: { name: string; dir: string }[];
  cgroupVersion: 1 | 2;
  /** Fd on which boxd says it listens. */
  readyFd?: number;
  /** boxd stops the box after this long without a server connection (and no command); 0: never. */
  orphanAfterS?: number;
}

/** A top-level system folder of the host and how it exists there. */
export type SystemDir = { path: string; kind: "dir" } | { path: string; kind: "symlink"; target: string };

/** Where boxd's own files are inside every box. */
export const IN_BOX = {
  /**
   * boxd, helper, filter, cgroups (read-only binds), and the agents' runtime folders: the
   * box's runtime folder on the host (0711), bound here (BOX_PATHS.runtime).
   */
  privDir: BOX_PATHS.runtime,
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

/**
 * The box's first command: box-userns puts box root in its user namespace, then becomes
 * boxd with these arguments (the same for every provider).
 */
export function boxdArgv(spec: BoxSpec, paths: BoxdArgs): string[] {
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
