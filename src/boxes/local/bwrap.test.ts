import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { BoxSpec } from "../types.js";
import { BOXD_CAPS, IN_BOX, bwrapArgv, bwrapEnv, type BwrapPaths } from "./bwrap.js";

const spec: BoxSpec = {
  id: "m1",
  labels: {
    "warren.kind": "machine",
    "warren.org": "o1",
    "warren.machine": "m1",
    "warren.provider": "local",
  },
  mounts: [
    { kind: "bind", source: "/state/workspaces/m1", target: "/home", readOnly: false },
    { kind: "bind", source: "/state/data", target: "/data", readOnly: true },
    { kind: "bind", source: "/state/contracts", target: "/opt/warren/contracts", readOnly: true },
    { kind: "tmpfs", target: "/tmp", sizeMib: 64, mode: 0o1777 },
  ],
  limits: { memoryMib: 512, cpus: 1, pids: 4096, tmpMib: 128 },
};

const paths: BwrapPaths = {
  systemDirs: [
    { path: "/usr", kind: "dir" },
    { path: "/bin", kind: "symlink", target: "usr/bin" },
    { path: "/lib", kind: "symlink", target: "usr/lib" },
    { path: "/etc", kind: "dir" },
  ],
  node: "/usr/bin/node",
  boxdBundle: "/opt/w/dist/boxd/boxd.cjs",
  spawnHelper: "/opt/w/dist/native/boxd-spawn",
  seccompFile: "/state/run/boxes/m1/seccomp.bpf",
  socketDir: "/state/run/boxes/m1/boxd",
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
    assert.notEqual(find(opts, "--ro-bind", "/etc", "/etc"), -1);
    assert.notEqual(find(opts, "--symlink", "usr/bin", "/bin"), -1);
    assert.equal(find(opts, "--bind", "/usr", "/usr"), -1);
    assert.ok(
      find(opts, "--ro-bind", paths.passwdFile!, "/etc/passwd") > find(opts, "--ro-bind", "/etc", "/etc"),
      "passwd over /etc",
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

  it("keeps boxd's files in root-only folders, the socket folder at /run/boxd", () => {
    assert.notEqual(find(opts, "--perms", "0700", "--dir", IN_BOX.privDir), -1);
    assert.notEqual(find(opts, "--perms", "0700", "--dir", IN_BOX.cgroupDir), -1);
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

  it("starts boxd with node's small-memory flags and its arguments", () => {
    assert.equal(cmd[0], IN_BOX.node);
    assert.ok(cmd.includes("--jitless"));
    assert.ok(cmd.includes(IN_BOX.boxd));
    assert.notEqual(find(cmd, "--socket", IN_BOX.socket), -1);
    assert.notEqual(find(cmd, "--cgroup", `memory=${IN_BOX.cgroupDir}/memory`), -1);
    assert.notEqual(find(cmd, "--cgroup-version", "1"), -1);
    assert.notEqual(find(cmd, "--ready-fd", "3"), -1);
  });

  it("with boxdImpl c, runs the boxd binary directly: no node, no bundle", () => {
    const c = bwrapArgv(spec, { ...paths, boxdImpl: "c", boxdBinary: "/opt/w/dist/native/boxd" });
    const at = c.indexOf("--");
    const cOpts = c.slice(0, at);
    const cCmd = c.slice(at + 1);
    assert.notEqual(find(cOpts, "--ro-bind", "/opt/w/dist/native/boxd", IN_BOX.boxdNative), -1);
    assert.ok(!cOpts.includes(IN_BOX.node) && !cOpts.includes(IN_BOX.boxd), "node and the bundle stay out");
    assert.ok(
      find(cOpts, "--ro-bind", "/opt/w/dist/native/boxd", IN_BOX.boxdNative) >
        find(cOpts, "--perms", "0700", "--dir", IN_BOX.privDir),
      "inside the root-only folder",
    );
    assert.equal(cCmd[0], IN_BOX.boxdNative);
    assert.ok(!cCmd.includes("--jitless") && !cCmd.includes(IN_BOX.node));
    // The same arguments as the node boxd, after its program.
    assert.deepEqual(cCmd.slice(1), cmd.slice(cmd.indexOf(IN_BOX.boxd) + 1));
    assert.notEqual(find(cCmd, "--spawn", IN_BOX.spawnHelper), -1);
    assert.notEqual(find(cCmd, "--ready-fd", "3"), -1);
    // Everything before boxd's own files is the same box.
    assert.deepEqual(
      cOpts.slice(0, cOpts.indexOf(IN_BOX.privDir)),
      opts.slice(0, opts.indexOf(IN_BOX.privDir)),
    );
  });

  it("with boxdImpl node (the default), needs node and the bundle; with c, the binary", () => {
    assert.deepEqual(bwrapArgv(spec, { ...paths, boxdImpl: "node" }), argv);
    assert.throws(() => bwrapArgv(spec, { ...paths, boxdImpl: "c" }), /boxdBinary/);
    assert.throws(() => bwrapArgv(spec, { ...paths, node: undefined }), /node/);
    assert.throws(() => bwrapArgv(spec, { ...paths, boxdBundle: undefined }), /boxdBundle/);
    assert.throws(
      () => bwrapArgv(spec, { ...paths, boxdImpl: "c", boxdBinary: "relative/boxd" }),
      /absolute path/,
    );
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
    for (const target of ["/", "/proc", "/run/boxd", "/usr/lib", "/etc", "/agent"])
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
        withMount({ kind: "bind", source: "/state/flows/f1", target: "/workspace", readOnly: false }),
        paths,
      ),
    );
  });

  it("gives bwrap an environment with nothing of the server's", () => {
    assert.deepEqual(Object.keys(bwrapEnv()).sort(), ["LANG", "PATH"]);
  });
});
