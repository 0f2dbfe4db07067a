// The seccomp filter every agent process runs under, as a classic BPF program.
//
// One table below lists each refused system call, the errno it gets and why; the
// program is generated from it, written into the box by the provider, and loaded by
// native/boxd-spawn right before execve (after no_new_privs). The unit test runs the
// generated program through a small cBPF interpreter, so what is refused is checked
// here without a kernel.

export type SeccompArch = "x86_64" | "aarch64";

/** What a refused call gets. */
export type SeccompRule =
  | { kind: "errno"; errno: "EPERM" | "ENOSYS" }
  /** Refused (EPERM) only when arg0 (clone or unshare flags) asks for a new namespace. */
  | { kind: "namespace-flags" }
  /** Refused (EPERM) only for the listed ioctl requests (low 32 bits of arg1). */
  | { kind: "ioctl-requests"; requests: number[] }
  /**
   * socket(2): allowed only for the families of SOCKET_FAMILIES (netlink only with the
   * listed protocols, arg2); any other family gets EAFNOSUPPORT.
   */
  | { kind: "socket-families" }
  /** socketpair(2): AF_UNIX only; any other family gets EAFNOSUPPORT. */
  | { kind: "socketpair-families" };

export interface SeccompEntry {
  name: string;
  /** Syscall numbers; a call absent on an architecture has no number there. */
  nr: Partial<Record<SeccompArch, number>>;
  rule: SeccompRule;
  why: string;
}

export const CLONE_NEWNS = 0x00020000;
export const CLONE_NEWCGROUP = 0x02000000;
export const CLONE_NEWUTS = 0x04000000;
export const CLONE_NEWIPC = 0x08000000;
export const CLONE_NEWUSER = 0x10000000;
export const CLONE_NEWPID = 0x20000000;
export const CLONE_NEWNET = 0x40000000;
export const CLONE_NEWTIME = 0x00000080;
export const NAMESPACE_FLAGS =
  CLONE_NEWNS |
  CLONE_NEWCGROUP |
  CLONE_NEWUTS |
  CLONE_NEWIPC |
  CLONE_NEWUSER |
  CLONE_NEWPID |
  CLONE_NEWNET |
  CLONE_NEWTIME;

export const AF_UNIX = 1;
export const AF_INET = 2;
export const AF_INET6 = 10;
export const AF_NETLINK = 16;
export const NETLINK_ROUTE = 0;

/**
 * The socket families agents may open: local sockets, TCP/UDP over IPv4 and IPv6, and
 * netlink for routing information only (what `ip addr` and getaddrinfo's AI_ADDRCONFIG
 * read). Everything else is refused, vsock above all: network namespaces do not
 * isolate it, and on a host that is a VM it leads to the hypervisor.
 */
export const SOCKET_FAMILIES: { family: number; name: string; protocols?: number[] }[] = [
  { family: AF_UNIX, name: "AF_UNIX" },
  { family: AF_INET, name: "AF_INET" },
  { family: AF_INET6, name: "AF_INET6" },
  { family: AF_NETLINK, name: "AF_NETLINK", protocols: [NETLINK_ROUTE] },
];

export const TIOCSTI = 0x5412;
export const TIOCLINUX = 0x541c;

/** A refused call by its numbers (none on aarch64: absent there), what it gets and why. */
const refuse = (
  name: string,
  x86_64: number,
  aarch64: number | undefined,
  rule: SeccompRule,
  why: string,
): SeccompEntry => ({ name, nr: aarch64 === undefined ? { x86_64 } : { x86_64, aarch64 }, rule, why });

/** A call refused with EPERM whatever its arguments. */
const eperm = (name: string, x86_64: number, aarch64: number | undefined, why: string): SeccompEntry =>
  refuse(name, x86_64, aarch64, { kind: "errno", errno: "EPERM" }, why);

/** The one list of what agents may not call. */
export const SECCOMP_DENY: readonly SeccompEntry[] = [
  eperm("ptrace", 101, 117, "no tracing of other processes (boxd, other agents)"),
  eperm("process_vm_readv", 310, 270, "reads another process's memory"),
  eperm("process_vm_writev", 311, 271, "writes another process's memory"),
  eperm("kcmp", 312, 272, "ptrace-class inspection of other processes"),
  eperm("pidfd_getfd", 438, 438, "steals file descriptors (ptrace-class)"),
  eperm("process_madvise", 440, 440, "acts on another process's memory"),
  eperm("mount", 165, 40, "the mount table is fixed by the box"),
  eperm("umount2", 166, 39, "unmounting could reveal what a mount hides"),
  eperm("pivot_root", 155, 41, "changes the root of the mount namespace"),
  eperm("chroot", 161, 51, "classic escape helper; never needed by agents"),
  eperm("open_tree", 428, 428, "new mount API"),
  eperm("move_mount", 429, 429, "new mount API"),
  eperm("fsopen", 430, 430, "new mount API"),
  eperm("fsconfig", 431, 431, "new mount API"),
  eperm("fsmount", 432, 432, "new mount API"),
  eperm("fspick", 433, 433, "new mount API"),
  eperm("mount_setattr", 442, 442, "new mount API"),
  refuse("unshare", 272, 97, { kind: "namespace-flags" }, "no new namespaces (user namespaces above all)"),
  refuse("clone", 56, 220, { kind: "namespace-flags" }, "fork is fine, new namespaces are not"),
  refuse(
    "clone3",
    435,
    435,
    { kind: "errno", errno: "ENOSYS" },
    "its flags live in memory a filter cannot read; ENOSYS makes libc fall back to clone",
  ),
  eperm("setns", 308, 268, "no joining other namespaces"),
  eperm("bpf", 321, 280, "kernel attack surface"),
  eperm("perf_event_open", 298, 241, "kernel attack surface, side channels"),
  eperm("userfaultfd", 323, 282, "widens kernel race windows in exploits"),
  eperm("io_uring_setup", 425, 425, "kernel attack surface; bypasses this filter"),
  eperm("io_uring_enter", 426, 426, "kernel attack surface"),
  eperm("io_uring_register", 427, 427, "kernel attack surface"),
  eperm("keyctl", 250, 219, "kernel keyrings are not namespaced"),
  eperm("add_key", 248, 217, "kernel keyrings are not namespaced"),
  eperm("request_key", 249, 218, "kernel keyrings are not namespaced"),
  eperm("init_module", 175, 105, "kernel modules"),
  eperm("finit_module", 313, 273, "kernel modules"),
  eperm("delete_module", 176, 106, "kernel modules"),
  eperm("create_module", 174, undefined, "kernel modules (obsolete)"),
  eperm("kexec_load", 246, 104, "replaces the kernel"),
  eperm("kexec_file_load", 320, 294, "replaces the kernel"),
  refuse(
    "ioctl",
    16,
    29,
    { kind: "ioctl-requests", requests: [TIOCSTI, TIOCLINUX] },
    "TIOCSTI/TIOCLINUX push input into a terminal another process reads",
  ),
  refuse(
    "socket",
    41,
    198,
    { kind: "socket-families" },
    "only unix, IPv4, IPv6 and routing netlink: no vsock, packet, alg, bluetooth, key, xdp, audit netlink",
  ),
  refuse(
    "socketpair",
    53,
    199,
    { kind: "socketpair-families" },
    "pairs exist only for unix sockets; every other family is refused before the kernel sees it",
  ),
  eperm("reboot", 169, 142, "host-wide"),
  eperm("swapon", 167, 224, "host-wide"),
  eperm("swapoff", 168, 225, "host-wide"),
  eperm("acct", 163, 89, "host-wide process accounting"),
  eperm("quotactl", 179, 60, "host-wide disk quotas"),
  eperm("quotactl_fd", 443, 443, "host-wide disk quotas"),
  eperm("settimeofday", 164, 170, "the clock is not namespaced"),
  eperm("clock_settime", 227, 112, "the clock is not namespaced"),
  eperm("adjtimex", 159, 171, "the clock is not namespaced"),
  eperm("clock_adjtime", 305, 266, "the clock is not namespaced"),
  eperm("sethostname", 170, 161, "the box's name is fixed"),
  eperm("setdomainname", 171, 162, "the box's name is fixed"),
  eperm("syslog", 103, 116, "the kernel log leaks host addresses"),
  eperm("name_to_handle_at", 303, 264, "file handles reach outside bind mounts"),
  eperm("open_by_handle_at", 304, 265, "file handles reach outside bind mounts"),
  eperm("fanotify_init", 300, 262, "watches the whole filesystem"),
  eperm("lookup_dcookie", 212, 18, "kernel profiling"),
  eperm("vhangup", 153, 58, "terminal hijacking"),
  eperm("iopl", 172, undefined, "raw port I/O"),
  eperm("ioperm", 173, undefined, "raw port I/O"),
  eperm("uselib", 134, undefined, "obsolete loader entry point"),
  eperm("_sysctl", 156, undefined, "obsolete"),
  eperm("nfsservctl", 180, 42, "obsolete"),
  eperm("get_kernel_syms", 177, undefined, "obsolete"),
  eperm("query_module", 178, undefined, "obsolete"),
];

/**
 * boxd's own filter, loaded by bwrap before the box's first process and so under every
 * process of the box: box root gets the agents' socket families and nothing more of
 * their list (it mounts /agent, joins cgroups and changes ids for each command).
 */
export const BOXD_SECCOMP_DENY: readonly SeccompEntry[] = SECCOMP_DENY.filter(
  (e) => e.rule.kind === "socket-families" || e.rule.kind === "socketpair-families",
);

// ---- classic BPF -------------------------------------------------------------------

export interface BpfInstruction {
  code: number;
  jt: number;
  jf: number;
  k: number;
}

export const BPF = {
  LD_W_ABS: 0x20,
  JEQ_K: 0x15,
  JGE_K: 0x35,
  JSET_K: 0x45,
  JA: 0x05,
  RET_K: 0x06,
} as const;

export const SECCOMP_RET = {
  KILL_PROCESS: 0x80000000,
  ERRNO: 0x00050000,
  ALLOW: 0x7fff0000,
} as const;

export const ERRNO = { EPERM: 1, ENOSYS: 38, EAFNOSUPPORT: 97 } as const;

export const AUDIT_ARCH: Record<SeccompArch, number> = {
  x86_64: 0xc000003e,
  aarch64: 0xc00000b7,
};

/** Offsets into struct seccomp_data (little-endian: the low word of an arg comes first). */
export const SECCOMP_DATA = {
  nr: 0,
  arch: 4,
  argLow: (i: number): number => 16 + 8 * i,
} as const;

/** x32 system calls on x86_64 carry this bit; they are refused. */
const X32_SYSCALL_BIT = 0x40000000;

type Target =
  | "allow"
  | "eperm"
  | "enosys"
  | "eafnosupport"
  | "kill"
  | "nsflags"
  | "ioctl"
  | "socket"
  | "socketpair"
  | "netlink";
type Op =
  | { op: "ld"; offset: number }
  | { op: "jeq" | "jge" | "jset"; k: number; yes: Target | "next"; no: Target | "next" }
  | { op: "ret"; value: number }
  | { op: "label"; name: Target };

/** Builds the filter for one architecture from SECCOMP_DENY. */
export function seccompProgram(
  arch: SeccompArch,
  deny: readonly SeccompEntry[] = SECCOMP_DENY,
): BpfInstruction[] {
  const ops: Op[] = [];
  ops.push({ op: "ld", offset: SECCOMP_DATA.arch });
  ops.push({ op: "jeq", k: AUDIT_ARCH[arch], yes: "next", no: "kill" });
  ops.push({ op: "ld", offset: SECCOMP_DATA.nr });
  if (arch === "x86_64") ops.push({ op: "jge", k: X32_SYSCALL_BIT, yes: "eperm", no: "next" });
  const ioctlRequests = new Set<number>();
  for (const entry of deny) {
    const nr = entry.nr[arch];
    if (nr === undefined) continue;
    const rule = entry.rule;
    let target: Target;
    switch (rule.kind) {
      case "errno":
        target = rule.errno === "EPERM" ? "eperm" : "enosys";
        break;
      case "namespace-flags":
        target = "nsflags";
        break;
      case "ioctl-requests":
        for (const r of rule.requests) ioctlRequests.add(r);
        target = "ioctl";
        break;
      case "socket-families":
        target = "socket";
        break;
      case "socketpair-families":
        target = "socketpair";
        break;
    }
    ops.push({ op: "jeq", k: nr, yes: target, no: "next" });
  }
  ops.push({ op: "ret", value: SECCOMP_RET.ALLOW });
  // cBPF jumps only forward: the argument checks come after the chain, before "allow".
  ops.push({ op: "label", name: "nsflags" });
  ops.push({ op: "ld", offset: SECCOMP_DATA.argLow(0) });
  ops.push({ op: "jset", k: NAMESPACE_FLAGS, yes: "eperm", no: "allow" });
  ops.push({ op: "label", name: "ioctl" });
  // ioctl's request is an unsigned int in the kernel: only the low 32 bits count, so
  // only they are compared (checking the high word too would let 1<<32|TIOCSTI through).
  ops.push({ op: "ld", offset: SECCOMP_DATA.argLow(1) });
  for (const r of [...ioctlRequests].sort((a, b) => a - b))
    ops.push({ op: "jeq", k: r, yes: "eperm", no: "next" });
  ops.push({ op: "ret", value: SECCOMP_RET.ALLOW });
  // socket(family, type, protocol): the family is an int, so its low word is all of it.
  ops.push({ op: "label", name: "socket" });
  ops.push({ op: "ld", offset: SECCOMP_DATA.argLow(0) });
  for (const f of SOCKET_FAMILIES)
    ops.push({ op: "jeq", k: f.family, yes: f.protocols ? "netlink" : "allow", no: "next" });
  ops.push({ op: "ret", value: SECCOMP_RET.ERRNO | ERRNO.EAFNOSUPPORT });
  ops.push({ op: "label", name: "netlink" });
  ops.push({ op: "ld", offset: SECCOMP_DATA.argLow(2) });
  for (const p of SOCKET_FAMILIES.find((f) => f.family === AF_NETLINK)?.protocols ?? [])
    ops.push({ op: "jeq", k: p, yes: "allow", no: "next" });
  ops.push({ op: "ret", value: SECCOMP_RET.ERRNO | ERRNO.EAFNOSUPPORT });
  ops.push({ op: "label", name: "socketpair" });
  ops.push({ op: "ld", offset: SECCOMP_DATA.argLow(0) });
  ops.push({ op: "jeq", k: AF_UNIX, yes: "allow", no: "eafnosupport" });
  ops.push({ op: "label", name: "allow" });
  ops.push({ op: "ret", value: SECCOMP_RET.ALLOW });
  ops.push({ op: "label", name: "eafnosupport" });
  ops.push({ op: "ret", value: SECCOMP_RET.ERRNO | ERRNO.EAFNOSUPPORT });
  ops.push({ op: "label", name: "eperm" });
  ops.push({ op: "ret", value: SECCOMP_RET.ERRNO | ERRNO.EPERM });
  ops.push({ op: "label", name: "enosys" });
  ops.push({ op: "ret", value: SECCOMP_RET.ERRNO | ERRNO.ENOSYS });
  ops.push({ op: "label", name: "kill" });
  ops.push({ op: "ret", value: SECCOMP_RET.KILL_PROCESS });
  return assemble(ops);
}

function assemble(ops: Op[]): BpfInstruction[] {
  const labels = new Map<Target, number>();
  let index = 0;
  for (const op of ops) {
    if (op.op === "label") labels.set(op.name, index);
    else index++;
  }
  const out: BpfInstruction[] = [];
  for (const op of ops) {
    switch (op.op) {
      case "label":
        break;
      case "ld":
        out.push({ code: BPF.LD_W_ABS, jt: 0, jf: 0, k: op.offset });
        break;
      case "ret":
        out.push({ code: BPF.RET_K, jt: 0, jf: 0, k: op.value >>> 0 });
        break;
      case "jeq":
      case "jge":
      case "jset": {
        const here = out.length;
        const rel = (t: Target | "next"): number => {
          if (t === "next") return 0;
          const at = labels.get(t);
          if (at === undefined) throw new Error(`seccomp: no label ${t}`);
          const d = at - here - 1;
          if (d < 0 || d > 255) throw new Error(`seccomp: jump to ${t} out of range (${d})`);
          return d;
        };
        const code = op.op === "jeq" ? BPF.JEQ_K : op.op === "jge" ? BPF.JGE_K : BPF.JSET_K;
        out.push({ code, jt: rel(op.yes), jf: rel(op.no), k: op.k >>> 0 });
        break;
      }
    }
  }
  if (out.length > 4096) throw new Error("seccomp: program too long");
  return out;
}

/** struct sock_filter[] in host byte order, as prctl(PR_SET_SECCOMP) takes it. */
export function encodeProgram(program: BpfInstruction[]): Buffer {
  const buf = Buffer.alloc(program.length * 8);
  program.forEach((ins, i) => {
    buf.writeUInt16LE(ins.code, i * 8);
    buf.writeUInt8(ins.jt, i * 8 + 2);
    buf.writeUInt8(ins.jf, i * 8 + 3);
    buf.writeUInt32LE(ins.k, i * 8 + 4);
  });
  return buf;
}

/** The architecture of this Node process, or null where no table exists. */
export function hostSeccompArch(nodeArch: string = process.arch): SeccompArch | null {
  if (nodeArch === "x64") return "x86_64";
  if (nodeArch === "arm64") return "aarch64";
  return null;
}
