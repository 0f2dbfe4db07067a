import assert from "node:assert/strict";
import { test } from "node:test";
import { homeOf, lowestFreeSlot, MAX_SLOTS, portsOf, uidOf } from "./placement.js";

test("the lowest free slot fills gaps first", () => {
  assert.equal(lowestFreeSlot([]), 0);
  assert.equal(lowestFreeSlot([0, 1, 2]), 3);
  assert.equal(lowestFreeSlot([0, 2, 3]), 1);
  assert.equal(lowestFreeSlot([1]), 0);
  assert.equal(lowestFreeSlot(Array.from({ length: MAX_SLOTS }, (_, i) => i)), null);
});

test("a slot gives uid, port block and home", () => {
  assert.equal(uidOf(0), 10000);
  assert.equal(uidOf(7), 10007);
  assert.deepEqual(portsOf(0), { first: 20000, last: 20099 });
  assert.deepEqual(portsOf(3), { first: 20300, last: 20399 });
  assert.ok(portsOf(MAX_SLOTS - 1).last <= 65535);
  assert.equal(homeOf("agt_x"), "/home/agt_x");
});
