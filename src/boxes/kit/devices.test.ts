// The gpu capability's device list, read from a made-up /dev (this host may have no GPU), and
// how each provider passes it: bubblewrap's --dev-bind on local.
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { test } from "node:test";
import { bwrapArgv, type BwrapPaths } from "../local/bwrap.js";
import { sampleSpec } from "../../../test/support/box-spec.js";
import type { BoxSpec } from "../types.js";
import { gpuDevices } from "./devices.js";

test("the GPU devices under a /dev: NVIDIA's, AMD's kfd, /dev/dri's nodes; nothing else", () => {
  const dev = mkdtempSync(path.join(os.tmpdir(), "warren-dev-"));
  try {
    assert.deepEqual(gpuDevices(dev), [], "no GPU: an empty list");
    for (const f of ["null", "nvidia0", "nvidia1", "nvidiactl", "nvidia-uvm", "nvidia-foo", "kfd", "tty0"])
      writeFileSync(path.join(dev, f), "");
    mkdirSync(path.join(dev, "dri"));
    for (const f of ["renderD128", "card0", "by-path"]) writeFileSync(path.join(dev, "dri", f), "");
    assert.deepEqual(gpuDevices(dev), [
      `${dev}/kfd`,
      `${dev}/nvidia-uvm`,
      `${dev}/nvidia0`,
      `${dev}/nvidia1`,
      `${dev}/nvidiactl`,
      `${dev}/dri/card0`,
      `${dev}/dri/renderD128`,
    ]);
    assert.deepEqual(gpuDevices(path.join(dev, "missing")), []);
  } finally {
    rmSync(dev, { recursive: true, force: true });
  }
});

test("a local box binds each device at its own path, after its own /dev", () => {
  const local = sampleSpec({ id: "m1", org: "o1", provider: "local", state: "/state", cpus: 1, tmpMib: 128 });
  const spec: BoxSpec = {
    ...local,
    mounts: local.mounts.slice(0, 1),
    devices: ["/dev/nvidia0", "/dev/dri/renderD128"],
  };
  const paths: BwrapPaths = {
    systemDirs: [{ path: "/usr", kind: "dir" }],
    etc: [],
    etcFiles: {},
    boxdBinary: "/w/boxd",
    spawnHelper: "/w/boxd-spawn",
    userns: "/w/box-userns",
    seccompFile: "/s/seccomp.bpf",
    socketDir: "/s/boxd",
    boxRootId: 2_000_000,
    cgroups: [],
    cgroupVersion: 2,
  };
  const a = bwrapArgv(spec, paths);
  const dev = a.findIndex((x, i) => x === "--dev" && a[i + 1] === "/dev");
  const at = (d: string) => a.findIndex((x, i) => x === "--dev-bind" && a[i + 1] === d && a[i + 2] === d);
  assert.ok(dev >= 0 && at("/dev/nvidia0") > dev && at("/dev/dri/renderD128") > dev, a.join(" "));
  assert.equal(bwrapArgv({ ...spec, devices: undefined }, paths).includes("--dev-bind"), false);
});
