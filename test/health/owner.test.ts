// With a real `warren serve`: a second server on one STATE_ROOT is refused; after the
// server is SIGKILLed, a box whose state folder is deleted stops itself at once, and the
// others stop after BOX_ORPHAN_S without their server.
import assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, rmSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { test } from "node:test";
import { cgroupPlan, destroyBoxCgroups, detectLayout } from "../../src/boxes/kit/cgroups.js";
import { builtCli, freePort } from "../support/serve.js";
import { boxdHostPid, boxSkipReason } from "../box/fixture.js";

const cli = builtCli;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function start(env: Record<string, string>): { child: ChildProcess; stderr: () => string } {
  let err = "";
  const child = spawn(process.execPath, [cli, "serve"], {
    env: { ...process.env, LOG_LEVEL: "warn", BOX_IDLE_S: "3600", ...env },
    stdio: ["ignore", "ignore", "pipe"],
  });
  child.stderr?.on("data", (c: Buffer) => (err += c.toString()));
  return { child, stderr: () => err };
}

async function healthy(port: number, child: ChildProcess): Promise<void> {
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    try {
      if ((await fetch(`http://127.0.0.1:${port}/health`)).ok) return;
    } catch {
      // not up yet
    }
    if (child.exitCode !== null) throw new Error(`warren serve exited with ${child.exitCode}`);
    await sleep(50);
  }
  throw new Error("warren serve did not become healthy");
}

test(
  "one server per STATE_ROOT; boxes stop without their server",
  { skip: boxSkipReason() ?? (existsSync(cli) ? false : "dist/cli/main.js is missing: run npm run build") },
  async () => {
    const stateRoot = await mkdtemp(path.join(os.tmpdir(), "warren-owner-"));
    const port = await freePort();
    const call = async (method: string, url: string, body?: unknown) => {
      const r = await fetch(`http://127.0.0.1:${port}${url}`, {
        method,
        headers: body ? { "content-type": "application/json" } : {},
        body: body ? JSON.stringify(body) : undefined,
      });
      return (await r.json()) as Record<string, any>;
    };
    const env = {
      STATE_ROOT: stateRoot,
      WARREN_PORT: String(port),
      WARREN_PREVIEW_PORT: "0",
      BOX_ORPHAN_S: "20",
    };
    const server = start(env);
    const ids: string[] = [];
    try {
      await healthy(port, server.child);
      const org = await call("POST", "/api/orgs", { name: "owner" });
      for (const n of ["m1", "m2"]) {
        const m = await call("POST", "/api/machines", { org_id: org.id, name: n });
        const a = await call("POST", "/api/agents", { org_id: org.id, machine_id: m.id, name: `a-${n}` });
        const e = await call("POST", `/api/agents/${a.id}/exec`, { command: "sleep 1000 >/dev/null 2>&1 &" });
        assert.equal(e.exit_code, 0);
        ids.push(m.id);
      }
      const [m1, m2] = ids as [string, string];

      // a second server on the same STATE_ROOT is refused, with a message
      const second = start({ ...env, WARREN_PORT: String(await freePort()) });
      const code = await new Promise<number | null>((r) => second.child.once("exit", (c) => r(c)));
      assert.equal(code, 2);
      assert.match(
        second.stderr(),
        new RegExp(`^cannot start: another warren server \\(pid ${server.child.pid}\\) is using STATE_ROOT `),
      );

      server.child.kill("SIGKILL");
      await new Promise((r) => server.child.once("exit", r));
      assert.notEqual(boxdHostPid(m1), null);
      assert.notEqual(boxdHostPid(m2), null);

      // m1's state folder deleted: its box stops within seconds; m2's waits for BOX_ORPHAN_S
      rmSync(path.join(stateRoot, "run", "boxes", m1), { recursive: true, force: true });
      const t0 = Date.now();
      while (boxdHostPid(m1) !== null) {
        if (Date.now() - t0 > 15_000) throw new Error("m1's box still runs 15 s after its state was deleted");
        await sleep(100);
      }
      assert.notEqual(boxdHostPid(m2), null, "m2's box waits for BOX_ORPHAN_S (20 s)");
      while (boxdHostPid(m2) !== null) {
        if (Date.now() - t0 > 90_000) throw new Error("m2's box still runs 90 s after its server died");
        await sleep(250);
      }
    } finally {
      if (server.child.exitCode === null) server.child.kill("SIGKILL");
      const layout = detectLayout();
      for (const id of ids) {
        const pid = boxdHostPid(id);
        if (pid) process.kill(pid, "SIGKILL");
        if (layout) {
          const dirs = cgroupPlan({ memoryMib: 64, cpus: 1, pids: 64, tmpMib: 1 }, layout, {
            parent: "warren",
            boxId: id,
          }).boxDirs;
          await destroyBoxCgroups(dirs).catch(() => {});
        }
      }
      await rm(stateRoot, { recursive: true, force: true, maxRetries: 3 });
    }
  },
);
