// A box never outlives its owner: boxd stops its box when no server has been in touch for
// orphan_after_s (and no command runs), or when its state folder is removed (a server
// SIGKILLed and its STATE_ROOT deleted leaves nobody to stop it otherwise).
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { describe, test } from "node:test";
import { cgroupPlan, destroyBoxCgroups, detectLayout } from "../../src/boxes/kit/cgroups.js";
import { boxdHostPid, boxSkipReason, makeBox } from "../box/fixture.js";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function waitGone(id: string, ms = 30_000): Promise<number> {
  const t0 = Date.now();
  while (boxdHostPid(id) !== null) {
    if (Date.now() - t0 > ms) throw new Error(`boxd of ${id} still runs after ${ms} ms`);
    await sleep(100);
  }
  return Date.now() - t0;
}

/** Processes of the host whose real uid is `uid`. */
function processesOf(uid: number): number[] {
  const out: number[] = [];
  for (const name of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const m = /^Uid:\s+(\d+)/m.exec(fs.readFileSync(`/proc/${name}/status`, "utf8"));
      if (m && Number(m[1]) === uid) out.push(Number(name));
    } catch {
      // gone
    }
  }
  return out;
}

async function waitNoProcesses(uid: number, ms = 15_000): Promise<void> {
  const t0 = Date.now();
  while (processesOf(uid).length > 0) {
    if (Date.now() - t0 > ms)
      throw new Error(`processes of uid ${uid} survive the box: ${processesOf(uid).join(", ")}`);
    await sleep(100);
  }
}

describe("boxes never outlive their owner", { skip: boxSkipReason() ?? false }, () => {
  test("no server contact for orphan_after_s: boxd stops the box; pings and a running command keep it", async () => {
    const box = await makeBox({ agents: 1, orphanAfterS: 2 });
    try {
      assert.equal((await box.sh("echo hi")).out, "hi\n");
      // a server that pings keeps the box
      for (let i = 0; i < 8; i++) {
        await box.client().ping();
        await sleep(500);
      }
      assert.notEqual(boxdHostPid(box.id), null, "pinged every 0.5 s, the box stays");
      // a command running longer than orphan_after_s keeps it too
      const long = await box.sh("sleep 4; echo done", { timeoutMs: 30_000 });
      assert.equal(long.out, "done\n");
      // then silence: the box stops by itself
      await box.sh("sleep 1000 >/dev/null 2>&1 &");
      await waitGone(box.id);
      await waitNoProcesses(box.agents[0]!.uid); // the background process ended with the box
      const log = fs.readFileSync(path.join(box.stateRoot, "run", "boxes", box.id, "box.log"), "utf8");
      assert.match(log, /no server contact for 2 s and no command running: stopping the box/);
      assert.equal((await box.provider.inspect(box.id))?.state, "stopped");
    } finally {
      await box.cleanup();
    }
  });

  test("its state folder removed (server gone, STATE_ROOT deleted): boxd stops the box", async () => {
    const box = await makeBox({ agents: 1, orphanAfterS: 0 });
    const layout = detectLayout();
    assert.ok(layout);
    const dirs = cgroupPlan(box.spec.limits, layout, { parent: "warren-test", boxId: box.id }).boxDirs;
    try {
      await box.sh("sleep 1000 >/dev/null 2>&1 &");
      assert.equal(processesOf(box.agents[0]!.uid).length, 1);
      fs.rmSync(path.join(box.stateRoot, "run"), { recursive: true, force: true });
      await waitGone(box.id);
      await waitNoProcesses(box.agents[0]!.uid); // the agents' processes ended with the box
    } finally {
      await box.cleanup();
      await destroyBoxCgroups(dirs); // the empty cgroups the host keeps
    }
  });
});
