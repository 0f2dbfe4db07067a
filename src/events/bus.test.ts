import assert from "node:assert/strict";
import { test } from "node:test";
import { EventBus } from "./bus.js";

test("delivers to listeners, isolates a failing one, unsubscribes", () => {
  const errors: string[] = [];
  const bus = new EventBus((_e, topic) => errors.push(topic));
  const seen: string[] = [];
  bus.on("run.ended", () => {
    throw new Error("boom");
  });
  const off = bus.on("run.ended", (p) => seen.push(p.runId));
  bus.emit("run.ended", { runId: "run_1", agentId: "agt_1", status: "succeeded" });
  off();
  bus.emit("run.ended", { runId: "run_2", agentId: "agt_1", status: "succeeded" });
  assert.deepEqual(seen, ["run_1"]);
  assert.deepEqual(errors, ["run.ended", "run.ended"]);
});
