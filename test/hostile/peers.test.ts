// Escape cases by category: each test names a way out that sandboxes of this kind are
// commonly tested against (docs/boxes.md, "Escape cases", says which) and checks that
// warren refuses it with the specific error, or, where warren does not stop it today,
// says so in a comment marked KNOWN GAP and asserts today's behaviour.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import crypto from "node:crypto";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { boxSkipReason, makeBox, type TestBox } from "../box/fixture.js";
import { startTestServer, type TestServer } from "../support/server.js";

const skip = boxSkipReason();

/** Python prelude: `attempt(name, fn)` prints name=OK[ value] or name=<errno name>. */
const PRELUDE = `
import ctypes, errno, os, socket, sys, time
def attempt(name, fn):
    try:
        r = fn()
        print(name + "=OK" + ("" if r is None else " " + str(r)))
    except OSError as e:
        print(name + "=" + errno.errorcode.get(e.errno, str(e.errno)))
    sys.stdout.flush()
libc = ctypes.CDLL(None, use_errno=True)
def checked(rc):
    if rc < 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))
    return rc
`;

/** name=value lines into a record (the value is everything after the first "="). */
function results(out: string): Record<string, string> {
  const r: Record<string, string> = {};
  for (const line of out.trim().split("\n")) {
    const at = line.indexOf("=");
    if (at > 0) r[line.slice(0, at)] = line.slice(at + 1);
  }
  return r;
}

async function py(box: TestBox, script: string, opts: { agent?: number; timeoutMs?: number } = {}) {
  const r = await box.run(["python3", "-c", PRELUDE + script], opts);
  assert.equal(r.exitCode, 0, r.out + r.err);
  return results(r.out);
}

describe("escape cases in a box", { skip: skip ?? false }, () => {
  let box: TestBox;

  before(async () => {
    box = await makeBox({ agents: 2 });
  });
  after(async () => {
    await box?.cleanup();
  });

  it("setuid and file capabilities: a setuid copy in the home gains nothing, capabilities cannot be set", async () => {
    const r = await py(
      box,
      `
import shutil, stat
shutil.copy("/usr/bin/id", "rootid")
attempt("chmod_suid", lambda: os.chmod("rootid", 0o4755))
attempt("mode", lambda: oct(os.stat("rootid").st_mode & 0o7777))
# a file capability (VFS_CAP_REVISION_2, cap_setuid effective and permitted)
cap = bytes([0, 0, 0, 2, 128, 0, 0, 0, 128, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0])
attempt("setcap", lambda: os.setxattr("rootid", "security.capability", cap))
attempt("chown_root", lambda: os.chown("rootid", 0, 0))
import subprocess
attempt("euid", lambda: subprocess.run(["./rootid", "-u"], capture_output=True, text=True).stdout.strip())
`,
    );
    // The owner may set the bit on its own file; nothing honours it: /home is mounted
    // nosuid, and every command runs with no_new_privs.
    assert.equal(r.chmod_suid, "OK");
    assert.equal(r.mode, "OK 0o4755");
    assert.equal(r.setcap, "EPERM");
    assert.equal(r.chown_root, "EPERM");
    assert.equal(r.euid, `OK ${box.agents[0]!.uid}`);
  });

  it("read-only system folders: their files, metadata and names cannot change", async () => {
    const r = await py(
      box,
      `
for label, p in [("usr", "/usr/bin/env"), ("etc", "/etc/passwd"), ("data", "/data/readme.txt")]:
    attempt(label + "_append", lambda: open(p, "a").write("x"))
    attempt(label + "_truncate", lambda: os.truncate(p, 0))
    attempt(label + "_chmod", lambda: os.chmod(p, 0o777))
    attempt(label + "_utime", lambda: os.utime(p, (0, 0)))
    attempt(label + "_rename", lambda: os.rename(p, p + ".x"))
    attempt(label + "_unlink", lambda: os.unlink(p))
`,
    );
    // Opening for writing fails on the file's mode first (root's, 0644); every change of
    // metadata or names fails on the read-only mount whatever the modes.
    for (const where of ["usr", "etc", "data"]) {
      for (const op of ["append", "truncate"])
        assert.equal(r[`${where}_${op}`], "EACCES", `${where} ${op}: ${JSON.stringify(r)}`);
      for (const op of ["chmod", "utime", "rename", "unlink"])
        assert.equal(r[`${where}_${op}`], "EROFS", `${where} ${op}: ${JSON.stringify(r)}`);
    }
    assert.equal(fs.readFileSync(path.join(box.stateRoot, "data", "readme.txt"), "utf8"), "reference data\n");
  });

  it("symlinks and hard links: a write through a link obeys the box, not the link", async () => {
    const victim = path.join(box.agents[1]!.hostHome, "notes");
    fs.writeFileSync(victim, "agent 2's notes\n", { mode: 0o600 });
    fs.chownSync(victim, box.agents[1]!.uid, box.agents[1]!.gid);
    const r = await py(
      box,
      `
os.symlink("/etc/passwd", "to-etc")
os.symlink("/home/a2/notes", "to-other")
os.symlink("/usr/bin", "to-usr")
attempt("write_etc", lambda: open("to-etc", "w").write("x"))
attempt("write_other", lambda: open("to-other", "w").write("x"))
attempt("create_in_usr", lambda: open("to-usr/planted", "w").write("x"))
attempt("hard_other", lambda: os.link("/home/a2/notes", "hard"))
attempt("hard_usr", lambda: os.link("/usr/bin/env", "hard2"))
`,
    );
    assert.equal(r.write_etc, "EROFS");
    assert.equal(r.write_other, "EACCES");
    assert.equal(r.create_in_usr, "EROFS");
    assert.equal(r.hard_other, "EACCES");
    assert.equal(r.hard_usr, "EXDEV");
    assert.equal(fs.readFileSync(victim, "utf8"), "agent 2's notes\n");
    assert.equal(fs.existsSync("/usr/bin/planted"), false);
  });

  it("/proc: boxd's, init's and another agent's cwd, root, environment, memory and descriptors are closed; /proc/sys refuses writes", async () => {
    const stop = new AbortController();
    const victim = box
      .client()
      .exec(
        {
          argv: ["/bin/sh", "-c", "cd /home/a2 && exec sleep 30"],
          env: { SECRET: "agent 2's environment" },
          cwd: "/",
          uid: box.agents[1]!.uid,
          gid: box.agents[1]!.gid,
          timeoutMs: 30_000,
        },
        { signal: stop.signal },
      )
      .catch(() => null);
    try {
      const r = await py(
        box,
        `
victim = None
for _ in range(100):
    for p in os.listdir("/proc"):
        if p.isdigit():
            try:
                st = open("/proc/%s/status" % p).read()
            except OSError:
                continue
            if "\\nUid:\\t${box.agents[1]!.uid}\\t" in st and "Name:\\tsleep" in st:
                victim = p
    if victim: break
    time.sleep(0.05)
print("victim=" + str(victim))
for who, pid in [("boxd", "2"), ("init", "1"), ("other", victim)]:
    attempt(who + "_cwd", lambda: os.readlink("/proc/%s/cwd" % pid))
    attempt(who + "_root", lambda: os.readlink("/proc/%s/root" % pid))
    attempt(who + "_environ", lambda: open("/proc/%s/environ" % pid).read())
    attempt(who + "_mem", lambda: open("/proc/%s/mem" % pid, "rb").read(1))
    attempt(who + "_fd", lambda: os.listdir("/proc/%s/fd" % pid))
attempt("self_root", lambda: os.readlink("/proc/self/root"))
attempt("self_root_work", lambda: os.listdir("/proc/self/root/work"))
attempt("sys_hostname", lambda: open("/proc/sys/kernel/hostname", "w").write("x"))
attempt("sys_core_pattern", lambda: open("/proc/sys/kernel/core_pattern", "w").write("|/tmp/x"))
attempt("sys_drop_caches", lambda: open("/proc/sys/vm/drop_caches", "w").write("3"))
attempt("sysrq", lambda: open("/proc/sysrq-trigger", "w").write("b"))
`,
      );
      assert.match(r.victim ?? "", /^\d+$/, JSON.stringify(r));
      for (const who of ["boxd", "init", "other"])
        for (const what of ["cwd", "root", "environ", "mem", "fd"])
          assert.equal(r[`${who}_${what}`], "EACCES", `${who} ${what}: ${JSON.stringify(r)}`);
      assert.equal(r.self_root, "OK /");
      assert.equal(r.self_root_work, "ENOENT");
      // /proc/sys is not remounted read-only in the box; its files belong to the host's
      // root, whom no process of the box is.
      for (const name of ["sys_hostname", "sys_core_pattern", "sys_drop_caches"])
        assert.equal(r[name], "EACCES", name);
      assert.equal(r.sysrq, "ENOENT");
      assert.equal(fs.readFileSync("/proc/sys/kernel/core_pattern", "utf8").startsWith("|/tmp/x"), false);
    } finally {
      stop.abort();
      await victim;
    }
  });

  it("what the box tells of the host: its own pids only, no kernel addresses, no routes, no /sys", async () => {
    const r = await box.sh(
      [
        "echo pid1=$(cat /proc/1/comm)",
        "echo pids=$(ls /proc | grep -c '^[0-9]')",
        "echo kallsyms=$(head -1000 /proc/kallsyms | cut -d' ' -f1 | sort -u | tr '\\n' ,)",
        "echo routes=$(tail -n +2 /proc/net/route | wc -l)",
        "echo v6routes=$(grep -vc ' lo$' /proc/net/ipv6_route)",
        "echo sys=$(test -e /sys && echo yes || echo no)",
        "echo uname=$(uname -n)",
        "echo mounts=$(grep -c ' /home ' /proc/self/mountinfo)",
        "echo homesrc=$(awk '$5 == \"/home\" {print $4}' /proc/self/mountinfo)",
      ].join("; "),
    );
    const got = results(r.out);
    assert.equal(got.pid1, "bwrap");
    assert.ok(Number(got.pids) < 20, `the box sees ${got.pids} processes`);
    assert.equal(got.kallsyms, "0000000000000000,", "kernel addresses are hidden from agents");
    assert.equal(got.routes, "0");
    assert.equal(got.v6routes, "0");
    assert.equal(got.sys, "no");
    assert.equal(got.uname, "box");
    // KNOWN GAP (information only): /proc/self/mountinfo names the host paths of the
    // box's binds (the state root, the machine's folder, the native binaries' folder).
    // It reveals where things are on the host, not a way to reach them.
    assert.equal(got.homesrc, box.machineDir);
  });

  it("ptrace and process_vm_readv are refused even on the agent's own child", async () => {
    const r = await py(
      box,
      `
import signal
child = os.fork()
if child == 0:
    time.sleep(5)
    os._exit(0)
PTRACE_ATTACH, PTRACE_SEIZE = 16, 0x4206
attempt("attach_child", lambda: checked(libc.ptrace(PTRACE_ATTACH, child, 0, 0)))
attempt("seize_child", lambda: checked(libc.ptrace(PTRACE_SEIZE, child, 0, 0)))
class iovec(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]
buf = ctypes.create_string_buffer(8)
local = iovec(ctypes.cast(buf, ctypes.c_void_p).value, 8)
remote = iovec(ctypes.cast(buf, ctypes.c_void_p).value, 8)
attempt("vm_readv_child", lambda: checked(libc.process_vm_readv(child, ctypes.byref(local), 1, ctypes.byref(remote), 1, 0)))
attempt("child_mem", lambda: len(open("/proc/%d/mem" % child, "rb").read(0)))
os.kill(child, signal.SIGKILL)
os.waitpid(child, 0)
`,
    );
    assert.equal(r.attach_child, "EPERM");
    assert.equal(r.seize_child, "EPERM");
    assert.equal(r.vm_readv_child, "EPERM");
    // Opening one's own child's memory file is allowed by the kernel (same uid); reading
    // or writing through it needs the same access ptrace would, which the filter's
    // refusal of ptrace does not cover: the agent's own processes are its own.
    assert.equal(r.child_mem, "OK 0");
  });

  it("the clock: cannot be set or slewed", async () => {
    const r = await py(
      box,
      `
class timespec(ctypes.Structure):
    _fields_ = [("s", ctypes.c_long), ("ns", ctypes.c_long)]
class timeval(ctypes.Structure):
    _fields_ = [("s", ctypes.c_long), ("us", ctypes.c_long)]
attempt("clock_settime", lambda: checked(libc.clock_settime(0, ctypes.byref(timespec(0, 0)))))
attempt("settimeofday", lambda: checked(libc.settimeofday(ctypes.byref(timeval(0, 0)), None)))
buf = ctypes.create_string_buffer(512)
ctypes.memmove(buf, (ctypes.c_uint * 1)(1), 4)  # ADJ_OFFSET
attempt("adjtimex", lambda: checked(libc.adjtimex(buf)))
`,
    );
    assert.equal(r.clock_settime, "EPERM");
    assert.equal(r.settimeofday, "EPERM");
    assert.equal(r.adjtimex, "EPERM");
    assert.ok(Math.abs(Date.now() - new Date().getTime()) < 1000);
  });

  it("core dumps are off, and stay off", async () => {
    const r = await box.sh(
      "echo soft=$(ulimit -Sc) hard=$(ulimit -Hc); (ulimit -c unlimited) 2>/dev/null; echo raise=$?; " +
        "python3 -c 'import os; os.abort()'; echo crashed=$?; ls core* 2>/dev/null | wc -l",
    );
    assert.match(r.out, /soft=0 hard=0/);
    assert.match(r.out, /raise=[1-9]/);
    assert.match(r.out, /crashed=134/);
    assert.match(r.out, /\n0\n$/);
  });

  it("the shared /tmp: the sticky bit and modes keep agents' files apart; a planted symlink depends on the host", async () => {
    const other = { agent: 1 };
    const setup = await py(
      box,
      `
os.umask(0o022)
open("/tmp/a2-private", "w").write("private")
os.chmod("/tmp/a2-private", 0o600)
open("/tmp/a2-public", "w").write("public")
open("/home/a2/victim", "w").write("untouched")
`,
      other,
    );
    assert.deepEqual(setup, {});
    const r = await py(
      box,
      `
attempt("read_private", lambda: open("/tmp/a2-private").read())
attempt("read_public", lambda: open("/tmp/a2-public").read())
attempt("write_public", lambda: open("/tmp/a2-public", "a").write("x"))
attempt("unlink_public", lambda: os.unlink("/tmp/a2-public"))
attempt("replace_public", lambda: (open("/tmp/mine", "w").write("m"), os.rename("/tmp/mine", "/tmp/a2-public")))
attempt("plant", lambda: os.symlink("/home/a2/victim", "/tmp/trap"))
`,
    );
    assert.equal(r.read_private, "EACCES");
    // Readable by mode, as on any shared Unix /tmp: an agent that wants privacy there sets
    // its modes (or uses its home, which is 0700).
    assert.equal(r.read_public, "OK public");
    assert.equal(r.write_public, "EACCES");
    assert.equal(r.unlink_public, "EPERM");
    assert.equal(r.replace_public, "EPERM");
    assert.equal(r.plant, "OK");
    // Agent 2 now writes to the name agent 1 planted.
    const follow = await py(
      box,
      `attempt("write_trap", lambda: open("/tmp/trap", "w").write("clobbered"))`,
      other,
    );
    const victim = fs.readFileSync(path.join(box.agents[1]!.hostHome, "victim"), "utf8");
    if (fs.readFileSync("/proc/sys/fs/protected_symlinks", "utf8").trim() === "1") {
      assert.equal(follow.write_trap, "EACCES");
      assert.equal(victim, "untouched");
    } else {
      // KNOWN GAP: fs.protected_symlinks is the host's setting (the kernel's, not the
      // box's); with it off, a symlink one agent plants in the shared /tmp is followed by
      // another agent's write, so an agent can make another clobber its own files through
      // a predictable /tmp name. The host should set fs.protected_symlinks=1.
      assert.equal(follow.write_trap, "OK 9");
      assert.equal(victim, "clobbered");
    }
  });

  it("resources: /tmp fills to its cap with ENOSPC, descriptors and inotify instances end in EMFILE; boxd answers throughout", async () => {
    const before = await box.client().ping();
    const filler = py(
      box,
      `
import resource
def fill():
    with open("/tmp/fill", "wb") as f:
        for _ in range(200):
            f.write(b"\\0" * (1 << 20))
            f.flush()
attempt("fill_tmp", fill)
os.unlink("/tmp/fill")
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
class rlimit(ctypes.Structure):
    _fields_ = [("cur", ctypes.c_ulong), ("max", ctypes.c_ulong)]
attempt("raise_nofile", lambda: checked(libc.setrlimit(resource.RLIMIT_NOFILE, ctypes.byref(rlimit(hard + 1, hard + 1)))))
fds = []
def descriptors():
    while True:
        fds.append(os.open("/dev/null", os.O_RDONLY))
attempt("descriptors", descriptors)
print("opened=%d hard=%d" % (len(fds), hard))
for fd in fds: os.close(fd)
ino = []
def inotify():
    while len(ino) < 100000:
        ino.append(checked(libc.inotify_init1(0)))
attempt("inotify", inotify)
print("inotify_count=%d" % len(ino))
time.sleep(1)
`,
      { timeoutMs: 60_000 },
    );
    await new Promise((r) => setTimeout(r, 700));
    const during = await box.client().ping();
    const r = await filler;
    assert.equal(r.fill_tmp, "ENOSPC");
    assert.equal(r.raise_nofile, "EPERM", JSON.stringify(r));
    assert.equal(r.descriptors, "EMFILE");
    assert.ok(Number(/^(\d+) hard=(\d+)$/.exec(r.opened ?? "")?.[1]) > 0, r.opened);
    assert.equal(r.inotify, "EMFILE");
    assert.ok(Number(r.inotify_count) < 100000, r.inotify_count);
    assert.equal(during.pid, before.pid);
    assert.equal((await box.sh("test -e /tmp/fill || echo freed")).out, "freed\n");
    assert.equal((await box.client().ping()).pid, before.pid);
  });

  it("the metadata address, link-local, IPv6 link-local and the host's own addresses are unreachable; raw and ICMP sockets are refused", async () => {
    const hostAddrs = Object.values(os.networkInterfaces())
      .flat()
      .filter((a): a is os.NetworkInterfaceInfo => !!a && !a.internal && !a.address.startsWith("fe80"))
      .map((a) => a.address);
    const gateway = fs
      .readFileSync("/proc/net/route", "utf8")
      .trim()
      .split("\n")
      .slice(1)
      .map((l) => l.split("\t"))
      .filter((f) => f[1] === "00000000" && f[2] !== "00000000")
      .map((f) => Buffer.from(f[2]!, "hex").reverse().join("."));
    const targets = [...new Set([...hostAddrs, ...gateway])];
    const t0 = Date.now();
    const r = await py(
      box,
      `
def tcp(host, family=socket.AF_INET, scope=0):
    s = socket.socket(family)
    s.settimeout(5)
    s.connect((host, 80) if family == socket.AF_INET else (host, 80, 0, scope))
def udp(host, port):
    socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b"x", (host, port))
attempt("metadata", lambda: tcp("169.254.169.254"))
attempt("metadata_udp", lambda: udp("169.254.169.254", 80))
attempt("link_local", lambda: tcp("169.254.0.1"))
attempt("metadata_v6", lambda: tcp("fd00:ec2::254", socket.AF_INET6))
attempt("v4_mapped", lambda: tcp("::ffff:169.254.169.254", socket.AF_INET6))
attempt("v6_link_local", lambda: tcp("fe80::1", socket.AF_INET6, 1))
attempt("dns_udp", lambda: udp("8.8.8.8", 53))
attempt("broadcast", lambda: udp("255.255.255.255", 67))
attempt("raw", lambda: socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP))
attempt("icmp_dgram", lambda: socket.socket(socket.AF_INET, socket.SOCK_DGRAM, socket.IPPROTO_ICMP))
for i, host in enumerate(${JSON.stringify(targets)}):
    attempt("host_%d" % i, lambda: tcp(host, socket.AF_INET6 if ":" in host else socket.AF_INET))
`,
    );
    for (const name of [
      "metadata",
      "metadata_udp",
      "link_local",
      "metadata_v6",
      "v4_mapped",
      "v6_link_local",
      "dns_udp",
      "broadcast",
    ])
      assert.equal(r[name], "ENETUNREACH", `${name}: ${JSON.stringify(r)}`);
    assert.equal(r.raw, "EPERM");
    assert.equal(r.icmp_dgram, "EACCES");
    targets.forEach((host, i) => assert.equal(r[`host_${i}`], "ENETUNREACH", `host address ${host}`));
    // refused at once by routing, not after a timeout
    assert.ok(Date.now() - t0 < 5000, `took ${Date.now() - t0} ms`);
  });

  it("the host's loopback is not the box's: a server on the host's 127.0.0.1 is not reached", async () => {
    const server = net.createServer((c) => c.end("host loopback\n")).listen(0, "127.0.0.1");
    await new Promise((r) => server.once("listening", r));
    const port = (server.address() as net.AddressInfo).port;
    try {
      const r = await py(
        box,
        `attempt("host_loopback", lambda: socket.create_connection(("127.0.0.1", ${port}), timeout=3).recv(100))`,
      );
      assert.equal(r.host_loopback, "ECONNREFUSED");
    } finally {
      await new Promise((r) => server.close(r));
    }
  });

  it("fail closed: with its filter program unreadable as a program, no command runs", async () => {
    const file = path.join(box.stateRoot, "run", "box-files", "seccomp.bpf");
    const good = fs.readFileSync(file);
    try {
      // The box reads the host's file through a bind of the same inode: rewrite it in place.
      for (const [bytes, why] of [
        [Buffer.alloc(0), /is not a filter program/],
        [Buffer.from("12345"), /is not a filter program/],
        [Buffer.from([0xff, 0xff, 0, 0, 0, 0, 0, 0]), /load: Invalid argument/],
      ] as const) {
        fs.writeFileSync(file, bytes);
        const r = await box.sh("echo ran");
        assert.equal(r.exitCode, 126, r.err);
        assert.equal(r.out, "");
        assert.match(r.err, /^boxd-spawn: seccomp: /);
        assert.match(r.err, why);
      }
    } finally {
      fs.writeFileSync(file, good);
    }
    assert.equal((await box.sh("echo ran")).out, "ran\n");
  });

  it("boxd's own filter, as the box was given it, refuses vsock and the other families", async () => {
    const bin = path.join(os.tmpdir(), `warren-filter-${process.pid}`);
    execFileSync("gcc", ["-O1", "-o", bin, path.join(import.meta.dirname, "filter.c")]);
    try {
      const program = path.join(box.stateRoot, "run", "box-files", "boxd-seccomp.bpf");
      const got = results(execFileSync(bin, [program], { encoding: "utf8" }));
      assert.equal(got.vsock, "EAFNOSUPPORT");
      assert.equal(got.packet, "EAFNOSUPPORT");
      assert.equal(got.netlink_audit, "EAFNOSUPPORT");
      assert.equal(got.inet, "OK");
      assert.equal(got.inet6, "OK");
      assert.equal(got.unix, "OK");
    } finally {
      fs.rmSync(bin, { force: true });
    }
  });
});

describe("escape cases on a trust: shared machine", { skip: skip ?? false }, () => {
  it("a setuid file in one agent's home runs as the agent who runs it", async () => {
    const box = await makeBox({ trust: "shared" });
    try {
      const made = await box.sh("cp /usr/bin/id ~/asme && chmod 4755 ~/asme && stat -c %a ~/asme");
      assert.equal(made.out.trim(), "4755", made.err);
      const r = await box.run(["/home/a1/asme", "-u"], { agent: 1 });
      assert.equal(r.exitCode, 0, r.err);
      assert.equal(r.out.trim(), String(box.agents[1]!.uid));
    } finally {
      await box.cleanup();
    }
  });
});

describe("escape cases through the API", { skip: skip ?? false }, () => {
  let t: TestServer;
  let org: { id: string };
  const canary = `warren-canary-${crypto.randomBytes(8).toString("hex")}`;

  before(async () => {
    process.env.WARREN_ESCAPE_CANARY = canary;
    t = await startTestServer();
    org = (await t.call("POST", "/api/orgs", { name: "escape" })).body;
  });
  after(async () => {
    delete process.env.WARREN_ESCAPE_CANARY;
    await t?.close();
  });

  interface Agent {
    id: string;
    ports: { first: number; last: number };
  }
  const exec = async (agent: Agent, body: Record<string, unknown>) => {
    const r = await t.call("POST", `/api/agents/${agent.id}/exec`, { timeout_ms: 20_000, ...body });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    return r.body as { stdout: string; stderr: string; exit_code: number };
  };
  async function machine(name: string, agents: string[]) {
    const m = (await t.call("POST", "/api/machines", { org_id: org.id, name, memory_mib: 512 })).body as {
      id: string;
    };
    const list: Agent[] = [];
    for (const a of agents)
      list.push((await t.call("POST", "/api/agents", { org_id: org.id, machine_id: m.id, name: a })).body);
    return { m, agents: list };
  }

  it("environment: a command sees warren's variables and its caller's, nothing of the server's", async () => {
    const { m, agents } = await machine("env", ["a"]);
    try {
      const r = await exec(agents[0]!, { argv: ["/usr/bin/env"] });
      assert.equal(r.exit_code, 0, r.stderr);
      const names = r.stdout
        .trim()
        .split("\n")
        .map((l) => l.slice(0, l.indexOf("=")))
        .sort();
      assert.deepEqual(names, [
        "ALL_PROXY",
        // git's include of the runtime folder's gitconfig (a GitHub App's credential helper)
        "GIT_CONFIG_COUNT",
        "GIT_CONFIG_KEY_0",
        "GIT_CONFIG_VALUE_0",
        "HOME",
        "HTTPS_PROXY",
        "HTTP_PROXY",
        "LANG",
        "NO_PROXY",
        "PATH",
        "PORT",
        "TMPDIR",
        "WARREN_AGENT_HOME",
        "WARREN_AGENT_ID",
        "WARREN_PORTS",
        "all_proxy",
        "http_proxy",
        "https_proxy",
        "no_proxy",
      ]);
      assert.equal(r.stdout.includes(canary), false);
      // and git's variables name only the agent's own runtime folder
      assert.match(r.stdout, new RegExp(`^GIT_CONFIG_VALUE_0=/run/warren/${agents[0]!.id}/gitconfig$`, "m"));
      const procs = await exec(agents[0]!, {
        command:
          "cat /proc/1/environ /proc/2/environ 2>&1; grep -l WARREN_ESCAPE /proc/*/environ 2>/dev/null; true",
      });
      assert.equal(procs.stdout.includes(canary), false);
      assert.match(procs.stdout, /Permission denied/);
    } finally {
      await t.call("POST", `/api/machines/${m.id}/stop`);
    }
  });

  it("isolated: UDP to another agent's port is not stopped (known gap), TCP is", async () => {
    const { m, agents } = await machine("udp", ["a", "b"]);
    const [a, b] = agents as [Agent, Agent];
    try {
      // b answers UDP and TCP on the first port of its block for 20 s
      await exec(b, {
        command: 'setsid python3 -c "$SERVER" >/dev/null 2>&1 < /dev/null &',
        env: {
          SERVER: `
import os, socket, threading, time
port = int(os.environ["PORT"])
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); u.bind(("127.0.0.1", port))
t = socket.socket(); t.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); t.bind(("127.0.0.1", port)); t.listen()
def udp():
    while True:
        d, peer = u.recvfrom(100); u.sendto(b"udp secret of b", peer)
threading.Thread(target=udp, daemon=True).start()
open("/tmp/udp-ready", "w").write("1")
time.sleep(20)
`,
        },
      });
      const r = await exec(a, {
        argv: [
          "python3",
          "-c",
          PRELUDE +
            `
port = ${b.ports.first}
for _ in range(100):
    if os.path.exists("/tmp/udp-ready"): break
    time.sleep(0.1)
def udp():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.settimeout(3)
    s.sendto(b"hi", ("127.0.0.1", port)); return s.recv(100).decode()
attempt("udp", udp)
attempt("tcp", lambda: socket.create_connection(("127.0.0.1", port), timeout=3))
attempt("udp_bind_other_block", lambda: socket.socket(socket.AF_INET, socket.SOCK_DGRAM).bind(("127.0.0.1", port + 1)))
`,
        ],
      });
      const got = results(r.stdout);
      assert.equal(got.tcp, "EACCES", r.stdout + r.stderr);
      // KNOWN GAP: Landlock's network rules cover TCP bind and connect only. On an isolated
      // machine one agent's UDP datagrams reach another agent's UDP sockets, and an agent
      // may bind UDP ports in another agent's block. Not a wall today.
      assert.equal(got.udp, "OK udp secret of b", r.stdout + r.stderr);
      assert.equal(got.udp_bind_other_block, "OK", r.stdout + r.stderr);
    } finally {
      await t.call("POST", `/api/machines/${m.id}/stop`);
    }
  });

  it("the runtime folder on a shared machine: its agent's alone; another agent gets EACCES though it reads the homes", async () => {
    const m = await t.call("POST", "/api/machines", {
      org_id: org.id,
      name: "shared-run",
      trust: "shared",
      memory_mib: 512,
    });
    assert.equal(m.status, 201, JSON.stringify(m.body));
    const made: Agent[] = [];
    for (const name of ["a", "b"])
      made.push((await t.call("POST", "/api/agents", { org_id: org.id, machine_id: m.body.id, name })).body);
    const [a, b] = made as [Agent, Agent];
    try {
      const own = await exec(a, {
        command: `stat -c '%a %u' /run/warren/${a.id}; id -u; echo x > ~/shared.txt`,
      });
      assert.equal(own.exit_code, 0, own.stderr);
      const [mode, uid] = own.stdout.trim().split("\n");
      assert.equal(mode, `700 ${uid}`, own.stdout);
      const r = await exec(b, {
        argv: [
          "python3",
          "-c",
          PRELUDE +
            `
attempt("home", lambda: open("/home/${a.id}/shared.txt").read().strip())
attempt("runtime", lambda: os.listdir("/run/warren/${a.id}"))
attempt("runtime_write", lambda: open("/run/warren/${a.id}/planted", "w").write("x"))
attempt("own", lambda: len(os.listdir("/run/warren/${b.id}")) >= 0)
`,
        ],
      });
      const got = results(r.stdout);
      // the shared machine's read of another home holds (the control), the runtime folder does not
      assert.equal(got.home, "OK x", r.stdout + r.stderr);
      assert.equal(got.runtime, "EACCES", r.stdout + r.stderr);
      assert.equal(got.runtime_write, "EACCES", r.stdout + r.stderr);
      assert.equal(got.own, "OK True", r.stdout + r.stderr);
    } finally {
      await t.call("POST", `/api/machines/${m.body.id}/stop`);
    }
  });

  it("files the host would run: warren runs nothing from a home", async () => {
    const { m, agents } = await machine("persist", ["a"]);
    const a = agents[0]!;
    const hostMarker = path.join(os.tmpdir(), `warren-persist-${process.pid}`);
    const hook = `#!/bin/sh\ntouch ${hostMarker} /tmp/warren-persist-ran 2>/dev/null\n`;
    try {
      const plant = await exec(a, {
        command: [
          "mkdir -p .git/hooks .config/git",
          ...[".git/hooks/pre-commit", ".git/hooks/post-checkout", ".git/hooks/fsmonitor-watchman"].map(
            (f) => `printf '%s' "$HOOK" > ${f} && chmod +x ${f}`,
          ),
          `printf '[core]\\n\\tfsmonitor = .git/hooks/fsmonitor-watchman\\n\\thooksPath = .git/hooks\\n' > .git/config`,
          "printf '%s' \"$HOOK\" > .bashrc; cp .bashrc .profile; cp .bashrc .bash_logout; cp .bashrc .config/git/config",
          "echo planted",
        ].join(" && "),
        env: { HOOK: hook },
      });
      assert.equal(plant.stdout, "planted\n", plant.stderr);
      // What the server does with a home: its file routes, measurement, commands, a stop
      // and a start again.
      assert.equal(
        (await t.inject({ method: "GET", url: `/api/agents/${a.id}/files/.bashrc` })).statusCode,
        200,
      );
      const put = await t.inject({
        method: "PUT",
        url: `/api/agents/${a.id}/files/.git/hooks/post-merge`,
        payload: hook,
        headers: { "content-type": "application/octet-stream" },
      });
      assert.equal(put.statusCode, 204, put.body);
      assert.equal((await t.call("GET", `/api/agents/${a.id}/usage`)).status, 200);
      const check = "test -e /tmp/warren-persist-ran && echo ran || echo clean";
      assert.equal((await exec(a, { command: check })).stdout, "clean\n");
      await t.call("POST", `/api/machines/${m.id}/stop`);
      // started again: the box's start reads the homes (owners only) and runs nothing there
      assert.equal((await exec(a, { command: check })).stdout, "clean\n");
      assert.equal(fs.existsSync(hostMarker), false, "the host ran a file from a home");
    } finally {
      fs.rmSync(hostMarker, { force: true });
      await t.call("POST", `/api/machines/${m.id}/stop`);
    }
  });
});
