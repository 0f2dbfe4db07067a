// A server killed with SIGKILL while boxes run: the next one adopts the boxes it knows,
// reaps the others, marks the runs that were going on as lost, and never makes a second
// box for a machine.
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { mkdir, mkdtemp } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { test } from "node:test";
import { crashableServe } from "../support/recovery.js";
import { builtCli } from "../support/serve.js";
import { boxSkipReason } from "../box/fixture.js";

const cli = builtCli;

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

test(
  "SIGKILL while boxes run: adopt, reap, lost runs",
  { skip: boxSkipReason() ?? (existsSync(cli) ? false : "dist/cli/main.js is missing: run npm run build") },
  async () => {
    const stateRoot = await mkdtemp(path.join(os.tmpdir(), "warren-recovery-"));
    const served = await crashableServe(stateRoot);
    const { call, provider } = served;
    try {
      await served.start();
      const org = (await call("POST", "/api/orgs", { name: "r" })).body;
      const machines = [];
      const agents = [];
      for (const n of ["m1", "m2"]) {
        const m = (await call("POST", "/api/machines", { org_id: org.id, name: n })).body;
        const a = (await call("POST", "/api/agents", { org_id: org.id, machine_id: m.id, name: `a-${n}` }))
          .body;
        const e = await call("POST", `/api/agents/${a.id}/exec`, {
          command: "echo $WARREN_AGENT_ID > me.txt",
        });
        assert.equal(e.body.exit_code, 0);
        machines.push(m);
        agents.push(a);
      }
      const run = (
        await call("POST", `/api/agents/${agents[0].id}/runs`, { kind: "command", command: "sleep 300" })
      ).body;
      for (let i = 0; i < 100 && (await call("GET", `/api/runs/${run.id}`)).body.status !== "running"; i++)
        await new Promise((r) => setTimeout(r, 30));
      // a run queued behind it: nothing of it ran when the server died
      const queued = (
        await call("POST", `/api/agents/${agents[0].id}/runs`, { kind: "command", command: "touch ran.txt" })
      ).body;
      assert.equal(queued.status, "queued");

      // a box no machine of this server knows: labelled for a machine that does not exist
      const strayId = "mch_zzzzzzzzzzzzzzzz";
      const strayDir = path.join(stateRoot, "workspaces", strayId);
      await mkdir(strayDir, { recursive: true });
      await provider.create({
        id: strayId,
        labels: {
          "warren.kind": "machine",
          "warren.org": org.id,
          "warren.machine": strayId,
          "warren.provider": "local",
        },
        mounts: [{ kind: "bind", source: strayDir, target: "/home", readOnly: false }],
        limits: { memoryMib: 256, cpus: 1, pids: 4096, tmpMib: 64 },
      });
      const stray = await provider.start(strayId);

      const before = new Map((await provider.list()).map((b) => [b.id, b.pid]));
      assert.equal(before.size, 3);

      await served.crash();
      for (const [id, pid] of before) assert.ok(pid && alive(pid), `box ${id} survives the server's death`);

      await served.start();

      const after = await provider.list();
      assert.deepEqual(
        after.map((b) => b.id).sort(),
        machines.map((m) => m.id).sort(),
        "the stray box is reaped, the known ones stay",
      );
      for (const b of after) assert.equal(b.pid, before.get(b.id), `machine ${b.id} keeps its one box`);
      assert.ok(stray.pid !== null && !alive(stray.pid), "the stray box's processes are gone");
      for (const m of machines) {
        const got = (await call("GET", `/api/machines/${m.id}`)).body;
        assert.equal(got.state, "running");
        assert.equal(got.state_reason, "adopted after a server restart");
      }
      const lost = (await call("GET", `/api/runs/${run.id}`)).body;
      assert.equal(lost.status, "lost");
      assert.match(lost.status_reason, /server stopped/);
      assert.ok(lost.ended_at);
      const lostQueued = (await call("GET", `/api/runs/${queued.id}`)).body;
      assert.equal(lostQueued.status, "lost", "a queued run is not started by the next server");
      assert.match(lostQueued.status_reason, /before the run started \(nothing of it ran\); start it again/);
      assert.equal(lostQueued.started_at, null);
      assert.equal(lostQueued.waiting, undefined);
      const ran = await call("POST", `/api/agents/${agents[0].id}/exec`, { command: "test -e ran.txt" });
      assert.equal(ran.body.exit_code, 1, "the queued run never ran");
      for (const a of agents) {
        const e = await call("POST", `/api/agents/${a.id}/exec`, { argv: ["cat", "me.txt"] });
        assert.equal(e.body.stdout, `${a.id}\n`);
      }
      const ps = await call("POST", `/api/agents/${agents[0].id}/exec`, {
        command: "ps -eo args | grep 'sleep 300' | grep -v grep || true",
      });
      assert.equal(ps.body.stdout, "", "the lost run's processes were killed with its connection");
      assert.equal((await provider.list()).length, 2, "no second box was made for an adopted machine");
    } finally {
      await served.close();
    }
  },
);
