// Measurement benchmark: measure() against `du -s -B1 -x` on a home of 100,000 files.
//
//   node --import tsx bench/measure.ts [files] [runs]
//
// Builds the tree in a temporary folder (nested folders, small files, some hard links), runs
// both once to warm the cache, then times each `runs` times, interleaved, and prints the medians,
// the ratio (target: at most 1.5) and the longest event-loop stall seen while measure() ran.
// `make bench` (bench/main.ts) calls benchMeasure() for its measurement row.

import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { HomeMeter } from "../src/homes/measure.js";

const PER_DIR = 100;

function build(root: string, files: number): void {
  let made = 0;
  for (let a = 0; made < files; a++) {
    for (let b = 0; b < 10 && made < files; b++) {
      const dir = path.join(root, `project${a}`, "src", `mod${b}`);
      fs.mkdirSync(dir, { recursive: true });
      for (let c = 0; c < PER_DIR && made < files; c++, made++) {
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

export interface MeasureFigures {
  files: number;
  runs: number;
  /** Bytes of the tree; measure() and du agree on it (else benchMeasure throws). */
  bytes: number;
  buildMs: number;
  duMs: number[];
  measureMs: number[];
  duMedianMs: number;
  measureMedianMs: number;
  /** measure() median over du median; the target is at most 1.5. */
  ratio: number;
  /** The longest event-loop stall seen while measure() ran. */
  stallMs: number;
}

/**
 * Builds a tree of `files` files in a temporary folder, checks that measure() and du agree,
 * then times both `runs` times, interleaved. The folder is removed before returning.
 */
export async function benchMeasure(
  files = 100_000,
  runs = 7,
  log: (line: string) => void = () => {},
): Promise<MeasureFigures> {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), "warren-bench-measure-"));
  const meter = new HomeMeter();
  try {
    let t = performance.now();
    build(root, files);
    const buildMs = performance.now() - t;
    log(`built ${files} files in ${Math.round(buildMs)} ms under ${root}`);

    const duBytes = du(root);
    const first = await meter.measure(root); // also starts the worker pool
    if (first.bytes !== duBytes) throw new Error(`measure() says ${first.bytes} bytes, du says ${duBytes}`);

    const duMs: number[] = [];
    const measureMs: number[] = [];
    let stallMs = 0;
    for (let i = 0; i < runs; i++) {
      t = performance.now();
      du(root);
      duMs.push(performance.now() - t);

      // A 1 ms ticker on the event loop: the longest gap between ticks is how long measure() held it.
      let last = performance.now();
      const ticker = setInterval(() => {
        const now = performance.now();
        stallMs = Math.max(stallMs, now - last);
        last = now;
      }, 1);
      t = performance.now();
      try {
        await meter.measure(root);
      } finally {
        clearInterval(ticker);
      }
      measureMs.push(performance.now() - t);
    }
    const duMedianMs = median(duMs);
    const measureMedianMs = median(measureMs);
    return {
      files,
      runs,
      bytes: duBytes,
      buildMs,
      duMs,
      measureMs,
      duMedianMs,
      measureMedianMs,
      ratio: measureMedianMs / duMedianMs,
      stallMs,
    };
  } finally {
    await meter.close();
    fs.rmSync(root, { recursive: true, force: true });
  }
}

function invokedDirectly(): boolean {
  const script = process.argv[1];
  if (!script) return false;
  try {
    return fs.realpathSync(script) === fs.realpathSync(fileURLToPath(import.meta.url));
  } catch {
    return false;
  }
}

if (invokedDirectly()) {
  const r = await benchMeasure(Number(process.argv[2] ?? 100_000), Number(process.argv[3] ?? 7), console.log);
  console.log(`bytes: ${r.bytes} (both agree)`);
  console.log(
    `du -s -B1 -x: median ${r.duMedianMs.toFixed(1)} ms  (${r.duMs.map((x) => x.toFixed(0)).join(" ")})`,
  );
  console.log(
    `measure():    median ${r.measureMedianMs.toFixed(1)} ms  (${r.measureMs.map((x) => x.toFixed(0)).join(" ")})`,
  );
  console.log(`ratio measure/du: ${r.ratio.toFixed(2)} (target <= 1.5)`);
  console.log(`longest event-loop stall during measure(): ${r.stallMs.toFixed(1)} ms`);
}
