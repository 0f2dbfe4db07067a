import assert from "node:assert/strict";
import { test } from "node:test";
import { WarrenError } from "../errors.js";
import { GenerationRegistry, type Generation } from "./registry.js";

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

/** A line where each started run is kept by run id, to be released by the test. */
function line(orgMax = Infinity) {
  const r = new GenerationRegistry(orgMax);
  const started: string[] = [];
  const gens = new Map<string, Generation>();
  const put = (runId: string, agentId: string, orgId = "org_1", wait = true) =>
    r.enqueue(
      {
        runId,
        agentId,
        orgId,
        start: (g) => {
          started.push(runId);
          gens.set(runId, g);
        },
      },
      { wait },
    );
  const end = (runId: string) => {
    const g = gens.get(runId);
    assert.ok(g, `${runId} is running`);
    r.release(g);
  };
  return { r, started, put, end };
}

test("a busy agent's runs wait their turn, first come first served", () => {
  const { r, started, put, end } = line();
  assert.equal(put("run_1", "agt_a"), "started");
  assert.equal(put("run_2", "agt_a"), "queued");
  assert.equal(put("run_3", "agt_a"), "queued");
  assert.equal(put("run_4", "agt_b"), "started", "another agent is not held");
  assert.deepEqual(started, ["run_1", "run_4"]);
  const w2 = r.waiting("run_2");
  const w3 = r.waiting("run_3");
  assert.equal(w2?.reason, "agent_busy");
  assert.equal(w2?.position, 1);
  assert.match(w2?.detail ?? "", /run_1 is going on/);
  assert.equal(w3?.reason, "agent_busy");
  assert.equal(w3?.position, 2);
  assert.match(w3?.detail ?? "", /run_1 is going on; 2nd in the agent's line/);
  assert.ok(w2 && w3 && w2.since <= w3.since);
  assert.equal(r.waiting("run_1"), null, "a running run does not wait");
  end("run_1");
  assert.deepEqual(started, ["run_1", "run_4", "run_2"]);
  assert.equal(r.waiting("run_3")?.position, 1);
  end("run_2");
  assert.deepEqual(started, ["run_1", "run_4", "run_2", "run_3"]);
  assert.deepEqual(r.waiters(), []);
});

test("wait: false refuses what cannot start now, and leaves the line as it was", () => {
  const { r, put } = line(2);
  put("run_1", "agt_a");
  assert.throws(
    () => put("run_2", "agt_a", "org_1", false),
    (e) => e instanceof WarrenError && e.code === "generation.busy" && e.message.includes("run_1"),
  );
  put("run_3", "agt_b");
  assert.throws(
    () => put("run_4", "agt_c", "org_1", false),
    (e) => e instanceof WarrenError && e.code === "run.org_limit" && /cap of 2/.test(e.message),
  );
  assert.equal(put("run_5", "agt_d", "org_2", false), "started", "another organisation has its own cap");
  assert.deepEqual(r.waiters(), []);
  // a waiting run holds its agent: a later run that will not wait is refused too
  put("run_6", "agt_a");
  assert.deepEqual(r.waiters("agt_a"), ["run_6"]);
  assert.throws(
    () => put("run_7", "agt_a", "org_1", false),
    (e) => e instanceof WarrenError && e.code === "generation.busy",
  );
});

test("the organisation's cap queues the rest, in order, with positions", () => {
  const { r, started, put, end } = line(2);
  put("run_1", "agt_a");
  put("run_2", "agt_b");
  assert.equal(put("run_3", "agt_c"), "queued");
  assert.equal(put("run_4", "agt_a"), "queued");
  assert.equal(put("run_5", "agt_d"), "queued");
  assert.equal(put("run_6", "agt_e", "org_2"), "started");
  assert.deepEqual(r.waiting("run_3") && { ...r.waiting("run_3"), since: 0, detail: "" }, {
    reason: "org_limit",
    position: 1,
    since: 0,
    detail: "",
  });
  assert.match(r.waiting("run_3")?.detail ?? "", /2 runs going on, its cap of 2/);
  assert.equal(r.waiting("run_4")?.reason, "agent_busy", "its own agent holds it first");
  assert.equal(r.waiting("run_5")?.reason, "org_limit");
  assert.equal(r.waiting("run_5")?.position, 2, "run_4 waits for its agent, not ahead in the org's line");
  end("run_2");
  assert.deepEqual(started, ["run_1", "run_2", "run_6", "run_3"]);
  end("run_1");
  // agt_a is free: run_4 is older than run_5 and takes the place
  assert.deepEqual(started.slice(4), ["run_4"]);
  assert.equal(r.waiting("run_5")?.position, 1);
  end("run_3");
  assert.deepEqual(started.slice(5), ["run_5"]);
});

test("a waiting run taken out of line never starts, and lets the next one move up", () => {
  const { r, started, put, end } = line();
  put("run_1", "agt_a");
  put("run_2", "agt_a");
  put("run_3", "agt_a");
  assert.equal(r.dequeue("run_2"), true);
  assert.equal(r.dequeue("run_2"), false);
  assert.equal(r.dequeue("run_1"), false, "a running run is not in line");
  assert.equal(r.waiting("run_3")?.position, 1);
  end("run_1");
  assert.deepEqual(started, ["run_1", "run_3"]);
});

test("closed: what waited is handed back and nothing starts any more", () => {
  const { r, started, put, end } = line();
  put("run_1", "agt_a");
  put("run_2", "agt_a");
  assert.deepEqual(r.close(), ["run_2"]);
  end("run_1");
  assert.deepEqual(started, ["run_1"]);
  assert.throws(
    () => put("run_3", "agt_b"),
    (e) => e instanceof WarrenError && e.code === "box.unavailable",
  );
});

test("an agent held for a move: refused while busy; its runs refused, never queued, until let go", () => {
  const { r, started, put, end } = line();
  const busy = (e: unknown) => e instanceof WarrenError && e.code === "generation.busy";
  assert.equal(put("run_1", "agt_a"), "started");
  assert.throws(() => r.holdForMove("agt_a", "org_1"), busy, "a run goes on");
  assert.equal(put("run_2", "agt_a"), "queued");
  end("run_1");
  assert.throws(() => r.holdForMove("agt_a", "org_1"), busy, "a run goes on after one that waited");
  end("run_2");
  const letGo = r.holdForMove("agt_a", "org_1");
  assert.throws(() => r.holdForMove("agt_a", "org_1"), busy, "moved once at a time");
  for (const wait of [false, true])
    assert.throws(
      () => put(`run_w${wait}`, "agt_a", "org_1", wait),
      (e) => busy(e) && /being moved/.test((e as Error).message),
    );
  assert.deepEqual(r.waiters("agt_a"), [], "nothing waits to start where the agent was");
  assert.throws(
    () => r.refuseWhileMoving("agt_a"),
    (e) => busy(e) && /being moved to another machine/.test((e as Error).message),
    "the doors to its box and its home ask the same hold",
  );
  r.refuseWhileMoving("agt_b");
  assert.equal(put("run_3", "agt_b"), "started", "another agent is not held");
  letGo();
  r.refuseWhileMoving("agt_a");
  assert.equal(put("run_4", "agt_a"), "started");
  assert.deepEqual(started, ["run_1", "run_2", "run_3", "run_4"]);
});
