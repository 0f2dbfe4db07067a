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

test("a listener that hangs is logged and let go: the others, the subject's next event and the emitter go on, in order", async () => {
  const { logger, lines } = logged();
  const bus = new EventBus(logger, { limitMs: 100 });
  const seen: string[] = [];
  // hangs on run_a's first event, for good
  bus.on("run.ended", (e) => (e.status === "failed" ? new Promise<void>(() => undefined) : undefined));
  bus.on("run.ended", async (e) => {
    await Promise.resolve();
    seen.push(`${e.runId}:${e.status}`);
  });
  const started = Date.now();
  bus.emit("run.ended", { runId: "run_a", status: "failed" });
  bus.emit("run.ended", { runId: "run_a", status: "succeeded" });
  bus.emit("run.ended", { runId: "run_b", status: "cancelled" });
  await bus.idle();
  // run_b did not wait for run_a's hang; run_a's second event came after its first, once let go
  assert.deepEqual(seen, ["run_a:failed", "run_b:cancelled", "run_a:succeeded"]);
  assert.ok(Date.now() - started >= 90, "the subject's next event waited for the limit");
  assert.equal(lines.length, 1);
  assert.equal(lines[0]!.msg, "a listener of run.ended took longer than 100 ms; the bus went on without it");
});

test("a listener of one subject hears that subject's events only", async () => {
  const { logger } = logged();
  const bus = new EventBus(logger);
  const seen: string[] = [];
  const stop = bus.on("run.event_stored", (e) => void seen.push(`one ${e.runId}`), "run_a");
  bus.on("run.event_stored", (e) => void seen.push(`all ${e.runId}`));
  bus.emit("run.event_stored", { runId: "run_a" });
  bus.emit("run.event_stored", { runId: "run_b" });
  await bus.idle();
  assert.deepEqual(seen.sort(), ["all run_a", "all run_b", "one run_a"]);
  stop();
  seen.length = 0;
  bus.emit("run.event_stored", { runId: "run_a" });
  await bus.idle();
  assert.deepEqual(seen, ["all run_a"]);
});
