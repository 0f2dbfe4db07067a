// Warm boxes on real local boxes: a pool started ahead (BOX_WARM_POOL) that a machine's
// first start claims; the box then is the machine's in every way (its folder at /home, its
// agents' users, its labels, its limits), and the pool fills again.
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { BOXD_RESERVE } from "../../src/boxes/kit/cgroup-plan.js";
import type { OciProvider } from "../../src/boxes/oci/provider.js";
import { boxSkipReason, waitFor } from "../box/fixture.js";
import { startTestServer, type TestServer } from "../support/server.js";

const oci = process.env.WARREN_PROVIDER === "oci";

describe("warm boxes", { skip: boxSkipReason() ?? false }, () => {
  let t: TestServer;
  before(async () => {
    t = await startTestServer({ listen: true, env: { BOX_WARM_POOL: "1", BOX_IDLE_S: "3600" } });
  });
  after(async () => t.close());

  /** The box's own process: a local box's outer pid, an oci box's container (by its engine id). */
  const identity = async (id: string): Promise<unknown> => {
    if (!oci) return (await t.server.provider.inspect(id))?.pid;
    const r = await (t.server.provider as OciProvider).engine.request(
      "GET",
      `/containers/${(t.server.provider as OciProvider).containerOf(id)}/json`,
    );
    assert.equal(r.status, 200, `the container of ${id}`);
    const c = r.body as { Id: string; HostConfig: { Memory: number }; State: { Pid: number } };
    return { id: c.Id, pid: c.State.Pid };
  };
  const containerMemory = async (id: string): Promise<number> => {
    const r = await (t.server.provider as OciProvider).engine.request(
      "GET",
      `/containers/${(t.server.provider as OciProvider).containerOf(id)}/json`,
    );
    // the kernel's limit on the container's process (an engine's inspect may show the first)
    const pid = (r.body as { State: { Pid: number } }).State.Pid;
    const lines = fs.readFileSync(`/proc/${pid}/cgroup`, "utf8").split("\n");
    const v1 = lines.find((l) => /^\d+:([^:]*,)?memory(,[^:]*)?:/.test(l));
    const file = v1
      ? path.join("/sys/fs/cgroup/memory", v1.split(":")[2]!, "memory.limit_in_bytes")
      : path.join("/sys/fs/cgroup", lines.find((l) => l.startsWith("0::"))!.slice(3), "memory.max");
    return Number(fs.readFileSync(file, "utf8").trim());
  };

  test("a machine's first start claims the warm box, which becomes the machine's", async () => {
    await waitFor("the pool to fill", () => t.server.runtime.warmReady === 1, 20_000);
    const [warm] = await t.server.provider.list({ "warren.warm": "1" });
    assert.ok(warm, "a warm box is running");
    assert.equal(warm.state, "running");
    const warmDir = t.server.provider.homes.machineDir(warm.id);
    const warmIdentity = await identity(warm.id);
    assert.ok(fs.existsSync(warmDir));

    const org = (await t.call("POST", "/api/orgs", { name: "warm" })).body;
    const machine = (await t.call("POST", "/api/machines", { org_id: org.id, name: "m", memory_mib: 768 }))
      .body;
    const a = (await t.call("POST", "/api/agents", { org_id: org.id, machine_id: machine.id, name: "a" }))
      .body;
    const t0 = process.hrtime.bigint();
    const r = await t.call("POST", `/api/agents/${a.id}/exec`, {
      command: "id -un; pwd; echo mine > file; cat /proc/self/cgroup | grep -c memory",
    });
    const firstExecMs = Number(process.hrtime.bigint() - t0) / 1e6;
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.equal(r.body.exit_code, 0, r.body.stderr);
    const [user, cwd] = (r.body.stdout as string).split("\n");
    assert.equal(user, a.id, "the agent is a user of the box (its passwd was read again)");
    assert.equal(cwd, a.home);
    // the same box, now the machine's: its labels, its folder, no warm folder left
    const boxes = await t.server.provider.list();
    const mine = boxes.find((b) => b.id === machine.id);
    assert.ok(mine, "the machine has its box");
    assert.equal(mine.state, "running");
    assert.equal(mine.labels["warren.machine"], machine.id);
    assert.equal(mine.labels["warren.org"], org.id);
    assert.equal(mine.labels["warren.warm"], undefined);
    assert.deepEqual(await identity(machine.id), warmIdentity, "the warm box itself, not a cold start");
    const warmNow = (await t.server.provider.list({ "warren.warm": "1" })).map((b) => b.id);
    assert.ok(!warmNow.includes(machine.id) && !warmNow.includes(warm.id), "the claimed box is warm no more");
    assert.equal(fs.existsSync(warmDir), false);
    const hostFile = path.join(t.server.provider.homes.homeDir(machine.id, a.id), "file");
    assert.equal(fs.readFileSync(hostFile, "utf8"), "mine\n");
    // the machine's limits reached the box's cgroups
    const usage = await t.server.provider.usage(machine.id);
    assert.equal(usage?.agents.memoryLimitBytes, 768 * 1024 * 1024);
    assert.equal(usage?.box.memoryLimitBytes, (768 + BOXD_RESERVE.memoryMib) * 1024 * 1024);
    // the container's own (boxd's alone) follow just after the claim (src/boxes/oci/warm.ts)
    if (oci)
      await waitFor(
        "the container's limits to be the machine's",
        async () => (await containerMemory(machine.id)) === 768 * 1024 * 1024,
        10_000,
      );
    console.log(`first exec on a claimed warm box: ${firstExecMs.toFixed(1)} ms`);

    // the pool fills again, and the machine's box stops and starts with its files
    await waitFor("the pool to fill again", () => t.server.runtime.warmReady === 1, 20_000);
    assert.equal((await t.call("POST", `/api/machines/${machine.id}/stop`)).body.state, "stopped");
    const again = await t.call("POST", `/api/agents/${a.id}/exec`, { command: "cat file" });
    assert.equal(again.body.stdout, "mine\n");
    assert.notDeepEqual(
      await identity(machine.id),
      warmIdentity,
      "a later start is the machine's own (no warm box)",
    );
    assert.equal(t.server.runtime.warmReady, 1, "only a first start claims");
  });
});
