// Pausing a real local box: its whole cgroup tree frozen in memory, then thawed. Every file
// (home and the in-memory /tmp) and every process (the same pids, their memory) is as it
// was, across 20 cycles; a paused box is not running, answers nothing, and is resumed by
// start() too; stopping a paused box ends it.
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { boxSkipReason, makeBox, waitFor, type TestBox } from "./fixture.js";

const skip = boxSkipReason();

/** The box's freezer state from its record's cgroups (v1 freezer.state, v2 cgroup.events). */
function freezerState(box: TestBox): string {
  const folder = box.provider.name === "oci" ? "oci-boxes" : "boxes";
  const rec = JSON.parse(
    fs.readFileSync(path.join(box.stateRoot, "run", folder, box.id, "box.json"), "utf8"),
  ) as { cgroupDirs: string[] };
  for (const d of rec.cgroupDirs) {
    const v1 = path.join(d, "freezer.state");
    if (fs.existsSync(v1)) return fs.readFileSync(v1, "utf8").trim();
    const v2 = path.join(d, "cgroup.events");
    if (fs.existsSync(path.join(d, "cgroup.freeze")))
      return /^frozen 1$/m.test(fs.readFileSync(v2, "utf8")) ? "FROZEN" : "THAWED";
  }
  return "none";
}

describe("a paused local box", { skip: skip ?? false }, () => {
  let box: TestBox;
  before(async () => {
    box = await makeBox({ agents: 1 });
  });
  after(async () => {
    await box?.cleanup();
  });

  it("keeps every file and process across 20 pause and resume cycles", async () => {
    const counter = path.join(box.agents[0]!.hostHome, "counter");
    // a process that outlives its command: counts in its own memory, writes the count out
    const bg = await box.sh(
      "echo in-memory > /tmp/kept; setsid sh -c 'echo $$ > pid; i=0; while :; do i=$((i+1)); echo $i > counter.tmp; mv counter.tmp counter; sleep 0.02; done' > /dev/null 2>&1 < /dev/null &",
    );
    assert.equal(bg.exitCode, 0, bg.err);
    await waitFor("the counter", () => fs.existsSync(counter));
    const pid = (await box.sh("cat pid")).out.trim();
    assert.match(pid, /^\d+$/);
    const resumeMs: number[] = [];
    for (let cycle = 0; cycle < 20; cycle++) {
      fs.writeFileSync(path.join(box.agents[0]!.hostHome, `cycle-${cycle}`), `${cycle}\n`);
      await box.provider.pause(box.id);
      assert.equal((await box.provider.inspect(box.id))?.state, "paused");
      assert.equal(freezerState(box), "FROZEN");
      const frozenAt = Number(fs.readFileSync(counter, "utf8"));
      // pausing again is a no-op; the count stands still while the box is frozen
      await box.provider.pause(box.id);
      await assert.rejects(box.client().ping(200), "a frozen boxd does not answer");
      assert.equal(Number(fs.readFileSync(counter, "utf8")), frozenAt);

      const t0 = process.hrtime.bigint();
      const handle = await box.provider.resume(box.id);
      resumeMs.push(Number(process.hrtime.bigint() - t0) / 1e6);
      assert.equal(handle.state, "running");
      assert.equal(freezerState(box), "THAWED");
      const r = await box.sh(`cat /tmp/kept cycle-${cycle}; kill -0 $(cat pid) && echo alive`);
      assert.equal(r.out, `in-memory\n${cycle}\nalive\n`, `cycle ${cycle}: ${r.err}`);
      assert.equal((await box.sh("cat pid")).out.trim(), pid, "the same process, not a new one");
      // the process goes on from where it stood: its count only grows
      await waitFor("the count to go on", () => Number(fs.readFileSync(counter, "utf8")) > frozenAt);
    }
    for (let c = 0; c < 20; c++)
      assert.equal(fs.readFileSync(path.join(box.agents[0]!.hostHome, `cycle-${c}`), "utf8"), `${c}\n`);
    const sorted = [...resumeMs].sort((a, b) => a - b);
    console.log(`resume: median ${sorted[10]?.toFixed(2)} ms, max ${sorted[19]?.toFixed(2)} ms`);
  });

  it("is thawed by start(), and a paused box stops like a running one", async () => {
    await box.provider.pause(box.id);
    const started = await box.provider.start(box.id);
    assert.equal(started.state, "running");
    assert.equal((await box.sh("cat /tmp/kept")).out, "in-memory\n", "thawed, not started afresh");
    await box.provider.pause(box.id);
    await box.provider.stop(box.id);
    assert.equal((await box.provider.inspect(box.id))?.state, "stopped");
    await assert.rejects(box.provider.resume(box.id), /not paused/);
    await assert.rejects(box.provider.pause(box.id), /not running/);
    await box.provider.start(box.id);
    assert.equal((await box.sh("cat /tmp/kept 2>/dev/null || echo fresh")).out, "fresh\n");
  });
});
