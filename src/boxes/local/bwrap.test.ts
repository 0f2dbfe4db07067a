import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { sampleSpec } from "../../../test/support/box-spec.js";
import type { BoxSpec } from "../types.js";
import { BOXD_CAPS, IN_BOX, etcAllowed } from "../kit/boxd.js";
import { bwrapArgv, bwrapEnv, type BwrapPaths } from "./bwrap.js";

const spec: BoxSpec = sampleSpec({
  id: "m1",
  org: "o1",
  provider: "local",
  state: "/state",
  cpus: 1,
  tmpMib: 128,
});

const paths: BwrapPaths = {
  systemDirs: [
    { path: "/usr", kind: "dir" },
    { path: "/bin", kind: "symlink", target: "usr/bin" },
    { path: "/lib", kind: "symlink", target: "usr/lib" },
  ],
  etc: [
    { name: "ld.so.cache", kind: "bind" },
    { name: "alternatives", kind: "bind" },
    { name: "localtime", kind: "symlink", target: "/usr/share/zoneinfo/Etc/UTC" },
    { name: "hosts", kind: "bind" },
  ],
  etcFiles: { hosts: "/state/run/boxes/m1/etc.hosts", hostname: "/state/run/boxes/m1/etc.hostname" },
  boxdBinary: "/opt/w/dist/native/boxd",
  spawnHelper: "/opt/w/dist/native/boxd-spawn",
  userns: "/opt/w/dist/native/box-userns",
  boxRootId: 2_000_000,
  seccompFile: "/state/run/boxes/m1/seccomp.bpf",
  socketDir: "/state/run/boxes/m1/boxd",
  callsDir: "/state/run/boxes/m1/calls",
  warrenSecret: "/opt/w/dist/native/warren-secret",
  cgroups: [
    { name: "memory", dir: "/sys/fs/cgroup/memory/warren/m1/agents" },
    { name: "pids", dir: "/sys/fs/cgroup/pids/warren/m1/agents" },
  ],
  cgroupVersion: 1,
  passwdFile: "/state/run/boxes/m1/passwd",
  groupFile: "/state/run/boxes/m1/group",
  readyFd: 3,
};

/** Index of a flag followed by its operands, or -1. */
function find(argv: string[], ...seq: string[]): number {
  for (let i = 0; i + seq.length <= argv.length; i++) if (seq.every((s, j) => argv[i + j] === s)) return i;
  return -1;
}

describe("bwrapArgv", () => {
  const argv = bwrapArgv(spec, paths);
  const sep = argv.indexOf("--");
  const opts = argv.slice(0, sep);
  const cmd = argv.slice(sep + 1);

  it("unshares every namespace but the user namespace, and survives its parent", () => {
    for (const f of [
      "--unshare-pid",
      "--unshare-net",
      "--unshare-ipc",
      "--unshare-uts",
      "--unshare-cgroup-try",
    ])
      assert.ok(opts.includes(f), f);
    assert.ok(!opts.includes("--unshare-user") && !opts.includes("--unshare-all"));
    assert.ok(!opts.includes("--die-with-parent"), "boxes outlive the server");
    assert.ok(!opts.includes("--as-pid-1"), "bwrap's init reaps orphans");
    assert.ok(opts.includes("--new-session"));
    assert.notEqual(find(opts, "--hostname", IN_BOX.hostname), -1);
  });

  it("drops every capability but boxd's few", () => {
    const drop = find(opts, "--cap-drop", "ALL");
    assert.notEqual(drop, -1);
    const added = opts.flatMap((a, i) => (a === "--cap-add" ? [opts[i + 1]] : []));
    for (const cap of [
      "CAP_NET_ADMIN",
      "CAP_SYS_PTRACE",
      "CAP_SYS_MODULE",
      "CAP_NET_RAW",
      "CAP_DAC_OVERRIDE",
    ])
      assert.ok(!added.includes(cap), cap);
    assert.deepEqual(added, [...BOXD_CAPS]);
    assert.ok(opts.indexOf("--cap-add") > drop, "adds come after the drop");
  });

  it("binds system folders read-only and recreates usrmerge symlinks", () => {
    assert.notEqual(find(opts, "--ro-bind", "/usr", "/usr"), -1);
    assert.notEqual(find(opts, "--symlink", "usr/bin", "/bin"), -1);
    assert.equal(find(opts, "--bind", "/usr", "/usr"), -1);
  });

  it("builds /etc from allowed host entries and the box's own names, never the host's whole /etc", () => {
    assert.equal(find(opts, "--ro-bind", "/etc", "/etc"), -1);
    const etcDir = find(opts, "--dir", "/etc");
    assert.ok(etcDir > 0);
    assert.ok(find(opts, "--ro-bind", "/etc/ld.so.cache", "/etc/ld.so.cache") > etcDir);
    assert.ok(find(opts, "--ro-bind", "/etc/alternatives", "/etc/alternatives") > etcDir);
    assert.notEqual(find(opts, "--symlink", "/usr/share/zoneinfo/Etc/UTC", "/etc/localtime"), -1);
    // the host's hosts is replaced by the box's own, passwd and group are generated
    assert.equal(find(opts, "--ro-bind", "/etc/hosts", "/etc/hosts"), -1);
    assert.notEqual(find(opts, "--ro-bind", "/state/run/boxes/m1/etc.hosts", "/etc/hosts"), -1);
    assert.notEqual(find(opts, "--ro-bind", "/state/run/boxes/m1/etc.hostname", "/etc/hostname"), -1);
    assert.notEqual(find(opts, "--ro-bind", paths.passwdFile!, "/etc/passwd"), -1);
    assert.notEqual(find(opts, "--ro-bind", paths.groupFile!, "/etc/group"), -1);
    assert.notEqual(find(opts, "--symlink", "../proc/self/mounts", "/etc/mtab"), -1);
    // every /etc target is under the folder made for it, before the root is made read-only
    const ro = opts.lastIndexOf("--remount-ro");
    opts.forEach((arg, i) => {
      if (arg.startsWith("/etc/")) assert.ok(i > etcDir && i < ro, arg);
    });
  });

  it("lets through only the allowed names of the host's /etc", () => {
    for (const name of ["ld.so.cache", "alternatives", "ssl", "python3.11", "java-17-openjdk", "localtime"])
      assert.ok(etcAllowed(name), name);
    for (const name of [
      "shadow",
      "passwd",
      "hosts",
      "hostname",
      "machine-id",
      "ssh",
      "postgresql",
      "apt",
      "sudoers",
      "npmrc",
      "environment",
      "python3x",
    ])
      assert.ok(!etcAllowed(name), name);
    assert.throws(
      () => bwrapArgv(spec, { ...paths, etc: [{ name: "../shadow", kind: "bind" }] }),
      /bad \/etc entry/,
    );
  });

  it("mounts the machine's folder, data, contracts, proc, a minimal dev and a capped /tmp", () => {
    assert.notEqual(find(opts, "--bind", "/state/workspaces/m1", "/home"), -1);
    assert.notEqual(find(opts, "--ro-bind", "/state/data", "/data"), -1);
    assert.notEqual(find(opts, "--ro-bind", "/state/contracts", "/opt/warren/contracts"), -1);
    assert.notEqual(find(opts, "--proc", "/proc"), -1);
    assert.notEqual(find(opts, "--dev", "/dev"), -1);
    assert.notEqual(find(opts, "--perms", "1777", "--size", String(64 * 1024 * 1024), "--tmpfs", "/tmp"), -1);
    assert.ok(!opts.includes("--dev-bind") && !opts.includes("--dev-bind-try"));
  });

  it("adds a /tmp from limits.tmpMib when the spec has none", () => {
    const a = bwrapArgv({ ...spec, mounts: spec.mounts.filter((m) => m.target !== "/tmp") }, paths);
    assert.notEqual(find(a, "--perms", "1777", "--size", String(128 * 1024 * 1024), "--tmpfs", "/tmp"), -1);
  });

  it("keeps boxd's files in folders nobody lists, the socket folder at /run/boxd", () => {
    assert.notEqual(find(opts, "--perms", "0711", "--dir", IN_BOX.privDir), -1);
    assert.notEqual(find(opts, "--perms", "0711", "--dir", IN_BOX.cgroupDir), -1);
    assert.notEqual(find(opts, "--ro-bind", paths.spawnHelper, IN_BOX.spawnHelper), -1);
    assert.notEqual(find(opts, "--ro-bind", paths.seccompFile, IN_BOX.seccomp), -1);
    assert.notEqual(find(opts, "--bind", paths.socketDir, IN_BOX.socketDir), -1);
    assert.notEqual(
      find(opts, "--bind", "/sys/fs/cgroup/memory/warren/m1/agents", `${IN_BOX.cgroupDir}/memory`),
      -1,
    );
    assert.ok(
      find(opts, "--remount-ro", "/") > find(opts, "--dir", IN_BOX.agentDir),
      "root goes read-only last",
    );
  });

  it("never mounts the host's root, /sys, /root or the state tree as a whole", () => {
    const sources = opts.flatMap((a, i) => (a === "--bind" || a === "--ro-bind" ? [opts[i + 1]] : []));
    for (const s of sources) {
      assert.notEqual(s, "/");
      assert.ok(!s?.startsWith("/sys/") || s.startsWith("/sys/fs/cgroup/"), s);
      assert.ok(!s?.startsWith("/root"), s);
      assert.notEqual(s, "/state");
      assert.notEqual(s, "/state/run");
    }
  });

  it("binds the calls folder, warren-secret read-only in /opt/warren/bin, and tells boxd the calls socket", () => {
    assert.notEqual(find(opts, "--bind", paths.callsDir!, IN_BOX.callsDir), -1);
    assert.notEqual(find(opts, "--ro-bind", paths.warrenSecret!, `${IN_BOX.binDir}/warren-secret`), -1);
    assert.notEqual(find(opts, "--perms", "0755", "--dir", "/opt/warren"), -1);
    assert.equal(cmd[cmd.indexOf("--calls-socket") + 1], IN_BOX.callsSocket);
    assert.ok(cmd.indexOf("--calls-socket") > cmd.indexOf(IN_BOX.boxd), "an argument of boxd");
    const none = bwrapArgv(spec, { ...paths, callsDir: undefined, warrenSecret: undefined });
    assert.equal(none.indexOf("--calls-socket"), -1);
    assert.throws(
      () => bwrapArgv({ ...spec, mounts: [{ kind: "tmpfs", target: "/opt/warren/bin", sizeMib: 1 }] }, paths),
      /reserved/,
    );
  });

  it("binds the boxd binaries into boxd's folder and nothing of node", () => {
    assert.notEqual(find(opts, "--ro-bind", paths.boxdBinary, IN_BOX.boxd), -1);
    assert.notEqual(find(opts, "--ro-bind", paths.userns, IN_BOX.userns), -1);
    assert.ok(
      find(opts, "--ro-bind", paths.boxdBinary, IN_BOX.boxd) >
        find(opts, "--perms", "0711", "--dir", IN_BOX.privDir),
      "inside boxd's folder (0711: box root passes, nobody lists it)",
    );
    const sources = opts.flatMap((a, i) => (a === "--bind" || a === "--ro-bind" ? [opts[i + 1]] : []));
    const targets = opts.flatMap((a, i) => (a === "--bind" || a === "--ro-bind" ? [opts[i + 2]] : []));
    for (const p of [...sources, ...targets]) {
      assert.ok(!/(^|\/)node$/.test(p ?? ""), `no node binary: ${p}`);
      assert.ok(!p?.endsWith(".cjs"), `no bundle: ${p}`);
    }
    assert.ok(!sources.includes(process.execPath), "the server's node stays out");
  });

  it("starts boxd in box root's user namespace, with its arguments", () => {
    assert.deepEqual(cmd.slice(0, 5), [IN_BOX.userns, "--root-id", "2000000", "--", IN_BOX.boxd]);
    assert.throws(() => bwrapArgv(spec, { ...paths, boxRootId: 0 }), /above 65533/);
    assert.throws(() => bwrapArgv(spec, { ...paths, boxRootId: 10000 }), /above 65533/);
    assert.ok(!cmd.some((a) => a.includes("node") || a === "--jitless"));
    assert.notEqual(find(cmd, "--socket", IN_BOX.socket), -1);
    assert.notEqual(find(cmd, "--spawn", IN_BOX.spawnHelper), -1);
    assert.notEqual(find(cmd, "--seccomp", IN_BOX.seccomp), -1);
    assert.notEqual(find(cmd, "--cgroup", `memory=${IN_BOX.cgroupDir}/memory`), -1);
    assert.notEqual(find(cmd, "--cgroup-version", "1"), -1);
    assert.notEqual(find(cmd, "--ready-fd", "3"), -1);
    assert.equal(cmd.indexOf("--orphan-after-s"), -1, "absent unless asked for");
    const orphan = bwrapArgv(spec, { ...paths, orphanAfterS: 300 });
    assert.deepEqual(orphan.slice(-2), ["--orphan-after-s", "300"]);
    assert.throws(() => bwrapArgv(spec, { ...paths, orphanAfterS: -1 }), /orphanAfterS/);
  });

  it("tells boxd its bridges, each below the agents' port blocks", () => {
    assert.equal(cmd.indexOf("--bridge"), -1, "none unless the spec has them");
    const bridged = bwrapArgv(
      {
        ...spec,
        bridges: [
          { name: "egress", port: 3128 },
          { name: "gateway", port: 3129 },
        ],
      },
      paths,
    );
    assert.notEqual(find(bridged, "--bridge", "egress=3128"), -1);
    assert.notEqual(find(bridged, "--bridge", "gateway=3129"), -1);
    assert.ok(bridged.indexOf("--bridge") > bridged.indexOf(IN_BOX.boxd), "an argument of boxd");
    for (const bad of [
      { name: "egress", port: 20000 },
      { name: "Egress", port: 3128 },
      { name: "a=b", port: 3128 },
      { name: "egress", port: 0 },
    ])
      assert.throws(() => bwrapArgv({ ...spec, bridges: [bad] }, paths), /bad bridge/);
  });

  it("needs the boxd binary as an absolute path", () => {
    assert.throws(() => bwrapArgv(spec, { ...paths, boxdBinary: "relative/boxd" }), /absolute path/);
  });

  it("leaves out the cgroup namespace on cgroup v2", () => {
    const a = bwrapArgv(spec, {
      ...paths,
      cgroupVersion: 2,
      cgroups: [{ name: "unified", dir: "/sys/fs/cgroup/warren/m1/agents" }],
    });
    assert.ok(!a.includes("--unshare-cgroup-try"));
  });

  it("refuses mounts over reserved paths, relative paths and duplicates", () => {
    const withMount = (m: BoxSpec["mounts"][number]): BoxSpec => ({ ...spec, mounts: [...spec.mounts, m] });
    // /workspace too: it is bound per command (by the agent's workspace class), never for the box
    for (const target of ["/", "/proc", "/run/boxd", "/usr/lib", "/etc", "/agent", "/workspace"])
      assert.throws(
        () => bwrapArgv(withMount({ kind: "bind", source: "/x", target, readOnly: true }), paths),
        /reserved/,
        target,
      );
    assert.throws(
      () => bwrapArgv(withMount({ kind: "bind", source: "x", target: "/workspace", readOnly: true }), paths),
      /absolute/,
    );
    assert.throws(
      () =>
        bwrapArgv(
          withMount({ kind: "bind", source: "/a/../b", target: "/workspace", readOnly: true }),
          paths,
        ),
      /normalised/,
    );
    assert.throws(
      () => bwrapArgv(withMount({ kind: "bind", source: "/x", target: "/home", readOnly: true }), paths),
      /two mounts/,
    );
    assert.doesNotThrow(() =>
      bwrapArgv(
        withMount({ kind: "bind", source: "/state/flows", target: "/opt/warren/flows", readOnly: false }),
        paths,
      ),
    );
  });

  it("gives bwrap an environment with nothing of the server's", () => {
    assert.deepEqual(Object.keys(bwrapEnv()).sort(), ["LANG", "PATH"]);
  });
});
