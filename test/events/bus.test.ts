// The event bus: each subject's events reach their listeners in order, a throwing or rejecting
// listener is logged while the others still run, and the emitter never sees it.
import assert from "node:assert/strict";
import { test } from "node:test";
import { EventBus } from "../../src/events/index.js";

function logged() {
  const lines: { obj: object; msg: string }[] = [];
  return { lines, logger: { error: (obj: object, msg: string) => void lines.push({ obj, msg }) } };
}

test("the events of one subject reach a slow listener in order; another subject does not wait", async () => {
  const { logger } = logged();
  const bus = new EventBus(logger);
  const seen: string[] = [];
  let letGo: () => void = () => undefined;
  const held = new Promise<void>((resolve) => (letGo = resolve));
  bus.on("run.ended", async (e) => {
    // the first event of run_a is held until run_b's has been told
    if (e.runId === "run_a" && e.status === "failed") await held;
    seen.push(`${e.runId}:${e.status}`);
    if (e.runId === "run_b") letGo();
  });
  bus.emit("run.ended", { runId: "run_a", status: "failed" });
  bus.emit("run.ended", { runId: "run_a", status: "succeeded" });
  bus.emit("run.ended", { runId: "run_b", status: "cancelled" });
  await bus.idle();
  assert.deepEqual(seen, ["run_b:cancelled", "run_a:failed", "run_a:succeeded"]);
});

test("a throwing listener and a rejecting one are logged; the others still run; emit never throws", async () => {
  const { logger, lines } = logged();
  const bus = new EventBus(logger);
  const seen: string[] = [];
  bus.on("box.stopped", () => {
    throw new Error("sync boom");
  });
  bus.on("box.stopped", async () => {
    await Promise.resolve();
    throw new Error("async boom");
  });
  bus.on("box.stopped", (e) => void seen.push(e.machineId));
  assert.doesNotThrow(() => bus.emit("box.stopped", { machineId: "mch_1", reason: "idle" }));
  bus.emit("box.stopped", { machineId: "mch_1", reason: "asked" });
  await bus.idle();
  assert.deepEqual(seen, ["mch_1", "mch_1"]);
  assert.equal(lines.length, 4);
  assert.deepEqual(lines.map((l) => (l.obj as { err: Error }).err.message).sort(), [
    "async boom",
    "async boom",
    "sync boom",
    "sync boom",
  ]);
  assert.ok(lines.every((l) => l.msg === "a listener of box.stopped failed"));
});

test("an async listener is awaited before the subject's next event; a listener that stops hears no more", async () => {
  const { logger } = logged();
  const bus = new EventBus(logger);
  const order: string[] = [];
  bus.on("guild.message_queued", async (e) => {
    order.push(`start ${e.guildId}`);
    await new Promise((resolve) => setImmediate(resolve));
    order.push(`end ${e.guildId}`);
  });
  const stop = bus.on("guild.message_queued", (e) => void order.push(`second ${e.guildId}`));
  bus.emit("guild.message_queued", { guildId: "gld_1", messageId: "gms_1" });
  bus.emit("guild.message_queued", { guildId: "gld_1", messageId: "gms_1" });
  await bus.idle();
  assert.deepEqual(order, [
    "start gld_1",
    "second gld_1",
    "end gld_1",
    "start gld_1",
    "second gld_1",
    "end gld_1",
  ]);
  stop();
  order.length = 0;
  bus.emit("guild.message_queued", { guildId: "gld_1", messageId: "gms_1" });
  await bus.idle();
  assert.deepEqual(order, ["start gld_1", "end gld_1"]);
});

test("an event is not told synchronously inside emit", async () => {
  const { logger } = logged();
  const bus = new EventBus(logger);
  let told = false;
  bus.on("schedule.fired", () => void (told = true));
  bus.emit("schedule.fired", { scheduleId: "sch_1", runId: "run_1" });
  assert.equal(told, false);
  await bus.idle();
  assert.equal(told, true);
});
