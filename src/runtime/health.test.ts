import assert from "node:assert/strict";
import { test } from "node:test";
import type { UsageSample } from "../boxes/index.js";
import {
  CALM_MS,
  climbRunaway,
  limitHeld,
  nextClimb,
  nextPressure,
  pidsLowWater,
  pidsMargin,
  pidsShare,
} from "./health-rules.js";

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

test("pids margin, low water and share: max(8, 1 %) and well below", () => {
  assert.equal(pidsMargin(64), 8);
  assert.equal(pidsMargin(512), 8);
  assert.equal(pidsMargin(4096), 41);
  assert.equal(pidsLowWater(64), 32);
  assert.equal(pidsLowWater(4096), 4096 - 410);
  assert.equal(pidsShare(512), 52);
});

test("limitHeld: pids within the margin of the limit, or forks refused anywhere since the last sample", () => {
  assert.equal(limitHeld(sample(), sample(), 0), null);
  assert.equal(limitHeld(sample({ pids: 64 }), undefined, 0), "pids");
  assert.equal(limitHeld(sample({ pids: 56 }), undefined, 0), "pids");
  assert.equal(limitHeld(sample({ pids: 55 }), undefined, 0), null);
  // the wobble seen with a 4096 limit: every count of it is at the limit
  for (const pids of [4069, 4080, 4099])
    assert.equal(limitHeld(sample({ pids, pidsLimit: 4096 }), undefined, 0), "pids", String(pids));
  assert.equal(limitHeld(sample({ pidsLimitHits: 5 }), sample({ pidsLimitHits: 4 }), 0), "pids");
  assert.equal(limitHeld(sample({ pidsLimitHits: 5 }), sample({ pidsLimitHits: 5 }), 0), null);
  // refused in a command's own cgroup (cgroup v1), not in the agents'
  assert.equal(limitHeld(sample({ pids: 20 }), sample(), 0, 3), "pids");
});

test("nextPressure: a wobbling count keeps the clock; only a calm stretch well below clears it", () => {
  const at = (pids: number) => sample({ pids, pidsLimit: 4096 });
  const hot = (pids: number) => limitHeld(at(pids), undefined, 0);
  let p = nextPressure(undefined, hot(4090), at(4090), 1000);
  assert.deepEqual(p, { limit: "pids", since: 1000 });
  // the count dips below the margin but not well below: the clock goes on
  p = nextPressure(p, hot(4000), at(4000), 2000);
  assert.equal(p?.since, 1000);
  p = nextPressure(p, hot(4095), at(4095), 3000);
  assert.equal(p?.since, 1000);
  // well below: calm starts, but it takes CALM_MS to clear, and a return resets the calm
  p = nextPressure(p, hot(100), at(100), 4000);
  assert.deepEqual(p, { limit: "pids", since: 1000, calmSince: 4000 });
  p = nextPressure(p, hot(4095), at(4095), 4500);
  assert.deepEqual(p, { limit: "pids", since: 1000 });
  p = nextPressure(p, hot(100), at(100), 5000);
  p = nextPressure(p, hot(100), at(100), 5000 + CALM_MS - 1);
  assert.equal(p?.since, 1000);
  p = nextPressure(p, hot(100), at(100), 5000 + CALM_MS);
  assert.equal(p, undefined);
  // a different limit starts its own clock
  assert.deepEqual(nextPressure({ limit: "pids", since: 1 }, "memory", at(10), 9), {
    limit: "memory",
    since: 9,
  });
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

test("nextClimb: starts at a share of the limit, keeps its start above half of it, ends after a calm stretch", () => {
  const L = 4096;
  const share = pidsShare(L); // 410
  assert.equal(nextClimb(undefined, share - 1, L, 0), undefined, "below the share: no climb");
  const c1 = nextClimb(undefined, share, L, 1000);
  assert.deepEqual(c1, { since: 1000, low: share });
  const c2 = nextClimb(c1, 3000, L, 2000);
  assert.deepEqual(c2, { since: 1000, low: share }, "a higher count keeps the start and the low");
  const c3 = nextClimb(c2, Math.ceil(share / 2), L, 3000);
  assert.deepEqual(
    c3,
    { since: 1000, low: Math.ceil(share / 2) },
    "a dip above half the share keeps the start",
  );
  const c4 = nextClimb(c3, 5, L, 4000);
  assert.equal(c4?.since, 1000);
  assert.equal(c4?.calmSince, 4000, "below half the share: calming");
  const c5 = nextClimb(c4, 5, L, 4000 + CALM_MS - 1);
  assert.equal(c5?.calmSince, 4000);
  assert.equal(nextClimb(c5, 5, L, 4000 + CALM_MS), undefined, "calm for CALM_MS: over");
  // coming back before the calm stretch ends is the same climb
  assert.deepEqual(nextClimb(c4, share, L, 5000), { since: 1000, low: Math.ceil(share / 2) });
});

test("climbRunaway: the whole window at a share, and doubled meanwhile or the box at its limit", () => {
  const L = 4096;
  const w = 20_000;
  const c = { since: 0, low: 500 };
  assert.equal(climbRunaway(c, 1000, L, false, w, w - 1), false, "not for the whole window yet");
  assert.equal(climbRunaway(c, 1000, L, false, w, w), true, "doubled from its low: a bomb on its way up");
  assert.equal(
    climbRunaway(c, 999, L, false, w, w),
    false,
    "a steady pool (a server's threads) is left alone",
  );
  assert.equal(climbRunaway(c, 999, L, true, w, w), true, "with the box at its pids limit");
  assert.equal(climbRunaway(c, 300, L, true, w, w), false, "not while below the share");
  assert.equal(climbRunaway({ ...c, calmSince: 10 }, 1000, L, true, w, w), false, "not while calming down");
});
