import assert from "node:assert/strict";
import { test } from "node:test";
import type { UsageSample } from "../boxes/index.js";
import { limitHeld } from "./health.js";

const sample = (o: Partial<UsageSample> = {}): UsageSample => ({
  cpuSeconds: 0,
  memoryBytes: 10 << 20,
  memoryPeakBytes: 10 << 20,
  unreclaimableBytes: 8 << 20,
  pids: 3,
  oomKills: 0,
  memoryLimitHits: 0,
  pidsLimitHits: 0,
  memoryLimitBytes: 100 << 20,
  pidsLimit: 64,
  ...o,
});

test("limitHeld: pids at the limit, or forks refused since the last sample", () => {
  assert.equal(limitHeld(sample(), sample(), 0), null);
  assert.equal(limitHeld(sample({ pids: 64 }), undefined, 0), "pids");
  assert.equal(limitHeld(sample({ pids: 63 }), undefined, 0), "pids");
  assert.equal(limitHeld(sample({ pidsLimitHits: 5 }), sample({ pidsLimitHits: 4 }), 0), "pids");
  assert.equal(limitHeld(sample({ pidsLimitHits: 5 }), sample({ pidsLimitHits: 5 }), 0), null);
});

test("limitHeld: memory when the OOM killer struck, or near the limit and pressing on it", () => {
  assert.equal(limitHeld(sample(), sample(), 1), "memory");
  const near = { memoryBytes: 99 << 20, unreclaimableBytes: 95 << 20 };
  const hit = (n: number) => ({ memoryLimitHits: n });
  assert.equal(limitHeld(sample({ ...near, ...hit(2) }), sample(hit(1)), 0), "memory");
  // near the limit but nothing pressing: not at the limit
  assert.equal(limitHeld(sample({ ...near, ...hit(1) }), sample(hit(1)), 0), null);
  // full of page cache (reclaimed at each hit): not at the limit
  const cache = { memoryBytes: 99 << 20, unreclaimableBytes: 20 << 20 };
  assert.equal(limitHeld(sample({ ...cache, ...hit(9) }), sample(hit(1)), 0), null);
  // pressing but far below (a tighter per-command limit): not the box's limit
  assert.equal(limitHeld(sample({ memoryLimitHits: 9 }), sample({ memoryLimitHits: 1 }), 0), null);
  assert.equal(limitHeld(sample({ memoryLimitBytes: null, pidsLimit: null }), undefined, 3), null);
});
