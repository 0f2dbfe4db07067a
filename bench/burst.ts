// Time to a first command, as the peers publish it: a new machine and agent created over the
// API, then its first `node -v`, timed from the first request to the answer (computesdk's
// method, here on loopback). One at a time, and a burst of `n` at once; with the warm pool
// (BOX_WARM_POOL) and without it. Each box is stopped once it has answered.
//
//   node --import tsx bench/burst.ts          (this section alone; BURST=100 SERIAL=20 POOL=64)
import fs from "node:fs";
import os from "node:os";
import { fileURLToPath } from "node:url";
import { startTestServer } from "../test/support/server.js";
import { jsonClient } from "./clients.js";
import { percentile, summarize, type Sample } from "./stats.js";

export interface BurstFigures {
  /** The warm pool the server had (0: every box started cold). */
  pool: number;
  /** New machine to its first `node -v`, one after another (ms). */
  serial: Sample;
  /** The same for `n` at once (ms), and its 95th percentile. */
  burst: Sample & { p95: number };
  /** From the burst's first request to its last answer (ms). */
  wallMs: number;
  /**
   * The host's CPU time (every process: server, boxes, clients) per machine of the burst, and
   * what it implies: the shortest wall time the burst could take on this many cores, busy all
   * along (ms). A p50 below half of it cannot be had here whatever the code does.
   */
  cpu: { perMachineMs: number; cores: number; wallFloorMs: number };
}

/** The host's busy CPU time so far (ms, every core): /proc/stat's first line, idle and iowait aside. */
function busyMs(): number {
  const line = fs.readFileSync("/proc/stat", "utf8").split("\n")[0] ?? "";
  const [, user, nice, system, , , irq, softirq, steal] = line.trim().split(/\s+/).map(Number);
  const ticks = [user, nice, system, irq, softirq, steal].reduce<number>((s, x) => s + (x ?? 0), 0);
  return (ticks * 1000) / 100; // USER_HZ is 100 on Linux
}

export async function benchBurst(o: {
  n: number;
  serial: number;
  pool: number;
  log: (line: string) => void;
}): Promise<BurstFigures> {
  const t = await startTestServer({
    listen: true,
    env: { BOX_IDLE_S: "3600", BOX_WARM_POOL: String(o.pool) },
  });
  const api = jsonClient(t.url!, Math.max(8, o.n));
  const machines: string[] = [];
  try {
    const { ok } = api;
    const org = await ok("POST", "/api/orgs", { name: `burst-${o.pool}` });
    // the pool is filled in the background after start: the timing begins once it is full
    await t.server.runtime.fillWarm();
    let made = 0;
    const first = async (): Promise<number> => {
      const i = made++;
      const t0 = performance.now();
      const m = await ok("POST", "/api/machines", { org_id: org.id, name: `b${i}`, memory_mib: 256 });
      machines.push(m.id as string);
      const a = await ok("POST", "/api/agents", {
        org_id: org.id,
        machine_id: m.id,
        name: "a",
        max_workspace_mib: 64,
      });
      const r = await ok("POST", `/api/agents/${a.id}/exec`, { argv: ["node", "-v"] });
      const ms = performance.now() - t0;
      if (r.exit_code !== 0 || !/^v\d+\./.test(r.stdout as string))
        throw new Error(`node -v in a new box answered ${JSON.stringify(r)}`);
      return ms;
    };
    const stopAll = async () => {
      for (const id of machines.splice(0)) await api.call("POST", `/api/machines/${id}/stop`);
      await t.server.runtime.fillWarm();
    };

    o.log(`burst (pool ${o.pool}): ${o.serial} new machines one at a time, each to its first node -v`);
    const serial: number[] = [];
    for (let i = 0; i < o.serial; i++) {
      serial.push(await first());
      await stopAll();
    }

    o.log(`burst (pool ${o.pool}): ${o.n} new machines at once`);
    const t0 = performance.now();
    const busy0 = busyMs();
    const burst = await Promise.all(Array.from({ length: o.n }, first));
    const wallMs = performance.now() - t0;
    const perMachineMs = (busyMs() - busy0) / o.n;
    const cores = os.cpus().length;
    await stopAll();
    const sorted = [...burst].sort((a, b) => a - b);
    return {
      pool: o.pool,
      serial: summarize(serial),
      burst: { ...summarize(burst), p95: percentile(sorted, 95) },
      wallMs,
      cpu: { perMachineMs, cores, wallFloorMs: (perMachineMs * o.n) / cores },
    };
  } finally {
    for (const id of machines) await api.call("POST", `/api/machines/${id}/stop`).catch(() => undefined);
    api.close();
    await t.close();
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  for (const pool of [0, Number(process.env.POOL ?? 64)]) {
    const f = await benchBurst({
      n: Number(process.env.BURST ?? 100),
      serial: Number(process.env.SERIAL ?? 20),
      pool,
      log: (l) => process.stderr.write(`${l}\n`),
    });
    console.log(JSON.stringify(f, null, 2));
  }
}
