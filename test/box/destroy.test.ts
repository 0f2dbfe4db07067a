// Destroying a box's cgroups while a cgroup below is frozen by itself: boxd freezes a
// command's cgroup to kill it, and a stop that SIGKILLs boxd between that freeze and its
// thaw leaves the cgroup frozen. Its processes, SIGKILLed, would wait in the freezer and
// the box could never be removed (a machine stop answered 500 after 10 s).
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { test } from "node:test";
import { cgroupPlan, destroyBoxCgroups, detectLayout, freezeCgroup } from "../../src/boxes/kit/cgroups.js";

const layout = process.getuid?.() === 0 ? detectLayout() : null;
const freezable = (dirs: string[]) =>
  dirs.some(
    (d) => fs.existsSync(path.join(d, "freezer.state")) || fs.existsSync(path.join(d, "cgroup.freeze")),
  );

test(
  "a command's cgroup left frozen by a killed boxd does not keep the box's cgroups from going",
  { skip: layout ? false : "needs root and a cgroup layout for boxes" },
  async () => {
    const boxId = `destroy-${randomBytes(4).toString("hex")}`;
    const boxDirs = cgroupPlan({ memoryMib: 256, cpus: 1, pids: 64, tmpMib: 16 }, layout!, {
      parent: "warren-test",
      boxId,
    }).boxDirs;
    const commandDirs = boxDirs.map((d) => path.join(d, "agents", "x1-frozen"));
    for (const d of commandDirs) fs.mkdirSync(d, { recursive: true });
    assert.ok(freezable(commandDirs), "this host's box cgroups have a freezer");
    const sleeper = spawn("sleep", ["600"], { stdio: "ignore" });
    const ended = new Promise<NodeJS.Signals | null>((r) => sleeper.once("exit", (_c, s) => r(s)));
    try {
      for (const d of commandDirs) fs.writeFileSync(path.join(d, "cgroup.procs"), String(sleeper.pid));
      // the box is frozen for the kill; boxd, in the middle of its own kill round, froze
      // the command's cgroup and is SIGKILLed before it thaws it
      await destroyBoxCgroups(boxDirs, 10_000, () => freezeCgroup(commandDirs, true));
      assert.equal(await ended, "SIGKILL");
      for (const d of boxDirs) assert.equal(fs.existsSync(d), false, `${d} is removed`);
    } finally {
      freezeCgroup(commandDirs, false);
      if (sleeper.exitCode === null && sleeper.signalCode === null) sleeper.kill("SIGKILL");
      await ended;
      await destroyBoxCgroups(boxDirs).catch(() => undefined);
    }
  },
);
