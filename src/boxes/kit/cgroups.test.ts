import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, it, test } from "node:test";
import {
  BOXD_RESERVE,
  cgroupPlan,
  chooseLayout,
  commandGroups,
  freezeCgroup,
  killCgroup,
  parseCgroupMounts,
  readCgroupUsage,
  type CgroupLayout,
} from "./cgroups.js";

const MOUNTINFO_V1 = `31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
33 31 0:30 / /sys/fs/cgroup/cpuacct rw,relatime - cgroup cgroup rw,cpuacct
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
36 31 0:33 / /sys/fs/cgroup/devices rw,relatime - cgroup cgroup rw,devices
39 31 0:36 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids
40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
`;

const MOUNTINFO_COMBINED = `32 31 0:29 / /sys/fs/cgroup/cpu,cpuacct rw - cgroup cgroup rw,cpu,cpuacct
35 31 0:32 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory
39 31 0:36 / /sys/fs/cgroup/pids rw - cgroup cgroup rw,pids
`;

const limits = { memoryMib: 512, cpus: 1.5, pids: 4096, tmpMib: 64 };
const MiB = 1024 * 1024;

describe("cgroup layout", () => {
  it("parses v1 hierarchies and v2 mounts from mountinfo", () => {
    const m = parseCgroupMounts(MOUNTINFO_V1);
    assert.deepEqual(
      m.v1.map((h) => [h.controllers.join(","), h.mountPoint]),
      [
        ["cpu", "/sys/fs/cgroup/cpu"],
        ["cpuacct", "/sys/fs/cgroup/cpuacct"],
        ["memory", "/sys/fs/cgroup/memory"],
        ["pids", "/sys/fs/cgroup/pids"],
      ],
    );
    assert.deepEqual(m.v2, ["/sys/fs/cgroup/unified"]);
  });

  it("chooses v1 when the v2 mount has no controllers, v2 when it has them", () => {
    const m = parseCgroupMounts(MOUNTINFO_V1);
    assert.equal(chooseLayout(m, () => false)?.version, 1);
    assert.deepEqual(
      chooseLayout(m, (mp) => mp === "/sys/fs/cgroup/unified"),
      { version: 2, mountPoint: "/sys/fs/cgroup/unified" },
    );
    assert.equal(
      chooseLayout({ v1: [], v2: [] }, () => false),
      null,
    );
    assert.equal(
      chooseLayout(parseCgroupMounts(MOUNTINFO_V1.replace(/.*pids.*\n/, "")), () => false),
      null,
      "pids is required",
    );
  });

  it("leaves out the v1 hierarchies warren uses nothing of", () => {
    // MOUNTINFO_V1 has devices and a named systemd hierarchy too
    const extra = `${MOUNTINFO_V1}42 31 0:41 / /sys/fs/cgroup/blkio rw,relatime - cgroup cgroup rw,blkio\n`;
    const layout = chooseLayout(parseCgroupMounts(extra), () => false);
    assert.equal(layout?.version, 1);
    const points = layout?.version === 1 ? layout.hierarchies.map((h) => h.mountPoint) : [];
    for (const gone of ["devices", "blkio", "systemd"])
      assert.ok(!points.includes(`/sys/fs/cgroup/${gone}`), gone);
    for (const kept of ["memory", "pids", "cpu", "cpuacct"])
      assert.ok(points.includes(`/sys/fs/cgroup/${kept}`), kept);
  });
});

describe("cgroupPlan v1", () => {
  const layout = chooseLayout(parseCgroupMounts(MOUNTINFO_V1), () => false) as CgroupLayout;
  const plan = cgroupPlan(limits, layout, { parent: "warren", boxId: "m1" });
  const value = (dir: string, file: string): string | undefined =>
    plan.writes.find((w) => w.dir === dir && w.file === file)?.value;

  it("creates warren/<id>/{boxd,agents} in each hierarchy, parents first", () => {
    for (const c of ["memory", "pids", "cpu", "cpuacct"]) {
      const base = `/sys/fs/cgroup/${c}/warren`;
      const i = plan.dirs.indexOf(base);
      assert.ok(i >= 0, c);
      assert.ok(plan.dirs.indexOf(`${base}/m1`) > i);
      assert.ok(plan.dirs.indexOf(`${base}/m1/boxd`) > plan.dirs.indexOf(`${base}/m1`));
      assert.ok(plan.dirs.includes(`${base}/m1/agents`));
    }
    assert.deepEqual(
      plan.boxDirs.sort(),
      ["cpu", "cpuacct", "memory", "pids"].map((c) => `/sys/fs/cgroup/${c}/warren/m1`),
    );
  });

  it("sets memory, pids and cpu limits with boxd's reserve on the box", () => {
    assert.equal(
      value("/sys/fs/cgroup/memory/warren/m1", "memory.limit_in_bytes"),
      String((512 + BOXD_RESERVE.memoryMib) * MiB),
    );
    assert.equal(value("/sys/fs/cgroup/memory/warren/m1/agents", "memory.limit_in_bytes"), String(512 * MiB));
    assert.equal(value("/sys/fs/cgroup/pids/warren/m1", "pids.max"), String(4096 + BOXD_RESERVE.pids));
    assert.equal(value("/sys/fs/cgroup/pids/warren/m1/agents", "pids.max"), "4096");
    assert.equal(value("/sys/fs/cgroup/cpu/warren/m1", "cpu.cfs_period_us"), "100000");
    assert.equal(value("/sys/fs/cgroup/cpu/warren/m1", "cpu.cfs_quota_us"), "150000");
  });

  it("writes memsw after the memory limit, and only where it exists", () => {
    const box = "/sys/fs/cgroup/memory/warren/m1";
    const i = plan.writes.findIndex((w) => w.dir === box && w.file === "memory.limit_in_bytes");
    const j = plan.writes.findIndex((w) => w.dir === box && w.file === "memory.memsw.limit_in_bytes");
    assert.ok(j > i);
    assert.equal(plan.writes[j]?.optional, true);
  });

  it("joins boxd's cgroup in every hierarchy and hands agents' folders to boxd", () => {
    assert.equal(plan.joinProcs.length, 4);
    for (const p of plan.joinProcs) assert.match(p, /\/warren\/m1\/boxd\/cgroup\.procs$/);
    assert.deepEqual(plan.agents.map((a) => a.name).sort(), ["cpu", "cpuacct", "memory", "pids"]);
    // v1: box root gets the agents' trees only (moves need write access to the target alone)
    assert.deepEqual(
      plan.delegate.trees,
      plan.agents.map((a) => a.dir),
    );
    assert.deepEqual(plan.delegate.files, []);
  });

  it("names co-mounted controllers together", () => {
    const p = cgroupPlan(
      limits,
      chooseLayout(parseCgroupMounts(MOUNTINFO_COMBINED), () => false) as CgroupLayout,
      { parent: "warren", boxId: "m1" },
    );
    assert.ok(
      p.agents.some(
        (a) => a.name === "cpu,cpuacct" && a.dir === "/sys/fs/cgroup/cpu,cpuacct/warren/m1/agents",
      ),
    );
    assert.ok(
      p.writes.some((w) => w.file === "cpu.cfs_quota_us" && w.dir === "/sys/fs/cgroup/cpu,cpuacct/warren/m1"),
    );
  });

  it("refuses bad names and limits", () => {
    assert.throws(() => cgroupPlan(limits, layout, { parent: "warren", boxId: "../x" }));
    assert.throws(() => cgroupPlan(limits, layout, { parent: "../warren", boxId: "m1" }));
    assert.throws(() => cgroupPlan({ ...limits, cpus: 0 }, layout, { parent: "warren", boxId: "m1" }));
    assert.throws(() => cgroupPlan({ ...limits, memoryMib: 1 }, layout, { parent: "warren", boxId: "m1" }));
  });
});

describe("cgroupPlan v2", () => {
  const plan = cgroupPlan(
    limits,
    { version: 2, mountPoint: "/sys/fs/cgroup" },
    { parent: "warren", boxId: "m1" },
  );
  const value = (dir: string, file: string): string | undefined =>
    plan.writes.find((w) => w.dir === dir && w.file === file)?.value;

  it("enables controllers from the root down to the agents' folder", () => {
    for (const dir of [
      "/sys/fs/cgroup",
      "/sys/fs/cgroup/warren",
      "/sys/fs/cgroup/warren/m1",
      "/sys/fs/cgroup/warren/m1/agents",
    ])
      assert.equal(value(dir, "cgroup.subtree_control"), "+memory +pids +cpu", dir);
    assert.equal(
      value("/sys/fs/cgroup/warren/m1/boxd", "cgroup.subtree_control"),
      undefined,
      "boxd's folder holds processes",
    );
  });

  it("sets v2 limits", () => {
    assert.equal(
      value("/sys/fs/cgroup/warren/m1", "memory.max"),
      String((512 + BOXD_RESERVE.memoryMib) * MiB),
    );
    assert.equal(value("/sys/fs/cgroup/warren/m1", "memory.swap.max"), "0");
    assert.equal(value("/sys/fs/cgroup/warren/m1", "cpu.max"), "150000 100000");
    assert.equal(value("/sys/fs/cgroup/warren/m1/agents", "memory.max"), String(512 * MiB));
    assert.equal(value("/sys/fs/cgroup/warren/m1/agents", "pids.max"), "4096");
    assert.deepEqual(plan.joinProcs, ["/sys/fs/cgroup/warren/m1/boxd/cgroup.procs"]);
    assert.deepEqual(plan.agents, [{ name: "unified", dir: "/sys/fs/cgroup/warren/m1/agents" }]);
    assert.deepEqual(plan.boxDirs, ["/sys/fs/cgroup/warren/m1"]);
    // box root gets the agents' tree, and the box's cgroup.procs (the common ancestor of a
    // move from boxd/ to agents/<x>), never the box's limit files
    assert.deepEqual(plan.delegate, {
      trees: ["/sys/fs/cgroup/warren/m1/agents"],
      files: ["/sys/fs/cgroup/warren/m1/cgroup.procs"],
    });
  });
});

test("readCgroupUsage reads v1 and v2 files; commandGroups lists the commands' folders", () => {
  const root = mkdtempSync(path.join(os.tmpdir(), "warren-cg-"));
  try {
    const mem = path.join(root, "memory");
    const pids = path.join(root, "pids");
    const cpu = path.join(root, "cpu");
    for (const d of [mem, pids, cpu]) mkdirSync(path.join(d, "x1"), { recursive: true });
    writeFileSync(path.join(mem, "memory.usage_in_bytes"), "1048576\n");
    writeFileSync(path.join(mem, "memory.max_usage_in_bytes"), "2097152\n");
    writeFileSync(path.join(mem, "memory.limit_in_bytes"), "9223372036854771712\n");
    writeFileSync(path.join(mem, "memory.failcnt"), "7\n");
    writeFileSync(
      path.join(mem, "memory.stat"),
      "cache 5\nrss 1\ntotal_cache 500\ntotal_rss 1000\ntotal_shmem 24\n",
    );
    writeFileSync(path.join(mem, "memory.oom_control"), "oom_kill_disable 0\nunder_oom 0\noom_kill 2\n");
    writeFileSync(path.join(pids, "pids.current"), "12\n");
    writeFileSync(path.join(pids, "pids.max"), "64\n");
    writeFileSync(path.join(pids, "pids.events"), "max 3\n");
    writeFileSync(path.join(cpu, "cpuacct.usage"), "1500000000\n");
    const u = readCgroupUsage([mem, pids, cpu]);
    assert.deepEqual(u, {
      cpuSeconds: 1.5,
      memoryBytes: 1048576,
      memoryPeakBytes: 2097152,
      unreclaimableBytes: 1024,
      pids: 12,
      oomKills: 2,
      memoryLimitHits: 7,
      pidsLimitHits: 3,
      memoryLimitBytes: null,
      pidsLimit: 64,
    });
    assert.deepEqual(commandGroups([mem, pids]), ["x1"]);
    const v2 = path.join(root, "v2");
    mkdirSync(v2);
    writeFileSync(path.join(v2, "cgroup.controllers"), "memory pids cpu\n");
    writeFileSync(path.join(v2, "cpu.stat"), "usage_usec 250000\nuser_usec 1\n");
    writeFileSync(path.join(v2, "memory.current"), "4096\n");
    writeFileSync(path.join(v2, "memory.stat"), "anon 3000\nfile 1000\nshmem 96\n");
    writeFileSync(path.join(v2, "memory.events"), "low 0\nhigh 0\nmax 4\noom 1\noom_kill 1\n");
    writeFileSync(path.join(v2, "memory.max"), "max\n");
    writeFileSync(path.join(v2, "pids.max"), "max\n");
    const w = readCgroupUsage([v2]);
    assert.equal(w.cpuSeconds, 0.25);
    assert.equal(w.memoryBytes, 4096);
    assert.equal(w.unreclaimableBytes, 3096);
    assert.equal(w.oomKills, 1);
    assert.equal(w.memoryLimitHits, 4);
    assert.equal(w.memoryLimitBytes, null);
    assert.equal(w.pidsLimit, null);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

test("killCgroup: no fork allowed, frozen while signalled, thawed after (a folder per hierarchy)", async () => {
  const root = mkdtempSync(path.join(os.tmpdir(), "warren-cg-kill-"));
  try {
    const pids = path.join(root, "pids");
    const freezer = path.join(root, "freezer");
    for (const d of [pids, freezer]) {
      mkdirSync(d);
      writeFileSync(path.join(d, "cgroup.procs"), "");
    }
    writeFileSync(path.join(pids, "pids.max"), "max");
    // a freezer file that says FROZEN once written (the kernel's FREEZING then FROZEN)
    writeFileSync(path.join(freezer, "freezer.state"), "THAWED\n");
    assert.equal(await killCgroup([pids, freezer]), 0);
    assert.equal(readFileSync(path.join(pids, "pids.max"), "utf8"), "0");
    assert.equal(readFileSync(path.join(freezer, "freezer.state"), "utf8"), "THAWED");
    assert.equal(freezeCgroup([pids], true), false, "no freezer in the pids folder");
    assert.equal(freezeCgroup([freezer], true), true);
    assert.equal(readFileSync(path.join(freezer, "freezer.state"), "utf8"), "FROZEN");
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});
