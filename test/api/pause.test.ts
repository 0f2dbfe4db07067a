// Pausing machines through the API on real boxes: `POST /api/machines/:id/pause` freezes
// the box in memory (`state: "paused"`), the next command resumes it with every file and
// process as it was, and the idle timer pauses a box first (BOX_PAUSE_S) and stops it
// after a longer idle (BOX_IDLE_S).
import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { newId } from "../../src/ids.js";
import { boxSkipReason } from "../box/fixture.js";
import { startTestServer, type TestServer } from "../support/server.js";

describe("pausing a machine through the API", { skip: boxSkipReason() ?? false }, () => {
  let t: TestServer;
  let org: { id: string };
  let machine: { id: string };
  let a: { id: string };

  before(async () => {
    t = await startTestServer({ listen: true, env: { BOX_IDLE_S: "3600", BOX_PAUSE_S: "0" } });
    org = (await t.call("POST", "/api/orgs", { name: "pause" })).body;
    machine = (await t.call("POST", "/api/machines", { org_id: org.id, name: "m", memory_mib: 512 })).body;
    a = (await t.call("POST", "/api/agents", { org_id: org.id, machine_id: machine.id, name: "a" })).body;
  });
  after(async () => t.close());

  const exec = (body: unknown) => t.call("POST", `/api/agents/${a.id}/exec`, body);
  const machineNow = async () => (await t.call("GET", `/api/machines/${machine.id}`)).body;

  test("a paused box keeps its files and processes and is resumed by the next command, 20 times", async () => {
    const bg = await exec({
      command:
        "echo in-memory > /tmp/kept; setsid sh -c 'echo $$ > pid; while :; do sleep 1; done' > /dev/null 2>&1 < /dev/null &",
    });
    assert.equal(bg.status, 200, JSON.stringify(bg.body));
    const pid = (await exec({ command: "cat pid" })).body.stdout;
    assert.match(pid, /^\d+\n$/);
    for (let cycle = 0; cycle < 20; cycle++) {
      assert.equal((await exec({ command: `echo ${cycle} > cycle-${cycle}` })).body.exit_code, 0);
      const p = await t.call("POST", `/api/machines/${machine.id}/pause`);
      assert.equal(p.status, 200, JSON.stringify(p.body));
      assert.equal(p.body.state, "paused");
      assert.equal(p.body.state_reason, "paused by an operator");
      assert.equal((await t.server.provider.inspect(machine.id))?.state, "paused");
      const r = await exec({ command: `cat /tmp/kept cycle-${cycle} pid; kill -0 $(cat pid) && echo alive` });
      assert.equal(r.status, 200, JSON.stringify(r.body));
      assert.equal(r.body.stdout, `in-memory\n${cycle}\n${pid}alive\n`, `cycle ${cycle}`);
      const m = await machineNow();
      assert.equal(m.state, "running");
      assert.equal(m.state_reason, "resumed on demand");
    }
    const running = (await t.server.provider.list()).filter((x) => x.state === "running");
    assert.equal(running.length, 1, "one box, resumed each time, never a second one");
  });

  test("pausing a stopped machine leaves it stopped; stopping a paused one stops it", async () => {
    await t.call("POST", `/api/machines/${machine.id}/pause`);
    const stop = await t.call("POST", `/api/machines/${machine.id}/stop`);
    assert.equal(stop.body.state, "stopped");
    assert.equal((await t.server.provider.inspect(machine.id))?.state, "stopped");
    const again = await t.call("POST", `/api/machines/${machine.id}/pause`);
    assert.equal(again.status, 200);
    assert.equal(again.body.state, "stopped");
    const r = await exec({ command: "cat /tmp/kept 2>/dev/null || echo fresh; cat cycle-19" });
    assert.equal(r.body.stdout, "fresh\n19\n", "a stopped box starts afresh with its files");
  });

  test("a machine that does not exist is not found, and a bad id is refused", async () => {
    const other = await t.call("POST", `/api/machines/${newId("mch")}/pause`);
    assert.equal(other.status, 404);
    assert.equal(other.body.error.code, "not_found");
    const bad = await t.call("POST", `/api/machines/nope/pause`);
    assert.equal(bad.status, 400);
  });
});

describe("the idle timer pauses first, then stops", { skip: boxSkipReason() ?? false }, () => {
  let t: TestServer;
  before(async () => {
    t = await startTestServer({ listen: true, env: { BOX_IDLE_S: "4", BOX_PAUSE_S: "1" } });
  });
  after(async () => t.close());

  test("an idle box is paused after BOX_PAUSE_S and stopped after BOX_IDLE_S", async () => {
    const org = (await t.call("POST", "/api/orgs", { name: "idle" })).body;
    const machine = (await t.call("POST", "/api/machines", { org_id: org.id, name: "m", memory_mib: 512 }))
      .body;
    const a = (await t.call("POST", "/api/agents", { org_id: org.id, machine_id: machine.id, name: "a" }))
      .body;
    const exec = (command: string) => t.call("POST", `/api/agents/${a.id}/exec`, { command });
    assert.equal((await exec("echo kept > /tmp/kept")).body.exit_code, 0);
    const until = async (state: string): Promise<{ state: string; state_reason: string }> => {
      for (let i = 0; i < 300; i++) {
        const m = (await t.call("GET", `/api/machines/${machine.id}`)).body;
        if (m.state === state) return m;
        await new Promise((res) => setTimeout(res, 50));
      }
      throw new Error(`the machine never became ${state}`);
    };
    const paused = await until("paused");
    assert.equal(paused.state_reason, "idle for 1 s");
    // resumed by a command, in memory as it was, then idle again: paused, then stopped
    assert.equal((await exec("cat /tmp/kept")).body.stdout, "kept\n");
    await until("paused");
    const stopped = await until("stopped");
    assert.equal(stopped.state_reason, "idle for 4 s");
    assert.equal((await t.server.provider.list()).filter((x) => x.state !== "stopped").length, 0);
  });
});

describe("a paused box across a server restart", { skip: boxSkipReason() ?? false }, () => {
  test("is adopted paused, and the next command resumes it as it was", async () => {
    const stateRoot = await mkdtemp(path.join(os.tmpdir(), "warren-test-"));
    const env = { BOX_IDLE_S: "3600", BOX_PAUSE_S: "0" };
    let second: TestServer | undefined;
    const first = await startTestServer({ listen: true, stateRoot, env });
    try {
      const org = (await first.call("POST", "/api/orgs", { name: "restart" })).body;
      const m = (await first.call("POST", "/api/machines", { org_id: org.id, name: "m", memory_mib: 512 }))
        .body;
      const a = (await first.call("POST", "/api/agents", { org_id: org.id, machine_id: m.id, name: "a" }))
        .body;
      const setup = await first.call("POST", `/api/agents/${a.id}/exec`, {
        command: "echo kept > /tmp/kept; setsid sleep 600 > /dev/null 2>&1 < /dev/null & echo $! > pid",
      });
      assert.equal(setup.body.exit_code, 0, setup.body.stderr);
      assert.equal((await first.call("POST", `/api/machines/${m.id}/pause`)).body.state, "paused");
      await first.server.close(); // boxes go on, paused
      second = await startTestServer({ listen: true, stateRoot, env });
      const adopted = (await second.call("GET", `/api/machines/${m.id}`)).body;
      assert.equal(adopted.state, "paused");
      assert.equal(adopted.state_reason, "adopted paused after a server restart");
      const r = await second.call("POST", `/api/agents/${a.id}/exec`, {
        command: "cat /tmp/kept; kill -0 $(cat pid) && echo alive",
      });
      assert.equal(r.status, 200, JSON.stringify(r.body));
      assert.equal(r.body.stdout, "kept\nalive\n");
      assert.equal((await second.call("GET", `/api/machines/${m.id}`)).body.state, "running");
    } finally {
      if (second) await second.close();
      else for (const b of await first.server.provider.list()) await first.server.provider.remove(b.id);
      await rm(stateRoot, { recursive: true, force: true });
    }
  });
});
