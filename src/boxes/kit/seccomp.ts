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

const EPERM = { kind: "errno", errno: "EPERM" } as const;

/** The one list of what agents may not call. */
export const SECCOMP_DENY: readonly SeccompEntry[] = [
  {
    name: "ptrace",
    nr: { x86_64: 101, aarch64: 117 },
    rule: EPERM,
    why: "no tracing of other processes (boxd, other agents)",
  },
  {
    name: "process_vm_readv",
    nr: { x86_64: 310, aarch64: 270 },
    rule: EPERM,
    why: "reads another process's memory",
  },
  {
    name: "process_vm_writev",
    nr: { x86_64: 311, aarch64: 271 },
    rule: EPERM,
    why: "writes another process's memory",
  },
  {
    name: "kcmp",
    nr: { x86_64: 312, aarch64: 272 },
    rule: EPERM,
    why: "ptrace-class inspection of other processes",
  },
  {
    name: "pidfd_getfd",
    nr: { x86_64: 438, aarch64: 438 },
    rule: EPERM,
    why: "steals file descriptors (ptrace-class)",
  },
  {
    name: "process_madvise",
    nr: { x86_64: 440, aarch64: 440 },
    rule: EPERM,
    why: "acts on another process's memory",
  },
  {
    name: "mount",
    nr: { x86_64: 165, aarch64: 40 },
    rule: EPERM,
    why: "the mount table is fixed by the box",
  },
  {
    name: "umount2",
    nr: { x86_64: 166, aarch64: 39 },
    rule: EPERM,
    why: "unmounting could reveal what a mount hides",
  },
  {
    name: "pivot_root",
    nr: { x86_64: 155, aarch64: 41 },
    rule: EPERM,
    why: "changes the root of the mount namespace",
  },
  {
    name: "chroot",
    nr: { x86_64: 161, aarch64: 51 },
    rule: EPERM,
    why: "classic escape helper; never needed by agents",
  },
  { name: "open_tree", nr: { x86_64: 428, aarch64: 428 }, rule: EPERM, why: "new mount API" },
  { name: "move_mount", nr: { x86_64: 429, aarch64: 429 }, rule: EPERM, why: "new mount API" },
  { name: "fsopen", nr: { x86_64: 430, aarch64: 430 }, rule: EPERM, why: "new mount API" },
  { name: "fsconfig", nr: { x86_64: 431, aarch64: 431 }, rule: EPERM, why: "new mount API" },
  { name: "fsmount", nr: { x86_64: 432, aarch64: 432 }, rule: EPERM, why: "new mount API" },
  { name: "fspick", nr: { x86_64: 433, aarch64: 433 }, rule: EPERM, why: "new mount API" },
  { name: "mount_setattr", nr: { x86_64: 442, aarch64: 442 }, rule: EPERM, why: "new mount API" },
  {
    name: "unshare",
    nr: { x86_64: 272, aarch64: 97 },
    rule: { kind: "namespace-flags" },
    why: "no new namespaces (user namespaces above all)",
  },
  {
    name: "clone",
    nr: { x86_64: 56, aarch64: 220 },
    rule: { kind: "namespace-flags" },
    why: "fork is fine, new namespaces are not",
  },
  {
    name: "clone3",
    nr: { x86_64: 435, aarch64: 435 },
    rule: { kind: "errno", errno: "ENOSYS" },
    why: "its flags live in memory a filter cannot read; ENOSYS makes libc fall back to clone",
  },
  { name: "setns", nr: { x86_64: 308, aarch64: 268 }, rule: EPERM, why: "no joining other namespaces" },
  { name: "bpf", nr: { x86_64: 321, aarch64: 280 }, rule: EPERM, why: "kernel attack surface" },
  {
    name: "perf_event_open",
    nr: { x86_64: 298, aarch64: 241 },
    rule: EPERM,
    why: "kernel attack surface, side channels",
  },
  {
    name: "userfaultfd",
    nr: { x86_64: 323, aarch64: 282 },
    rule: EPERM,
    why: "widens kernel race windows in exploits",
  },
  {
    name: "io_uring_setup",
    nr: { x86_64: 425, aarch64: 425 },
    rule: EPERM,
    why: "kernel attack surface; bypasses this filter",
  },
  { name: "io_uring_enter", nr: { x86_64: 426, aarch64: 426 }, rule: EPERM, why: "kernel attack surface" },
  { name: "io_uring_register", nr: { x86_64: 427, aarch64: 427 }, rule: EPERM, why: "kernel attack surface" },
  {
    name: "keyctl",
    nr: { x86_64: 250, aarch64: 219 },
    rule: EPERM,
    why: "kernel keyrings are not namespaced",
  },
  {
    name: "add_key",
    nr: { x86_64: 248, aarch64: 217 },
    rule: EPERM,
    why: "kernel keyrings are not namespaced",
  },
  {
    name: "request_key",
    nr: { x86_64: 249, aarch64: 218 },
    rule: EPERM,
    why: "kernel keyrings are not namespaced",
  },
  { name: "init_module", nr: { x86_64: 175, aarch64: 105 }, rule: EPERM, why: "kernel modules" },
  { name: "finit_module", nr: { x86_64: 313, aarch64: 273 }, rule: EPERM, why: "kernel modules" },
  { name: "delete_module", nr: { x86_64: 176, aarch64: 106 }, rule: EPERM, why: "kernel modules" },
  { name: "create_module", nr: { x86_64: 174 }, rule: EPERM, why: "kernel modules (obsolete)" },
  { name: "kexec_load", nr: { x86_64: 246, aarch64: 104 }, rule: EPERM, why: "replaces the kernel" },
  { name: "kexec_file_load", nr: { x86_64: 320, aarch64: 294 }, rule: EPERM, why: "replaces the kernel" },
  {
    name: "ioctl",
    nr: { x86_64: 16, aarch64: 29 },
    rule: { kind: "ioctl-requests", requests: [TIOCSTI, TIOCLINUX] },
    why: "TIOCSTI/TIOCLINUX push input into a terminal another process reads",
  },
  {
    name: "socket",
    nr: { x86_64: 41, aarch64: 198 },
    rule: { kind: "socket-families" },
    why: "only unix, IPv4, IPv6 and routing netlink: no vsock, packet, alg, bluetooth, key, xdp, audit netlink",
  },
  {
    name: "socketpair",
    nr: { x86_64: 53, aarch64: 199 },
    rule: { kind: "socketpair-families" },
    why: "pairs exist only for unix sockets; every other family is refused before the kernel sees it",
  },
  { name: "reboot", nr: { x86_64: 169, aarch64: 142 }, rule: EPERM, why: "host-wide" },
  { name: "swapon", nr: { x86_64: 167, aarch64: 224 }, rule: EPERM, why: "host-wide" },
  { name: "swapoff", nr: { x86_64: 168, aarch64: 225 }, rule: EPERM, why: "host-wide" },
  { name: "acct", nr: { x86_64: 163, aarch64: 89 }, rule: EPERM, why: "host-wide process accounting" },
  { name: "quotactl", nr: { x86_64: 179, aarch64: 60 }, rule: EPERM, why: "host-wide disk quotas" },
  { name: "quotactl_fd", nr: { x86_64: 443, aarch64: 443 }, rule: EPERM, why: "host-wide disk quotas" },
  {
    name: "settimeofday",
    nr: { x86_64: 164, aarch64: 170 },
    rule: EPERM,
    why: "the clock is not namespaced",
  },
  {
    name: "clock_settime",
    nr: { x86_64: 227, aarch64: 112 },
    rule: EPERM,
    why: "the clock is not namespaced",
  },
  { name: "adjtimex", nr: { x86_64: 159, aarch64: 171 }, rule: EPERM, why: "the clock is not namespaced" },
  {
    name: "clock_adjtime",
    nr: { x86_64: 305, aarch64: 266 },
    rule: EPERM,
    why: "the clock is not namespaced",
  },
  { name: "sethostname", nr: { x86_64: 170, aarch64: 161 }, rule: EPERM, why: "the box's name is fixed" },
  { name: "setdomainname", nr: { x86_64: 171, aarch64: 162 }, rule: EPERM, why: "the box's name is fixed" },
  {
    name: "syslog",
    nr: { x86_64: 103, aarch64: 116 },
    rule: EPERM,
    why: "the kernel log leaks host addresses",
  },
  {
    name: "name_to_handle_at",
    nr: { x86_64: 303, aarch64: 264 },
    rule: EPERM,
    why: "file handles reach outside bind mounts",
  },
  {
    name: "open_by_handle_at",
    nr: { x86_64: 304, aarch64: 265 },
    rule: EPERM,
    why: "file handles reach outside bind mounts",
  },
  {
    name: "fanotify_init",
    nr: { x86_64: 300, aarch64: 262 },
    rule: EPERM,
    why: "watches the whole filesystem",
  },
  { name: "lookup_dcookie", nr: { x86_64: 212, aarch64: 18 }, rule: EPERM, why: "kernel profiling" },
  { name: "vhangup", nr: { x86_64: 153, aarch64: 58 }, rule: EPERM, why: "terminal hijacking" },
  { name: "iopl", nr: { x86_64: 172 }, rule: EPERM, why: "raw port I/O" },
  { name: "ioperm", nr: { x86_64: 173 }, rule: EPERM, why: "raw port I/O" },
  { name: "uselib", nr: { x86_64: 134 }, rule: EPERM, why: "obsolete loader entry point" },
  { name: "_sysctl", nr: { x86_64: 156 }, rule: EPERM, why: "obsolete" },
  { name: "nfsservctl", nr: { x86_64: 180, aarch64: 42 }, rule: EPERM, why: "obsolete" },
  { name: "get_kernel_syms", nr: { x86_64: 177 }, rule: EPERM, why: "obsolete" },
  { name: "query_module", nr: { x86_64: 178 }, rule: EPERM, why: "obsolete" },
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
