// Escape attempts from inside a box. Each must keep failing, and each test checks that
// the host and the other agent are unchanged afterwards.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import crypto from "node:crypto";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { BOX_ROOT_HOST_ID, BOXD_CAPS } from "../../src/boxes/kit/boxd.js";
import { boxdHostPid, boxSkipReason, hostPidsOfUid, makeBox, type TestBox } from "../box/fixture.js";

const skip = boxSkipReason();

/**
 * What must not change on the host: its root and /etc, the other agent's home, the
 * machine's folder, /data and the contracts; and no file anywhere in the host's shared
 * temporary folders may belong to an agent (the host's /tmp itself changes all the time
 * with other programs, so it is checked by owner).
 */
function fingerprint(box: TestBox): Record<string, string> {
  const out: Record<string, string> = {};
  out["/"] = fs.readdirSync("/").sort().join(",");
  out["/etc"] = fs.readdirSync("/etc").sort().join(",");
  out["/etc/passwd"] = fs.readFileSync("/etc/passwd", "utf8");
  const agentUids = new Set(box.agents.map((a) => a.uid));
  for (const dir of ["/tmp", "/var/tmp", "/dev/shm", "/"]) {
    let names: string[] = [];
    try {
      names = fs.readdirSync(dir);
    } catch {
      continue;
    }
    const owned = names.filter((n) => {
      try {
        return agentUids.has(fs.lstatSync(path.join(dir, n)).uid);
      } catch {
        return false;
      }
    });
    out[`agent-owned in ${dir}`] = owned.join(",");
  }
  const walk = (dir: string): void => {
    for (const e of fs
      .readdirSync(dir, { withFileTypes: true })
      .sort((a, b) => a.name.localeCompare(b.name))) {
      const p = path.join(dir, e.name);
      const st = fs.lstatSync(p);
      out[p] =
        `${st.mode}:${st.uid}:${st.gid}:${e.isFile() ? crypto.createHash("sha256").update(fs.readFileSync(p)).digest("hex") : ""}`;
      if (e.isDirectory()) walk(p);
    }
  };
  const other = box.agents[1];
  if (other) walk(other.hostHome);
  walk(path.join(box.stateRoot, "data"));
  walk(path.join(box.stateRoot, "contracts"));
  out.machine = fs.readdirSync(box.machineDir).sort().join(",");
  return out;
}

describe("hostile agents in an isolated box", { skip: skip ?? false }, () => {
  let box: TestBox;
  let other: TestBox;
  let before0: Record<string, string> = {};
  const hostMarker = path.join(os.tmpdir(), `warren-hostile-${process.pid}`);

  before(async () => {
    box = await makeBox({ limits: { memoryMib: 256, pids: 512 } });
    other = await makeBox({ agents: 1, start: false });
    fs.writeFileSync(hostMarker, "host tmp file\n");
    fs.writeFileSync(path.join(box.agents[1]!.hostHome, "secret"), "agent 2's secret\n");
    fs.chownSync(path.join(box.agents[1]!.hostHome, "secret"), box.agents[1]!.uid, box.agents[1]!.gid);
    fs.chmodSync(path.join(box.agents[1]!.hostHome, "secret"), 0o600);
    before0 = fingerprint(box);
  });
  after(async () => {
    fs.rmSync(hostMarker, { force: true });
    await other?.cleanup();
    await box?.cleanup();
  });

  const unchanged = (): void =>
    assert.deepEqual(fingerprint(box), before0, "the host or the other agent changed");

  it("cannot write outside its home", async () => {
    for (const target of [
      "/x",
      "/usr/x",
      "/etc/x",
      "/home/x",
      "/data/x",
      "/opt/warren/contracts/x",
      "/run/x",
      "/agent/x",
      "/proc/x",
      "/dev/x",
    ]) {
      const r = await box.sh(`echo pwned > ${target}`);
      assert.notEqual(r.exitCode, 0, `${target} was writable`);
    }
    const own = await box.sh("echo mine > ~/ok && cat ~/ok && echo tmp > /tmp/t && cat /tmp/t");
    assert.equal(own.out, "mine\ntmp\n");
    assert.equal(fs.existsSync("/tmp/t"), false, "the box's /tmp is the host's /tmp");
    unchanged();
  });

  it("sees nothing of the host's tree, the state tree or other machines", async () => {
    const hidden = [
      "/work",
      "/root",
      "/srv",
      "/var/lib",
      "/sys/fs/cgroup",
      box.stateRoot,
      other.machineDir,
      hostMarker,
      "/run/boxd/boxd.sock",
    ];
    for (const p of hidden) {
      const r = await box.run(["/usr/bin/test", "-e", p]);
      assert.equal(r.exitCode, 1, `${p} is visible`);
    }
    const tmp = await box.sh("ls -A /tmp");
    assert.equal(tmp.out.includes(path.basename(hostMarker)), false);
    const boxdDir = await box.sh("ls /run/boxd /run/warren 2>&1; cat /proc/2/environ 2>&1");
    assert.match(boxdDir.out, /Permission denied/);
    unchanged();
  });

  it("sees only the allowed part of the host's /etc, and the box's own names", async () => {
    for (const p of [
      "/etc/shadow",
      "/etc/gshadow",
      "/etc/machine-id",
      "/etc/ssh",
      "/etc/apt",
      "/etc/postgresql",
      "/etc/sudoers",
      "/etc/passwd-",
      "/etc/fstab",
    ]) {
      const r = await box.run(["/usr/bin/test", "-e", p]);
      assert.equal(r.exitCode, 1, `${p} is visible`);
    }
    const names = await box.sh(
      "cat /etc/hostname; getent hosts localhost; cat /etc/passwd | cut -d: -f1 | sort | tr '\\n' ' '",
    );
    assert.equal(names.exitCode, 0, names.err);
    assert.match(names.out, /^box\n/);
    assert.equal(names.out.includes(fs.readFileSync("/etc/hostname", "utf8").trim() + "\n"), false);
    assert.match(names.out, /a1 a2 nobody root/);
    // what the system needs still works: the loader, alternatives, certificates, time zone
    const works = await box.sh(
      "awk 'BEGIN{print 1+1}'; ls /etc/ssl/certs | head -1 | wc -l; date +%Z; test -e /etc/ld.so.cache && echo loader",
    );
    assert.equal(works.exitCode, 0, works.err);
    assert.equal(works.out.split("\n")[0], "2");
    assert.match(works.out, /loader/);
    const write = await box.sh(
      "echo x > /etc/x 2>&1; echo x >> /etc/hosts 2>&1; ln -s / /etc/l 2>&1; echo done",
    );
    assert.match(write.out, /Read-only file system|Permission denied/);
    assert.equal((await box.run(["/usr/bin/test", "-e", "/etc/x"])).exitCode, 1);
    unchanged();
  });

  it("cannot read the other agent's home (isolated)", async () => {
    const r = await box.sh("ls /home/a2 2>&1; cat /home/a2/secret 2>&1");
    assert.match(r.out, /Permission denied/);
    assert.equal(r.out.includes("agent 2's secret"), false);
    unchanged();
  });

  it("cannot signal the other agent's processes", async () => {
    // the victim waits for the attack to be over (a file the attacker makes last), so it is
    // surely running while the attack goes on, however slow the host
    const go = `/tmp/attack-over-${process.pid}`;
    const victim = box.client().exec({
      argv: [
        "/bin/sh",
        "-c",
        `n=0; while [ ! -e ${go} ] && [ $n -lt 600 ]; do sleep 0.1; n=$((n+1)); done; echo survived`,
      ],
      env: {},
      cwd: "/",
      uid: box.agents[1]!.uid,
      gid: box.agents[1]!.gid,
    });
    for (const deadline = Date.now() + 30_000; (await box.client().ping()).processes < 1;) {
      assert.ok(Date.now() < deadline, "the victim never started");
      await new Promise((r) => setTimeout(r, 20));
    }
    const r = await box.sh(
      `kill -9 -1; pkill -KILL -u ${box.agents[1]!.uid}; pkill -KILL boxd; touch ${go}; echo done`,
    );
    assert.equal(r.out, "done\n");
    const v = await victim;
    assert.equal(v.exitCode, 0);
    assert.equal(v.stdout.toString(), "survived\n");
    assert.equal((await box.client().ping()).processes, 0);
    unchanged();
  });

  it("cannot link out of its home", async () => {
    const r = await box.sh(
      [
        "ln -s / ~/root; ln -s /etc/shadow ~/shadow; ln -s /home/a2/secret ~/s2",
        "cat ~/shadow 2>&1 | head -1; cat ~/s2 2>&1",
        "ln /etc/shadow ~/hard 2>&1; ln /usr/bin/su ~/su 2>&1; ln /home/a2/secret ~/hard2 2>&1",
        "ls ~/root/ | tr '\\n' ' '",
      ].join("; "),
    );
    assert.match(r.out, /Permission denied/);
    assert.equal(r.out.includes("agent 2's secret"), false);
    assert.equal(r.out.includes("root:"), false);
    assert.equal(fs.existsSync(path.join(box.agents[0]!.hostHome, "hard")), false);
    assert.equal(fs.existsSync(path.join(box.agents[0]!.hostHome, "su")), false);
    assert.equal(fs.existsSync(path.join(box.agents[0]!.hostHome, "hard2")), false);
    // The links exist in the home; on the host they must not be followed by warren (the
    // home file rules refuse links), and they point to paths the box resolves inside itself.
    // (the box's root holds /workspace, never the host's /work)
    assert.ok(/(^|\s)home(\s|$)/.test(r.out) && !/(^|\s)work(\s|$)/.test(r.out), r.out);
    unchanged();
  });

  it("gets no root from setuid binaries and holds no capabilities", async () => {
    const r = await box.sh(
      "grep -E '^(CapInh|CapPrm|CapEff|CapBnd|CapAmb|NoNewPrivs|Seccomp):' /proc/self/status; su -c id root </dev/null 2>&1; echo su=$?; mount -t tmpfs none /tmp 2>&1; echo mount=$?; id -u",
    );
    for (const cap of ["CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"])
      assert.match(r.out, new RegExp(`${cap}:\\s+0000000000000000`));
    assert.match(r.out, /NoNewPrivs:\s+1/);
    assert.match(r.out, /Seccomp:\s+2/);
    assert.doesNotMatch(r.out, /su=0/);
    assert.doesNotMatch(r.out, /mount=0/);
    assert.match(r.out, new RegExp(`\\n${box.agents[0]!.uid}\\n$`));
    unchanged();
  });

  it("cannot make device nodes, and /dev is minimal", async () => {
    const r = await box.sh("mknod /tmp/mem c 1 1 2>&1; echo mknod=$?; ls /dev | tr '\\n' ' '");
    assert.doesNotMatch(r.out, /mknod=0/);
    const devs = r.out
      .split("mknod=")[1]!
      .replace(/^\d+\n/, "")
      .trim()
      .split(" ");
    const allowed = new Set([
      "console",
      "core",
      "fd",
      "full",
      "mqueue",
      "null",
      "ptmx",
      "pts",
      "random",
      "shm",
      "stderr",
      "stdin",
      "stdout",
      "tty",
      "urandom",
      "zero",
    ]);
    for (const d of devs) assert.ok(allowed.has(d), `/dev/${d} should not be in the box`);
    unchanged();
  });

  it("cannot make namespaces, mount, or use the refused system calls", async () => {
    const r = await box.sh(
      "unshare -U true 2>&1; echo userns=$?; unshare -m true 2>&1; echo mountns=$?; unshare -n true 2>&1; echo netns=$?; mount --bind /tmp /tmp 2>&1; echo bind=$?",
    );
    for (const what of ["userns", "mountns", "netns", "bind"])
      assert.doesNotMatch(r.out, new RegExp(`${what}=0`), `${what} succeeded: ${r.out}`);

    // The refused calls themselves, from a small C program compiled here and run as the agent.
    const bin = path.join(box.agents[0]!.hostHome, "syscalls");
    execFileSync("gcc", ["-O1", "-o", bin, path.join(import.meta.dirname, "syscalls.c")]);
    fs.chownSync(bin, box.agents[0]!.uid, box.agents[0]!.gid);
    const calls = await box.run(["./syscalls"]);
    assert.equal(calls.exitCode, 0, calls.err);
    const got = Object.fromEntries(
      calls.out
        .trim()
        .split("\n")
        .map((l) => l.split("=") as [string, string]),
    );
    const eperm = [
      "io_uring_setup",
      "keyctl",
      "add_key",
      "ptrace",
      "setns",
      "unshare_user",
      "clone_newuser",
      "userfaultfd",
      "bpf",
      "perf_event_open",
      "tiocsti",
      "process_vm_readv",
      "mount",
      "open_tree",
    ];
    for (const name of eperm) assert.equal(got[name], "EPERM", `${name}: ${calls.out}`);
    assert.equal(got.clone3, "ENOSYS");
    assert.equal(got.fork, "OK");
    assert.equal(got.tioclinux, "EPERM", calls.out);
    // Socket families by allow-list: vsock leads out of every namespace on a VM host.
    for (const name of [
      "socket_vsock",
      "socket_packet",
      "socket_alg",
      "socket_bluetooth",
      "socket_key",
      "socket_xdp",
      "socket_can",
      "socket_tipc",
      "netlink_audit",
      "netlink_uevent",
      "netlink_netfilter",
      "netlink_generic",
      "socketpair_vsock",
      "socketpair_netlink",
    ])
      assert.equal(got[name], "EAFNOSUPPORT", `${name}: ${calls.out}`);
    for (const name of ["netlink_route", "socket_unix", "socket_inet", "socket_inet6", "socketpair_unix"])
      assert.equal(got[name], "OK", `${name}: ${calls.out}`);
    fs.rmSync(bin);
    unchanged();
  });

  it("boxd itself runs under a seccomp filter (socket families by list), which every command inherits", async () => {
    const pid = boxdHostPid(box.id);
    assert.ok(pid, "boxd is running");
    const status = fs.readFileSync(`/proc/${pid}/status`, "utf8");
    assert.match(status, /^Seccomp:\s+2$/m, "boxd is in seccomp filter mode");
    assert.match(status, /^NoNewPrivs:\s+1$/m);
    // a command carries boxd's filter and its own on top
    const r = await box.sh("grep -E '^Seccomp_filters' /proc/self/status");
    const filters = Number(/Seccomp_filters:\s+(\d+)/.exec(r.out)?.[1]);
    const boxdFilters = Number(/^Seccomp_filters:\s+(\d+)$/m.exec(status)?.[1]);
    assert.ok(boxdFilters >= 1, status);
    assert.ok(filters > boxdFilters, `${r.out} / boxd ${boxdFilters}`);
    unchanged();
  });

  it("cannot trace or kill boxd or the box's init", async () => {
    const before = await box.client().ping();
    const hasStrace = fs.existsSync("/usr/bin/strace");
    const r = await box.sh(
      `kill -9 2 2>&1; echo kill2=$?; kill -9 1 2>&1; echo kill1=$?; ${hasStrace ? "strace -p 2 -e trace=none 2>&1 | head -2; " : ""}echo x`,
      {
        timeoutMs: 10_000,
      },
    );
    assert.doesNotMatch(r.out, /kill2=0/);
    assert.doesNotMatch(r.out, /kill1=0/);
    if (hasStrace) assert.match(r.out, /Operation not permitted|EPERM/);
    const afterPing = await box.client().ping();
    assert.equal(afterPing.pid, before.pid);
    assert.ok(afterPing.uptimeMs > before.uptimeMs);
    unchanged();
  });

  it("boxd is root of its own user namespace only: taken over, it cannot remount, unmount or write the host's tree", async () => {
    const boxd = boxdHostPid(box.id);
    assert.ok(boxd, "boxd's host pid");
    const status = fs.readFileSync(`/proc/${boxd}/status`, "utf8");
    const root = BOX_ROOT_HOST_ID;
    assert.match(
      status,
      new RegExp(`^Uid:\\s+${root}\\s+${root}\\s+${root}\\s+${root}$`, "m"),
      "an unprivileged host id",
    );
    // capability numbers (linux/capability.h) of what boxd is meant to keep
    const number: Record<string, number> = {
      CAP_DAC_READ_SEARCH: 2,
      CAP_KILL: 5,
      CAP_SETGID: 6,
      CAP_SETUID: 7,
      CAP_SETPCAP: 8,
      CAP_SYS_ADMIN: 21,
    };
    const kept = BOXD_CAPS.reduce((m, c) => m | (1n << BigInt(number[c] ?? 63)), 0n);
    const bounding = BigInt(`0x${/^CapBnd:\s+([0-9a-f]+)$/m.exec(status)?.[1] ?? "ffff"}`);
    assert.equal(bounding.toString(16), kept.toString(16), "only the capabilities it uses");
    assert.equal(
      fs.readFileSync(`/proc/${boxd}/uid_map`, "utf8").replace(/\s+/g, " ").trim(),
      `0 ${root} 1 1000 1000 64534`,
    );
    // Play a boxd taken over: its user namespace as its root, in the box's mounts.
    const taken = execFileSync(
      "nsenter",
      [
        "-t",
        String(boxd),
        "-m",
        "-U",
        "--",
        "/bin/sh",
        "-c",
        "id -u; mount -o remount,rw /usr 2>&1; echo remount=$?; umount /tmp 2>&1; echo umount=$?; " +
          "mount -t tmpfs none /home 2>&1; echo mount=$?; touch /usr/warren-x 2>&1; echo touch=$?; " +
          "cat /etc/shadow 2>&1 | head -1; echo done",
      ],
      { encoding: "utf8" },
    );
    assert.match(taken, /^0\n/);
    for (const step of ["remount", "umount", "mount", "touch"])
      assert.doesNotMatch(taken, new RegExp(`${step}=0`), `${step} succeeded:\n${taken}`);
    assert.equal(fs.existsSync("/usr/warren-x"), false);
    assert.ok((await box.client().ping()).pid > 0, "boxd still answers");
    unchanged();
  });

  it("a fork bomb is contained by pids.max and killed on timeout", async () => {
    const bomb = box.sh("b() { b | b & }; b; sleep 100", { timeoutMs: 4000 });
    // boxd answers during the bomb (once it has taken the box's processes, or the timeout is near)
    let during = await box.client().ping();
    for (const end = Date.now() + 3000; during.processes < 50 && Date.now() < end;) {
      await new Promise((r) => setTimeout(r, 50));
      during = await box.client().ping();
    }
    assert.ok(during.pid > 0);
    const r = await bomb;
    assert.equal(r.timedOut, true);
    const hostOk = execFileSync("/bin/echo", ["host fine"]).toString();
    assert.equal(hostOk, "host fine\n");
    assert.equal((await box.client().ping()).processes, 0);
    const pidsMax = fs
      .readFileSync(`/sys/fs/cgroup/pids/warren-test/${box.id}/agents/pids.max`, "utf8")
      .trim();
    assert.equal(pidsMax, "512");
    assert.equal((await box.sh("echo alive")).out, "alive\n");
    unchanged();
  });

  it("a memory bomb is killed by the memory limit; boxd survives", async () => {
    const before = await box.client().ping();
    const r = await box.run(["/usr/bin/node", "-e", "const a=[];for(;;)a.push(Buffer.alloc(1<<20,1))"], {
      timeoutMs: 30_000,
    });
    assert.notEqual(r.exitCode, 0);
    assert.equal(r.timedOut, false);
    const afterPing = await box.client().ping();
    assert.equal(afterPing.pid, before.pid);
    assert.equal((await box.sh("echo alive")).out, "alive\n");
    unchanged();
  });

  it("has no network but loopback, and no DNS", async () => {
    const script = [
      "const net=require('net');",
      "const s=net.connect(80,'192.0.2.1');", // TEST-NET-1: documentation only; there is no route anyway
      "s.on('error',e=>{console.log('connect',e.code);",
      "require('dns').lookup('example.com',(e)=>{console.log('dns',e&&e.code);",
      "console.log('ifaces',Object.keys(require('os').networkInterfaces()).join(','))})})",
    ].join("");
    const r = await box.run(["/usr/bin/node", "-e", script]);
    assert.match(r.out, /connect (ENETUNREACH|EHOSTUNREACH|EACCES)/);
    assert.match(r.out, /dns E[A-Z]+/);
    assert.match(r.out, /ifaces lo\n/);
    const routes = await box.sh("tail -n +2 /proc/net/route | wc -l");
    assert.equal(routes.out.trim(), "0");
    unchanged();
  });

  it("cannot reach the host's unix sockets, named or abstract", async () => {
    const named = path.join(box.stateRoot, "run", "host.sock");
    const tmpSock = path.join(os.tmpdir(), `warren-hostile-${process.pid}.sock`);
    const abstract = `\0warren-hostile-${process.pid}`;
    const servers = [named, tmpSock, abstract].map((p) =>
      net.createServer((c) => c.end("reached\n")).listen(p),
    );
    await Promise.all(servers.map((s) => new Promise((r) => s.once("listening", r))));
    try {
      const script = `for (const p of ${JSON.stringify([named, tmpSock, abstract])}) require('net').connect(p).on('data',d=>console.log('REACHED',JSON.stringify(p))).on('error',e=>console.log(e.code))`;
      const r = await box.run(["/usr/bin/node", "-e", script]);
      assert.doesNotMatch(r.out, /REACHED/);
      assert.equal(r.out.trim().split("\n").length, 3, r.out + r.err);
    } finally {
      await Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
      fs.rmSync(tmpSock, { force: true });
    }
    unchanged();
  });

  it("leaves no process behind after a timeout", async () => {
    const r = await box.sh(
      "(setsid sh -c 'trap \"\" HUP TERM; sleep 1000' &); (nohup sleep 999 &); sleep 1000",
      { timeoutMs: 300 },
    );
    assert.equal(r.timedOut, true);
    const ping = await box.client().ping();
    assert.equal(ping.processes, 0);
    assert.deepEqual(hostPidsOfUid(box.agents[0]!.uid, ping), []);
    unchanged();
  });
});

describe("agents on a trust: shared machine", { skip: skip ?? false }, () => {
  it("read each other's homes but cannot write them", async () => {
    const box = await makeBox({ trust: "shared" });
    try {
      await box.sh("echo shared-note > ~/note; chmod 640 ~/note", { agent: 1 });
      const r = await box.sh(
        "cat /home/a2/note; echo more >> /home/a2/note 2>&1; echo w=$?; touch /home/a2/new 2>&1; echo t=$?",
      );
      assert.match(r.out, /^shared-note\n/);
      assert.doesNotMatch(r.out, /w=0/);
      assert.doesNotMatch(r.out, /t=0/);
      assert.equal(fs.readFileSync(path.join(box.agents[1]!.hostHome, "note"), "utf8"), "shared-note\n");
    } finally {
      await box.cleanup();
    }
  });
});
