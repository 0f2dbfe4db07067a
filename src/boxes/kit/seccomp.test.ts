import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  AF_INET,
  AF_INET6,
  AF_NETLINK,
  AF_UNIX,
  AUDIT_ARCH,
  BPF,
  CLONE_NEWNS,
  CLONE_NEWUSER,
  SECCOMP_DENY,
  SECCOMP_RET,
  SOCKET_FAMILIES,
  TIOCLINUX,
  TIOCSTI,
  encodeProgram,
  seccompProgram,
  type BpfInstruction,
  type SeccompArch,
} from "./seccomp.js";

/** A small interpreter for the instructions the generator emits. */
function run(program: BpfInstruction[], data: { arch: number; nr: number; args?: bigint[] }): number {
  const mem = Buffer.alloc(64);
  mem.writeInt32LE(data.nr, 0);
  mem.writeUInt32LE(data.arch, 4);
  (data.args ?? []).forEach((a, i) => mem.writeBigUInt64LE(BigInt.asUintN(64, a), 16 + 8 * i));
  let acc = 0;
  let pc = 0;
  for (let steps = 0; steps < 10_000; steps++) {
    const ins = program[pc];
    assert.ok(ins, `pc ${pc} out of program`);
    switch (ins.code) {
      case BPF.LD_W_ABS:
        acc = mem.readUInt32LE(ins.k);
        pc++;
        break;
      case BPF.JEQ_K:
        pc += 1 + (acc === ins.k ? ins.jt : ins.jf);
        break;
      case BPF.JGE_K:
        pc += 1 + (acc >= ins.k ? ins.jt : ins.jf);
        break;
      case BPF.JSET_K:
        pc += 1 + ((acc & ins.k) >>> 0 !== 0 ? ins.jt : ins.jf);
        break;
      case BPF.RET_K:
        return ins.k;
      default:
        assert.fail(`unknown opcode ${ins.code}`);
    }
  }
  assert.fail("program did not return");
}

const EPERM = SECCOMP_RET.ERRNO | 1;
const ENOSYS = SECCOMP_RET.ERRNO | 38;

function nr(name: string, arch: SeccompArch): number {
  const n = SECCOMP_DENY.find((e) => e.name === name)?.nr[arch];
  assert.ok(n !== undefined, `${name} has no number on ${arch}`);
  return n;
}

for (const arch of ["x86_64", "aarch64"] as const) {
  describe(`seccomp program (${arch})`, () => {
    const prog = seccompProgram(arch);
    const call = (n: number, args?: bigint[]): number => run(prog, { arch: AUDIT_ARCH[arch], nr: n, args });

    it("kills a process calling with another architecture", () => {
      const other = arch === "x86_64" ? AUDIT_ARCH.aarch64 : AUDIT_ARCH.x86_64;
      assert.equal(run(prog, { arch: other, nr: 0 }), SECCOMP_RET.KILL_PROCESS);
      assert.equal(run(prog, { arch: 0x40000003, nr: 0 }), SECCOMP_RET.KILL_PROCESS);
    });

    it("refuses every plain entry of the list with its errno", () => {
      for (const e of SECCOMP_DENY) {
        const n = e.nr[arch];
        if (n === undefined || e.rule.kind !== "errno") continue;
        assert.equal(call(n), e.rule.errno === "EPERM" ? EPERM : ENOSYS, e.name);
      }
    });

    it("allows ordinary calls", () => {
      const ordinary =
        arch === "x86_64"
          ? [0, 1, 2, 3, 9, 57, 59, 60, 61, 231, 257, 435 - 1]
          : [63, 64, 56, 57, 93, 94, 221, 260];
      for (const n of ordinary) assert.equal(call(n), SECCOMP_RET.ALLOW, `syscall ${n}`);
    });

    it("allows clone for fork and threads, refuses namespace flags, clone3 gets ENOSYS", () => {
      const clone = nr("clone", arch);
      assert.equal(call(clone, [0x01200011n]), SECCOMP_RET.ALLOW); // fork-like (SIGCHLD|CHILD_SETTID|CLEARTID)
      assert.equal(call(clone, [0x003d0f00n]), SECCOMP_RET.ALLOW); // pthread_create flags
      assert.equal(call(clone, [BigInt(CLONE_NEWUSER)]), EPERM);
      assert.equal(call(clone, [BigInt(CLONE_NEWNS | 0x11)]), EPERM);
      assert.equal(call(nr("clone3", arch)), ENOSYS);
    });

    it("refuses unshare with namespace flags, allows unshare of files", () => {
      const unshare = nr("unshare", arch);
      assert.equal(call(unshare, [BigInt(CLONE_NEWUSER)]), EPERM);
      assert.equal(call(unshare, [BigInt(CLONE_NEWNS)]), EPERM);
      assert.equal(call(unshare, [0x400n]), SECCOMP_RET.ALLOW); // CLONE_FILES
    });

    it("refuses TIOCSTI and TIOCLINUX whatever the high bits, allows other ioctls", () => {
      const ioctl = nr("ioctl", arch);
      assert.equal(call(ioctl, [1n, BigInt(TIOCSTI)]), EPERM);
      assert.equal(call(ioctl, [1n, BigInt(TIOCLINUX)]), EPERM);
      assert.equal(call(ioctl, [1n, (1n << 32n) | BigInt(TIOCSTI)]), EPERM);
      assert.equal(call(ioctl, [1n, 0x5401n]), SECCOMP_RET.ALLOW); // TCGETS
      assert.equal(call(ioctl, [1n, 0x541bn]), SECCOMP_RET.ALLOW); // FIONREAD
    });

    it("allows only unix, inet, inet6 and routing netlink sockets; the rest get EAFNOSUPPORT", () => {
      const socket = nr("socket", arch);
      const EAFNOSUPPORT = SECCOMP_RET.ERRNO | 97;
      const SOCK_STREAM = 1n;
      const SOCK_DGRAM = 2n;
      for (const family of [AF_UNIX, AF_INET, AF_INET6])
        assert.equal(call(socket, [BigInt(family), SOCK_STREAM, 0n]), SECCOMP_RET.ALLOW, `family ${family}`);
      assert.equal(call(socket, [BigInt(AF_NETLINK), SOCK_DGRAM, 0n]), SECCOMP_RET.ALLOW, "NETLINK_ROUTE");
      // netlink protocols other than routing: audit (9), netfilter (12), kobject uevent (15), generic (16)
      for (const protocol of [9n, 12n, 15n, 16n, 4n])
        assert.equal(
          call(socket, [BigInt(AF_NETLINK), SOCK_DGRAM, protocol]),
          EAFNOSUPPORT,
          `netlink ${protocol}`,
        );
      // vsock 40, packet 17, alg 38, bluetooth 31, key 15, xdp 44, can 29, tipc 30, rds 21, appletalk 5
      for (const family of [40n, 17n, 38n, 31n, 15n, 44n, 29n, 30n, 21n, 5n, 0n, 255n])
        assert.equal(call(socket, [family, SOCK_STREAM, 0n]), EAFNOSUPPORT, `family ${family}`);
      // the family is an int: high bits do not make vsock look like unix, nor unix like vsock
      assert.equal(call(socket, [(1n << 32n) | 40n, SOCK_STREAM, 0n]), EAFNOSUPPORT);
      assert.equal(call(socket, [(1n << 32n) | BigInt(AF_UNIX), SOCK_STREAM, 0n]), SECCOMP_RET.ALLOW);
      const socketpair = nr("socketpair", arch);
      assert.equal(call(socketpair, [BigInt(AF_UNIX), SOCK_STREAM, 0n]), SECCOMP_RET.ALLOW);
      for (const family of [AF_INET, AF_INET6, AF_NETLINK, 40])
        assert.equal(call(socketpair, [BigInt(family), SOCK_STREAM, 0n]), EAFNOSUPPORT, `pair ${family}`);
      assert.deepEqual(
        SOCKET_FAMILIES.map((f) => f.name),
        ["AF_UNIX", "AF_INET", "AF_INET6", "AF_NETLINK"],
      );
    });

    it("names every call the design asks for", () => {
      const names = new Set(SECCOMP_DENY.map((e) => e.name));
      for (const n of [
        "ptrace",
        "process_vm_readv",
        "process_vm_writev",
        "mount",
        "umount2",
        "pivot_root",
        "move_mount",
        "open_tree",
        "fsopen",
        "fsmount",
        "fsconfig",
        "fspick",
        "mount_setattr",
        "unshare",
        "clone",
        "clone3",
        "setns",
        "bpf",
        "perf_event_open",
        "userfaultfd",
        "io_uring_setup",
        "io_uring_enter",
        "io_uring_register",
        "keyctl",
        "add_key",
        "request_key",
        "init_module",
        "finit_module",
        "delete_module",
        "kexec_load",
        "kexec_file_load",
        "ioctl",
        "reboot",
        "swapon",
        "swapoff",
        "acct",
        "quotactl",
      ])
        assert.ok(names.has(n), n);
    });
  });
}

describe("seccomp program on x86_64 only", () => {
  it("refuses x32 system calls", () => {
    const prog = seccompProgram("x86_64");
    assert.equal(run(prog, { arch: AUDIT_ARCH.x86_64, nr: 0x40000000 + 1 }), EPERM);
  });

  it("encodes struct sock_filter as 8 bytes each", () => {
    const prog = seccompProgram("x86_64");
    const buf = encodeProgram(prog);
    assert.equal(buf.length, prog.length * 8);
    assert.equal(buf.readUInt16LE(0), BPF.LD_W_ABS);
    assert.equal(buf.readUInt32LE(4), 4);
  });

  it("has no duplicate numbers per architecture", () => {
    for (const arch of ["x86_64", "aarch64"] as const) {
      const seen = new Set<number>();
      for (const e of SECCOMP_DENY) {
        const n = e.nr[arch];
        if (n === undefined) continue;
        assert.ok(!seen.has(n), `${arch} ${e.name} ${n}`);
        seen.add(n);
      }
    }
  });
});
