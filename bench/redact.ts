// Streaming redaction: 20 secrets of mixed lengths over output that looks like a command's
// (text lines, some base64, a secret now and then, split across chunks). Throughput in MB/s
// (10^6 bytes a second). Run alone: node --import tsx bench/redact.ts
import { randomBytes } from "node:crypto";
import { pathToFileURL } from "node:url";
import { REDACTED, Redactor } from "../src/secrets/redact.js";
import { percentile } from "./stats.js";

export interface RedactionResult {
  secrets: number;
  lengths: number[];
  bytes: number;
  chunkBytes: number;
  mbPerS: number[];
  /** Occurrences planted and replaced in one pass (they must agree). */
  planted: number;
  replaced: number;
}

/** Lengths from 8 bytes to 4 KiB: tokens, keys and a PEM-sized one. */
const LENGTHS = [8, 9, 12, 16, 20, 24, 32, 32, 36, 40, 48, 64, 64, 72, 100, 128, 256, 512, 1700, 4096];

export function benchRedaction(opts: { megabytes?: number; passes?: number } = {}): RedactionResult {
  const total = (opts.megabytes ?? 64) * 1024 * 1024;
  const passes = opts.passes ?? 7;
  const values = LENGTHS.map((n) => randomBytes(n).toString("base64url").slice(0, n));
  const r = new Redactor(values);
  const words = "the quick brown fox jumps over a lazy dog while make builds 1234 targets ok\n";
  const parts: Buffer[] = [];
  let size = 0;
  let planted = 0;
  for (let i = 0; size < total; i++) {
    const p =
      i % 50 === 49
        ? Buffer.from(`key=${values[planted++ % values.length]}\n`)
        : i % 7 === 0
          ? Buffer.from(`${randomBytes(48).toString("base64")}\n`)
          : Buffer.from(words);
    parts.push(p);
    size += p.length;
  }
  const data = Buffer.concat(parts);
  const chunkBytes = 64 * 1024;
  const mbPerS: number[] = [];
  let replaced = 0;
  for (let pass = 0; pass < passes + 1; pass++) {
    const s = r.stream();
    let marks = 0;
    const count = (b: Buffer) => {
      for (let at = b.indexOf(REDACTED); at !== -1; at = b.indexOf(REDACTED, at + 1)) marks++;
    };
    const t0 = process.hrtime.bigint();
    for (let at = 0; at < data.length; at += chunkBytes) count(s.push(data.subarray(at, at + chunkBytes)));
    count(s.end());
    const sec = Number(process.hrtime.bigint() - t0) / 1e9;
    if (pass > 0) mbPerS.push(data.length / 1e6 / sec); // the first pass warms up
    replaced = marks;
  }
  return {
    secrets: values.length,
    lengths: LENGTHS,
    bytes: data.length,
    chunkBytes,
    mbPerS,
    planted,
    replaced,
  };
}

export const median = (v: number[]): number =>
  percentile(
    [...v].sort((a, b) => a - b),
    50,
  );

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  const res = benchRedaction();
  process.stdout.write(
    `redaction: ${res.secrets} secrets (${Math.min(...res.lengths)}-${Math.max(...res.lengths)} bytes), ` +
      `${(res.bytes / 1e6).toFixed(0)} MB in ${res.chunkBytes / 1024} KiB chunks: median ` +
      `${median(res.mbPerS).toFixed(0)} MB/s, slowest ${Math.min(...res.mbPerS).toFixed(0)} MB/s; ` +
      `${res.replaced} of ${res.planted} planted values replaced\n`,
  );
}
