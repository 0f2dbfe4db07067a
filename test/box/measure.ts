// Figures of the local provider on this host (not a test): cold start, warm exec
// latency through BoxdClient, and boxd's resident memory.
//   node --import tsx test/box/measure.ts [execs=500] [colds=10]
import { spawn } from "node:child_process";
import { boxSkipReason, makeBox } from "./fixture.js";

const execs = Number(process.argv[2] ?? 500);
const colds = Number(process.argv[3] ?? 10);

function pct(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))] ?? NaN;
}
const fmt = (xs: number[]): string => {
  const s = [...xs].sort((a, b) => a - b);
  return `p50 ${pct(s, 50).toFixed(2)} ms, p99 ${pct(s, 99).toFixed(2)} ms, min ${s[0]?.toFixed(2)} ms (n=${s.length})`;
};
const mib = (b: number): string => `${(b / 1024 / 1024).toFixed(1)} MiB`;

async function main(): Promise<void> {
  const skip = boxSkipReason();
  if (skip) {
    console.log(`skipped: ${skip}`);
    return;
  }
  const floor: number[] = [];
  for (let i = 0; i < 100; i++) {
    const t = performance.now();
    await new Promise((r) => spawn("/bin/true").once("exit", r));
    floor.push(performance.now() - t);
  }
  console.log(`floor (spawn /bin/true from node): ${fmt(floor)}`);

  const box = await makeBox({ start: false });
  try {
    const a = box.agents[0]!;
    const req = { argv: ["/bin/true"], env: {}, cwd: a.home, uid: a.uid, gid: a.gid };
    const cold: number[] = [];
    const startOnly: number[] = [];
    for (let i = 0; i < colds; i++) {
      const t0 = performance.now();
      await box.provider.start(box.id);
      const t1 = performance.now();
      await box.client().exec(req);
      cold.push(performance.now() - t0);
      startOnly.push(t1 - t0);
      if (i < colds - 1) await box.provider.stop(box.id);
    }
    console.log(`cold start (start() to first exec returning): ${fmt(cold)}`);
    console.log(`  of which start() until boxd answers: ${fmt(startOnly)}`);
    await new Promise((r) => setTimeout(r, 1500));
    const idle0 = await box.client().ping();
    console.log(
      `boxd idle after start: VmRSS ${mib(idle0.rssBytes)}, PSS ${mib(idle0.pssBytes)}, private (RssAnon) ${mib(idle0.anonBytes)}`,
    );

    const client = box.client();
    const warm: number[] = [];
    for (let i = 0; i < execs; i++) {
      const t = performance.now();
      await client.exec(req);
      warm.push(performance.now() - t);
    }
    console.log(`warm exec /bin/true via BoxdClient: ${fmt(warm)}`);
    const t = performance.now();
    await Promise.all(Array.from({ length: 50 }, () => client.exec(req)));
    console.log(`50 concurrent execs: ${(performance.now() - t).toFixed(1)} ms in all`);
    const busy = await client.ping();
    await new Promise((r) => setTimeout(r, 2500));
    const idle1 = await client.ping();
    console.log(`boxd right after the load: VmRSS ${mib(busy.rssBytes)}, private ${mib(busy.anonBytes)}`);
    console.log(
      `boxd idle again (after its idle gc): VmRSS ${mib(idle1.rssBytes)}, PSS ${mib(idle1.pssBytes)}, private ${mib(idle1.anonBytes)}`,
    );
  } finally {
    await box.cleanup();
  }
}

await main();
