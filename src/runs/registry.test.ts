import assert from "node:assert/strict";
import { test } from "node:test";
import { WarrenError } from "../errors.js";
import { GenerationRegistry } from "./registry.js";

test("one generation per agent, released and cancellable", () => {
  const r = new GenerationRegistry();
  const g = r.acquire("agt_a", "run_1");
  assert.throws(
    () => r.acquire("agt_a", "run_2"),
    (e) => e instanceof WarrenError && e.code === "generation.busy" && e.message.includes("run_1"),
  );
  const other = r.acquire("agt_b", "run_3");
  assert.equal(r.size, 2);
  assert.equal(r.cancel("run_1"), true);
  assert.equal(g.controller.signal.aborted, true);
  assert.equal(other.controller.signal.aborted, false);
  r.release(g);
  assert.equal(r.cancel("run_1"), false);
  assert.equal(r.forAgent("agt_a"), undefined);
  r.acquire("agt_a", "run_4");
  assert.deepEqual(r.activeAgents().sort(), ["agt_a", "agt_b"]);
});
