// The container of a box, field by field: boxd first through box-userns, every capability
// dropped but boxd's, no_new_privileges, no network, the limits, the labels, and exactly
// the mounts a local box has (system folders and /etc read-only, the spec's, boxd's parts).
import assert from "node:assert/strict";
import { test } from "node:test";
import { sampleSpec } from "../../../test/support/box-spec.js";
import type { BoxSpec } from "../types.js";
import { containerConfig, containerName, type ContainerParts } from "./container.js";

const spec: BoxSpec = sampleSpec({
  id: "mch_1",
  org: "org_1",
  provider: "oci",
  state: "/s",
  cpus: 1.5,
  tmpMib: 64,
  contracts: false,
  egress: true,
});

const parts: ContainerParts = {
  image: "warren-box:latest",
  systemDirs: [
    { path: "/usr", kind: "dir" },
    { path: "/bin", kind: "symlink", target: "usr/bin" },
  ],
  etcNames: ["ld.so.cache", "hosts", "mtab"],
  etcFiles: { hosts: "/s/run/box-files/etc.hosts", passwd: "/s/run/oci-boxes/mch_1/passwd" },
  boxdBinary: "/p/dist/native/boxd",
  spawnHelper: "/p/dist/native/boxd-spawn",
  userns: "/p/dist/native/box-userns",
  warrenSecret: "/p/dist/native/warren-secret",
  seccompFile: "/s/run/box-files/seccomp.bpf",
  socketDir: "/s/run/oci-boxes/mch_1/boxd",
  callsDir: "/s/run/oci-boxes/mch_1/calls",
  cgroups: [{ name: "memory", dir: "/sys/fs/cgroup/memory/warren-oci/mch_1/agents" }],
  cgroupVersion: 1,
  boxRootId: 2_000_000,
  orphanAfterS: 300,
  nofile: 8192,
  nproc: 16384,
};

test("boxd is the container's first process, through box-userns, with a local box's arguments", () => {
  const c = containerConfig(spec, parts);
  assert.equal(c.Image, "warren-box:latest");
  // the engine's cgroup tree at /sys/fs/cgroup unmounted and gone before boxd starts
  assert.deepEqual(c.Entrypoint.slice(0, 7), [
    "/run/warren/box-userns",
    "--root-id",
    "2000000",
    "--hide",
    "/sys/fs/cgroup",
    "--",
    "/run/warren/boxd",
  ]);
  const args = c.Entrypoint.join(" ");
  assert.match(args, /--socket \/run\/boxd\/boxd\.sock/);
  assert.match(args, /--calls-socket \/run\/calls\/calls\.sock/);
  assert.match(args, /--cgroup memory=\/run\/warren\/cg\/memory/);
  assert.match(args, /--bridge egress=3128/);
  assert.match(args, /--orphan-after-s 300/);
  assert.deepEqual(c.Cmd, []);
  assert.deepEqual(c.Env, [], "nothing of the server's environment");
  assert.equal(c.Hostname, "box");
  assert.deepEqual(c.Labels, spec.labels);
  assert.equal(containerName("mch_1"), "warren-box-mch_1");
});

test("the OCI runtime found is asked for by name; none found, the engine's default", () => {
  assert.equal(containerConfig(spec, { ...parts, runtime: "runc" }).HostConfig.Runtime, "runc");
  assert.equal("Runtime" in containerConfig(spec, parts).HostConfig, false);
});

test("privileges, network and limits", () => {
  const h = containerConfig(spec, parts).HostConfig;
  assert.deepEqual(h.CapDrop, ["ALL"]);
  assert.deepEqual(h.CapAdd, [
    "CAP_SETUID",
    "CAP_SETGID",
    "CAP_SETPCAP",
    "CAP_KILL",
    "CAP_SYS_ADMIN",
    "CAP_DAC_READ_SEARCH",
  ]);
  assert.deepEqual(h.SecurityOpt, ["no-new-privileges"]);
  assert.equal(h.NetworkMode, "none");
  assert.equal(h.ReadonlyRootfs, true);
  assert.equal(h.Memory, 512 * 1024 * 1024);
  assert.equal(h.NanoCpus, 1_500_000_000);
  assert.equal(h.PidsLimit, 4096);
  assert.equal(h.IpcMode, "private");
  assert.equal(h.Init, false, "boxd is pid 1, no init of the engine's");
  assert.deepEqual(h.RestartPolicy, { Name: "no" });
  assert.deepEqual(h.Ulimits, [
    { Name: "nofile", Soft: 8192, Hard: 8192 },
    { Name: "nproc", Soft: 16384, Hard: 16384 },
  ]);
});

test("mounts: system folders and /etc read-only, the spec's as given, boxd's parts", () => {
  const m = containerConfig(spec, parts).HostConfig.Mounts;
  const at = (target: string) => m.filter((x) => x.Target === target);
  assert.deepEqual(at("/usr"), [
    {
      Type: "bind",
      Source: "/usr",
      Target: "/usr",
      ReadOnly: true,
      BindOptions: { Propagation: "rprivate" },
    },
  ]);
  assert.equal(at("/bin").length, 0, "a usrmerge link is the image's, not a mount");
  assert.equal(at("/etc/ld.so.cache")[0]?.ReadOnly, true);
  assert.equal(
    at("/etc/hosts")[0]?.Source,
    "/s/run/box-files/etc.hosts",
    "the box's own /etc/hosts, not the host's",
  );
  assert.equal(at("/etc/hosts").length, 1);
  assert.equal(at("/etc/mtab").length, 0);
  assert.equal(at("/etc/passwd")[0]?.Source, "/s/run/oci-boxes/mch_1/passwd");
  assert.deepEqual(at("/home")[0], {
    Type: "bind",
    Source: "/s/workspaces/mch_1",
    Target: "/home",
    ReadOnly: false,
    BindOptions: { Propagation: "rprivate" },
  });
  assert.equal(at("/data")[0]?.ReadOnly, true);
  assert.deepEqual(at("/tmp"), [
    { Type: "tmpfs", Target: "/tmp", TmpfsOptions: { SizeBytes: 64 << 20, Mode: 0o1777 } },
  ]);
  for (const [target, ro] of [
    ["/run/warren/boxd", true],
    ["/run/warren/boxd-spawn", true],
    ["/run/warren/box-userns", true],
    ["/run/warren/seccomp.bpf", true],
    ["/run/warren/cg/memory", false],
    ["/run/boxd", false],
    ["/run/calls", false],
    ["/opt/warren/bin/warren-secret", true],
  ] as const)
    assert.equal(at(target)[0]?.ReadOnly, ro, target);
  assert.equal(new Set(m.map((x) => x.Target)).size, m.length, "no two mounts on one target");
});

test("a /tmp is added when the spec has none, and a bad cgroup name is refused", () => {
  const noTmp = { ...spec, mounts: spec.mounts.filter((x) => x.target !== "/tmp") };
  const tmp = containerConfig(noTmp, parts).HostConfig.Mounts.filter((x) => x.Target === "/tmp");
  assert.deepEqual(tmp, [
    { Type: "tmpfs", Target: "/tmp", TmpfsOptions: { SizeBytes: 64 << 20, Mode: 0o1777 } },
  ]);
  assert.throws(
    () => containerConfig(spec, { ...parts, cgroups: [{ name: "../x", dir: "/x" }] }),
    /bad cgroup/,
  );
});

test("a machine's own image: the container's image, none of the host's system folders or /etc, the same walls", () => {
  const c = containerConfig({ ...spec, image: "localhost/tools:1" }, parts);
  assert.equal(c.Image, "localhost/tools:1");
  const targets = c.HostConfig.Mounts.map((m) => m.Target);
  assert.ok(!targets.includes("/usr"), "the image's /usr, not the host's");
  assert.ok(!targets.includes("/etc/ld.so.cache"), "the image's /etc, not the host's");
  // warren's generated /etc files and boxd's parts stay
  assert.ok(targets.includes("/etc/passwd") && targets.includes("/etc/hosts"));
  assert.ok(targets.includes("/run/warren/boxd") && targets.includes("/home"));
  const plain = containerConfig(spec, parts);
  assert.deepEqual(c.Entrypoint, plain.Entrypoint);
  assert.deepEqual(
    { ...c.HostConfig, Mounts: [] },
    { ...plain.HostConfig, Mounts: [] },
    "the same user, capabilities, seccomp, read-only root, no network and limits",
  );
});

test("a gpu machine's devices are the container's, at their own paths; none without", () => {
  const c = containerConfig({ ...spec, devices: ["/dev/nvidia0", "/dev/dri/renderD128"] }, parts);
  assert.deepEqual(c.HostConfig.Devices, [
    { PathOnHost: "/dev/nvidia0", PathInContainer: "/dev/nvidia0", CgroupPermissions: "rw" },
    { PathOnHost: "/dev/dri/renderD128", PathInContainer: "/dev/dri/renderD128", CgroupPermissions: "rw" },
  ]);
  assert.equal(containerConfig(spec, parts).HostConfig.Devices, undefined);
});
