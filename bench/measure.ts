// Measurement benchmark: measure() against `du -s -B1 -x` on a home of 100,000 files.
//
//   node --import tsx bench/measure.ts [files] [runs]
//
// Builds the tree in a temporary folder (nested folders, small files, some hard links), runs
// both once to warm the cache, then times each `runs` times, interleaved, and prints the medians,
// the ratio (target: at most 1.5) and the longest event-loop stall seen while measure() ran.

import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { HomeMeter } from "../src/homes/measure.js";

const FILES = Number(process.argv[2] ?? 100_000);
const RUNS = Number(process.argv[3] ?? 7);
const PER_DIR = 100;

function build(root: string): void {
  let made = 0;
  for (let a = 0; made < FILES; a++) {
    for (let b = 0; b < 10 && made < FILES; b++) {
      const dir = path.join(root, `project${a}`, "src", `mod${b}`);
      fs.mkdirSync(dir, { recursive: true });
      for (let c = 0; c < PER_DIR && made < FILES; c++, made++) {
        const file = path.join(dir, `f${c}.txt`);
        if (c % 50 === 49) fs.linkSync(path.join(dir, "f0.txt"), file);
        else fs.writeFileSync(file, "x".repeat(64 + ((made * 37) % 6000)));
      }
    }
  }
}

function median(values: number[]): number {
  const sorted = [...values].sort((x, y) => x - y);
  return sorted[Math.floor(sorted.length / 2)] ?? NaN;
}

function du(dir: string): number {
  return Number(execFileSync("du", ["-s", "-B1", "-x", dir], { encoding: "utf8" }).split("\t")[0]);
}

const root = fs.mkdtempSync(path.join(os.tmpdir(), "warren-bench-measure-"));
const meter = new HomeMeter();
try {
  let t = performance.now();
  build(root);
  console.log(`built ${FILES} files in ${Math.round(performance.now() - t)} ms under ${root}`);

  const duBytes = du(root);
  const first = await meter.measure(root); // also starts the worker pool
  if (first.bytes !== duBytes) throw new Error(`measure() says ${first.bytes} bytes, du says ${duBytes}`);

  const duTimes: number[] = [];
  const ourTimes: number[] = [];
  let stall = 0;
  for (let i = 0; i < RUNS; i++) {
    t = performance.now();
    du(root);
    duTimes.push(performance.now() - t);

    // A 1 ms ticker on the event loop: the longest gap between ticks is how long measure() held it.
    let last = performance.now();
    const ticker = setInterval(() => {
      const now = performance.now();
      stall = Math.max(stall, now - last);
      last = now;
    }, 1);
    t = performance.now();
    await meter.measure(root);
    ourTimes.push(performance.now() - t);
    clearInterval(ticker);
  }
  const d = median(duTimes);
  const m = median(ourTimes);
  console.log(`bytes: ${duBytes} (both agree)`);
  console.log(`du -s -B1 -x: median ${d.toFixed(1)} ms  (${duTimes.map((x) => x.toFixed(0)).join(" ")})`);
  console.log(`measure():    median ${m.toFixed(1)} ms  (${ourTimes.map((x) => x.toFixed(0)).join(" ")})`);
  console.log(`ratio measure/du: ${(m / d).toFixed(2)} (target <= 1.5)`);
  console.log(`longest event-loop stall during measure(): ${stall.toFixed(1)} ms`);
} finally {
  await meter.close();
  fs.rmSync(root, { recursive: true, force: true });
}
