// Box health on real boxes: live usage in the API and /metrics, runaway command trees (a
// fork bomb, a memory bomb, left in the background) stopped within the machine's
// runaway_after_s and recorded on the machine and the run; the box, its well-behaved
// background processes and the host's other boxes carry on.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { boxSkipReason } from "../box/fixture.js";
import { loadCores, type CoreLoad } from "../support/load.js";
import { startTestServer, type TestServer } from "../support/server.js";

// perl forks until the pids limit refuses, and keeps trying; every child sleeps
const FORK_BOMB =
  "perl -e 'while (1) { my $p = fork; if (defined $p && $p == 0) { sleep 1000; exit 0 } }' >/dev/null 2>&1 &";
// each perl asks for far more than the machine's memory; the OOM killer ends it, the loop starts another
const MEMORY_BOMB =
  "(while :; do perl -e '$x = q(a) x (512 * 1024 * 1024); sleep 1'; done) >/dev/null 2>&1 &";

describe("box health", { skip: boxSkipReason() ?? false }, () => {
  let t: TestServer;
  let org: { id: string };
  let m1: { id: string };
  let m2: { id: string };
  let a: { id: string };
  let b: { id: string };

  const exec = async (agentId: string, command: string) => {
    const r = await t.call("POST", `/api/agents/${agentId}/exec`, { command, timeout_ms: 30_000 });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    return r.body as { exit_code: number; stdout: string; stderr: string };
  };
  const machine = async (id: string) => (await t.call("GET", `/api/machines/${id}`)).body;
  const waitFor = async <T>(what: string, fn: () => Promise<T | undefined>, ms = 60_000): Promise<T> => {
    const end = Date.now() + ms;
    for (;;) {
      const v = await fn();
      if (v !== undefined) return v;
      if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
      await new Promise((r) => setTimeout(r, 200));
    }
  };
  const runaways = async (id: string) =>
    (
      (await machine(id)).box.events as {
        type: string;
        at: string;
        detail: string;
        data: Record<string, unknown>;
      }[]
    ).filter((e) => e.type === "runaway");

  before(async () => {
    t = await startTestServer({ env: { BOX_PIDS: "64", BOX_HEALTH_MS: "250" } });
    org = (await t.call("POST", "/api/orgs", { name: "health" })).body;
    m1 = (
      await t.call("POST", "/api/machines", {
        org_id: org.id,
        name: "m1",
        memory_mib: 128,
        runaway_after_s: 2,
      })
    ).body;
    m2 = (await t.call("POST", "/api/machines", { org_id: org.id, name: "m2" })).body;
    a = (await t.call("POST", "/api/agents", { org_id: org.id, machine_id: m1.id, name: "a" })).body;
    b = (await t.call("POST", "/api/agents", { org_id: org.id, machine_id: m2.id, name: "b" })).body;
  });
  after(async () => t.close());

  test("runaway_after_s: default 60, set on create and patch, checked", async () => {
    assert.equal((await machine(m2.id)).runaway_after_s, 60);
    assert.equal((await machine(m1.id)).runaway_after_s, 2);
    const bad = await t.call("PATCH", `/api/machines/${m2.id}`, { runaway_after_s: 0 });
    assert.equal(bad.status, 400);
    assert.equal(bad.body.error.code, "request.invalid");
    const ok = await t.call("PATCH", `/api/machines/${m2.id}`, { runaway_after_s: 30 });
    assert.equal(ok.body.runaway_after_s, 30);
  });

  test("live usage in GET /api/machines/:id and /metrics", async () => {
    const stopped = await machine(m1.id);
    assert.equal(stopped.box.usage, null);
    await exec(a.id, "true");
    const m = await waitFor("usage", async () => {
      const x = await machine(m1.id);
      return x.box.usage && x.box.usage.pids > 0 ? x : undefined;
    });
    assert.equal(m.box.state, "running");
    for (const k of ["cpu_s", "memory_bytes", "memory_peak_bytes", "pids"])
      assert.equal(typeof m.box.usage[k], "number", k);
    assert.ok(m.box.usage.memory_peak_bytes >= m.box.usage.memory_bytes);
    const metrics = await waitFor("metrics", async () => {
      const text = (await t.inject({ method: "GET", url: "/metrics" })).body;
      return text.includes(`warren_box_pids{machine="${m1.id}",org="${org.id}"}`) ? text : undefined;
    });
    assert.match(metrics, new RegExp(`warren_box_memory_bytes\\{machine="${m1.id}",org="${org.id}"\\} \\d+`));
    assert.match(metrics, /warren_box_cpu_seconds\{/);
  });

  test("a fork bomb left in the background by a run is stopped and recorded; the rest carries on", async () => {
    const sleeper = await exec(a.id, "sleep 1000 >/dev/null 2>&1 & echo $!");
    const pid = sleeper.stdout.trim();
    assert.match(pid, /^\d+$/);
    const before = (await runaways(m1.id)).length;
    const run = (await t.call("POST", `/api/agents/${a.id}/runs`, { kind: "command", command: FORK_BOMB }))
      .body as { id: string };
    const limited = await waitFor("at_limit pids", async () => {
      const x = await machine(m1.id);
      return x.box.at_limit?.limit === "pids" ? x.box.at_limit : undefined;
    });
    // the host's other box answers meanwhile
    assert.equal((await exec(b.id, "echo other")).stdout, "other\n");
    const ev = await waitFor("runaway event", async () => {
      const list = await runaways(m1.id);
      return list.length > before ? list[list.length - 1] : undefined;
    });
    assert.equal(ev.data.limit, "pids");
    assert.equal(ev.data.run_id, run.id);
    assert.equal(ev.data.agent_id, a.id);
    assert.ok(Number(ev.data.held_s) >= 2, `held ${ev.data.held_s}`);
    // stopped within the set time (2 s) and a generous margin for a loaded host
    const took = (Date.parse(ev.at) - Date.parse(limited.since)) / 1000;
    assert.ok(took < 20, `stopped ${took} s after reaching the limit`);
    const events = (await t.call("GET", `/api/runs/${run.id}/events`)).body as { type: string }[];
    const list = Array.isArray(events) ? events : (events as unknown as { items: { type: string }[] }).items;
    assert.ok(
      list.some((e) => e.type === "runaway"),
      "the run has a runaway event",
    );
    // the box is up, the next command works, the background sleeper survived
    assert.equal((await exec(a.id, "echo next")).stdout, "next\n");
    assert.equal((await exec(a.id, `kill -0 ${pid} && echo alive`)).stdout, "alive\n");
    const after = await waitFor("pids back down", async () => {
      const x = await machine(m1.id);
      return x.box.usage && x.box.usage.pids < 20 && !x.box.at_limit ? x : undefined;
    });
    assert.equal(after.box.state, "running");
  });

  test("a memory bomb in the background is stopped and recorded", async () => {
    const before = (await runaways(m1.id)).length;
    await exec(a.id, MEMORY_BOMB);
    const ev = await waitFor("runaway event", async () => {
      const list = await runaways(m1.id);
      return list.length > before ? list[list.length - 1] : undefined;
    });
    assert.equal(ev.data.limit, "memory", ev.detail);
    assert.equal(ev.data.agent_id, a.id);
    assert.equal(ev.data.run_id, null);
    assert.equal((await exec(a.id, "echo next")).stdout, "next\n");
    const counted = (await t.inject({ method: "GET", url: "/metrics" })).body;
    assert.match(
      counted,
      new RegExp(`warren_box_runaways_total\\{machine="${m1.id}",org="${org.id}",limit="memory"\\} 1`),
    );
  });
});

// The shapes that outlived their command before: each must be frozen and killed whole
// within runaway_after_s + 15 s, wherever the kernel counts the refused forks (cgroup v1
// counts them in the command's own cgroup, not in the agents' one whose limit is hit),
// while a well-behaved server left in the same box by another command keeps answering.
const CLASSIC = ":(){ :|:& };: 2>/dev/null; sleep 2; echo survived";
const SETSID_BOMB = "setsid bash -c ':(){ :|:& };:' >/dev/null 2>&1 < /dev/null & echo started";
// perl, not a shell loop: bash gives up and exits (254) once its forks are refused, and the
// loop must keep going until the rule stops it
const SLEEP_LOOP = `perl -e 'while (1) { system("sh", "-c", "sleep 99 &") }' >/dev/null 2>&1`;
// a tiny HTTP server on the agent's port, in its own session, that forks nothing
const SERVER = `
import http.server, os
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200); self.end_headers(); self.wfile.write(b"still-here")
    def log_message(self, *a): pass
http.server.HTTPServer(("127.0.0.1", int(os.environ["PORT"])), H).serve_forever()
`;
const ASK_SERVER = `
import os, urllib.request
print(urllib.request.urlopen("http://127.0.0.1:" + os.environ["PORT"], timeout=10).read().decode())
`;
const AFTER_S = 5;
const WITHIN_MS = (AFTER_S + 15) * 1000;

describe("runaway shapes on a loaded box", { skip: boxSkipReason() ?? false }, () => {
  let t: TestServer;
  let m: { id: string };
  let a: { id: string };
  let serverPid = "";

  type Ev = { type: string; at: string; detail: string; data: Record<string, unknown> };
  const machine = async () => (await t.call("GET", `/api/machines/${m.id}`)).body;
  const runaways = async () => ((await machine()).box.events as Ev[]).filter((e) => e.type === "runaway");
  const exec = async (body: Record<string, unknown>) => {
    const r = await t.call("POST", `/api/agents/${a.id}/exec`, { timeout_ms: 60_000, ...body });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    return r.body as { exit_code: number | null; stdout: string; stderr: string; timed_out?: boolean };
  };
  const waitFor = async <T>(what: string, fn: () => Promise<T | undefined>, ms: number): Promise<T> => {
    const end = Date.now() + ms;
    for (;;) {
      const v = await fn();
      if (v !== undefined) return v;
      if (Date.now() > end) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
      await new Promise((r) => setTimeout(r, 250));
    }
  };
  /** The next runaway event after `count` of them, within the allowed time from `since`. */
  const nextRunaway = async (count: number, since: number): Promise<Ev> => {
    const ev = await waitFor(
      "a runaway event",
      async () => {
        const list = await runaways();
        return list.length > count ? list[count] : undefined;
      },
      WITHIN_MS + 5000,
    );
    const took = Date.parse(ev.at) - since;
    assert.ok(took <= WITHIN_MS, `stopped ${took} ms after it started (allowed ${WITHIN_MS}): ${ev.detail}`);
    return ev;
  };
  /** The box back to a handful of processes, off its limit, and the server answering. */
  const settled = async () => {
    await waitFor(
      "the box back below its limit",
      async () => {
        const x = await machine();
        return x.box.usage && x.box.usage.pids < 40 && !x.box.at_limit ? x : undefined;
      },
      30_000,
    );
    const r = await exec({ argv: ["python3", "-c", ASK_SERVER], timeout_ms: 20_000 });
    const events = () => runaways().then((l) => l.map((e) => e.detail).join("\n"));
    assert.equal(
      r.stdout,
      "still-here\n",
      `${r.stderr}\nrunaways:\n${r.stdout === "still-here\n" ? "" : await events()}`,
    );
    assert.equal((await exec({ command: `kill -0 ${serverPid} && echo alive` })).stdout, "alive\n");
  };

  before(async () => {
    t = await startTestServer({ env: { BOX_PIDS: "512", BOX_HEALTH_MS: "250" } });
    const org = (await t.call("POST", "/api/orgs", { name: "shapes" })).body;
    m = (
      await t.call("POST", "/api/machines", {
        org_id: org.id,
        name: "shapes",
        memory_mib: 512,
        runaway_after_s: AFTER_S,
      })
    ).body;
    a = (await t.call("POST", "/api/agents", { org_id: org.id, machine_id: m.id, name: "a" })).body;
  });
  after(async () => {
    try {
      await t.call("POST", `/api/machines/${m.id}/stop`, {});
    } finally {
      await t.close();
    }
  });

  test("a well-behaved server is started first, in its own session", async () => {
    const r = await exec({
      command: 'setsid python3 -c "$SERVER" >/dev/null 2>&1 < /dev/null & echo $!',
      env: { SERVER },
    });
    serverPid = r.stdout.trim();
    assert.match(serverPid, /^\d+$/);
    await waitFor(
      "the server answering",
      async () => {
        const q = await exec({ argv: ["python3", "-c", ASK_SERVER], timeout_ms: 20_000 });
        return q.stdout === "still-here\n" ? true : undefined;
      },
      30_000,
    );
  });

  test("the classic fork bomb in the foreground of an exec", async () => {
    const count = (await runaways()).length;
    const start = Date.now();
    const done = exec({ command: CLASSIC, timeout_ms: 20_000 });
    const ev = await nextRunaway(count, start);
    assert.equal(ev.data.agent_id, a.id);
    assert.equal(ev.data.run_id, null);
    assert.equal(ev.data.limit, "pids");
    assert.match(String(ev.data.reason), /^(held|forks)$/);
    assert.deepEqual(ev.data.argv, ["/bin/bash", "-c", CLASSIC]);
    assert.ok(Number(ev.data.ended) > 0, ev.detail);
    assert.match(ev.detail, /frozen and killed/);
    await done;
    await settled();
  });

  test("a fork bomb started with setsid in the background", async () => {
    const count = (await runaways()).length;
    const start = Date.now();
    assert.equal((await exec({ command: SETSID_BOMB })).stdout, "started\n");
    const ev = await nextRunaway(count, start);
    assert.deepEqual(ev.data.argv, ["/bin/bash", "-c", SETSID_BOMB]);
    assert.equal(ev.data.limit, "pids");
    await settled();
  });

  test("a loop that leaves a sleeper behind at every turn", async () => {
    const count = (await runaways()).length;
    const start = Date.now();
    const done = exec({ command: SLEEP_LOOP, timeout_ms: 120_000 });
    const ev = await nextRunaway(count, start);
    assert.deepEqual(ev.data.argv, ["/bin/bash", "-c", SLEEP_LOOP]);
    const r = await done;
    assert.equal(r.exit_code, null, "the loop was killed, it did not end by itself");
    await settled();
  });

  test("a fork bomb inside a run: recorded on the machine and the run", async () => {
    const count = (await runaways()).length;
    const start = Date.now();
    const r = await t.call("POST", `/api/agents/${a.id}/runs`, {
      kind: "command",
      command: ":(){ :|:& };:; sleep 600",
      wait: false,
    });
    assert.ok(r.status === 200 || r.status === 201 || r.status === 202, JSON.stringify(r.body));
    const run = r.body as { id: string };
    const ev = await nextRunaway(count, start);
    assert.equal(ev.data.run_id, run.id);
    const events = await waitFor(
      "the run's runaway event",
      async () => {
        const body = (await t.call("GET", `/api/runs/${run.id}/events`)).body as { items: Ev[] };
        return body.items.some((e) => e.type === "runaway") ? body.items : undefined;
      },
      10_000,
    );
    const onRun = events.find((e) => e.type === "runaway");
    assert.equal(onRun?.data.limit, "pids");
    await settled();
  });

  test("a bomb held at a pids limit of its own keeps having forks refused: stopped for that", async () => {
    const count = (await runaways()).length;
    const start = Date.now();
    const command = ":(){ :|:& };:; sleep 600";
    const done = exec({ command, limits: { pids: 32 }, timeout_ms: 120_000 });
    const ev = await nextRunaway(count, start);
    assert.deepEqual(ev.data.argv, ["/bin/bash", "-c", command]);
    assert.equal(ev.data.reason, "forks", ev.detail);
    assert.ok(Number(ev.data.fork_failures) > 0, ev.detail);
    assert.equal((await done).exit_code, null);
    await settled();
  });

  test("a runaway's record on the machine names its command redacted of the agent's secrets", async () => {
    const value = "runaway-s3cret-VALUE-7d6c5b4a";
    const org = (await t.call("GET", `/api/agents/${a.id}`)).body.org_id as string;
    const s = await t.call("POST", "/api/secrets", {
      org_id: org,
      name: "RUNAWAY_TOKEN",
      description: "",
      value,
      grants: [{ scope: "agent", id: a.id }],
    });
    assert.equal(s.status, 201, JSON.stringify(s.body));
    const count = (await runaways()).length;
    const start = Date.now();
    // the value typed into the command line itself, as a careless caller would
    const command = `: ${value}; :(){ :|:& };:; sleep 600`;
    const done = exec({ command, limits: { pids: 32 }, timeout_ms: 120_000 });
    const ev = await nextRunaway(count, start);
    assert.equal((await done).exit_code, null);
    const stored = JSON.stringify(ev);
    assert.ok(!stored.includes(value), `the machine's event keeps the secret: ${stored}`);
    assert.deepEqual(ev.data.argv, ["/bin/bash", "-c", ": [redacted]; :(){ :|:& };:; sleep 600"]);
    assert.match(ev.detail, /\[redacted\]/);
    await settled();
  });

  test("an exec whose time runs out at the limit is frozen and killed whole by its timeout", async () => {
    // the runaway rule out of the way: only the timeout may end this one
    await t.call("PATCH", `/api/machines/${m.id}`, { runaway_after_s: 600 });
    try {
      const count = (await runaways()).length;
      const r = await exec({ command: ":(){ :|:& };:; sleep 600", timeout_ms: 6000 });
      assert.equal(r.timed_out, true, JSON.stringify(r));
      // nothing of the tree is left: the box is back down at the next samples
      await waitFor(
        "the tree gone after the timeout",
        async () => {
          const x = await machine();
          return x.box.usage && x.box.usage.pids < 40 ? x : undefined;
        },
        10_000,
      );
      assert.equal((await runaways()).length, count, "the timeout, not the runaway rule, ended it");
    } finally {
      await t.call("PATCH", `/api/machines/${m.id}`, { runaway_after_s: AFTER_S });
    }
    await settled();
  });
});

// The classic bomb in an exec's foreground at the default pids limit (4096), on a host
// whose cores another process keeps busy: a bash bomb takes longer than the window to
// reach that limit there, so the tree is stopped from when it began to climb, not from
// when it reached the limit. The promise: back under 50 processes within
// runaway_after_s + 15 s of the exec's answer, with a runaway event.
describe("the classic bomb at the default limit on a loaded host", { skip: boxSkipReason() ?? false }, () => {
  const AFTER = 20;
  let t: TestServer;
  let m: { id: string };
  let a: { id: string };
  let load: CoreLoad | undefined;

  before(async () => {
    t = await startTestServer({ env: { BOX_HEALTH_MS: "500" } });
    const org = (await t.call("POST", "/api/orgs", { name: "classic" })).body;
    m = (await t.call("POST", "/api/machines", { org_id: org.id, name: "classic", runaway_after_s: AFTER }))
      .body;
    a = (await t.call("POST", "/api/agents", { org_id: org.id, machine_id: m.id, name: "a" })).body;
  });
  after(async () => {
    try {
      await load?.stop();
      await t.call("POST", `/api/machines/${m.id}/stop`, {});
    } finally {
      await t.close();
    }
  });

  test("stopped within runaway_after_s + 15 s of the exec's answer while the cores are busy", async () => {
    const started = await t.call("POST", `/api/agents/${a.id}/exec`, { command: "true" });
    assert.equal(started.status, 200, JSON.stringify(started.body));
    load = loadCores();
    const r = await t.call("POST", `/api/agents/${a.id}/exec`, {
      command: ":(){ :|:& };: ; sleep 2; echo survived",
      timeout_ms: 60_000,
    });
    const answered = Date.now();
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.equal(r.body.stdout, "survived\n", "the bomb's parent returned and the exec answered");
    const machine = async () => (await t.call("GET", `/api/machines/${m.id}`)).body;
    let peak = 0;
    let last: { pids: number; events: { type: string; detail: string; data: Record<string, unknown> }[] } = {
      pids: -1,
      events: [],
    };
    const deadline = answered + (AFTER + 15) * 1000;
    for (;;) {
      const x = await machine();
      last = { pids: x.box.usage?.pids ?? -1, events: x.box.events };
      peak = Math.max(peak, last.pids);
      const runaway = last.events.find((e) => e.type === "runaway");
      if (runaway && last.pids >= 0 && last.pids < 50) {
        assert.equal(runaway.data.agent_id, a.id);
        assert.equal(runaway.data.limit, "pids");
        assert.ok(Number(runaway.data.ended) > 50, runaway.detail);
        break;
      }
      if (Date.now() > deadline)
        assert.fail(
          `${last.pids} processes ${((Date.now() - answered) / 1000).toFixed(1)} s after the answer (peak ${peak}); events: ${JSON.stringify(last.events)}`,
        );
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
    assert.ok(peak > 50, `the bomb grew (peak ${peak})`);
    await load.stop();
    // the box is still up and the next command works
    const next = await t.call("POST", `/api/agents/${a.id}/exec`, { command: "echo next" });
    assert.equal(next.body.stdout, "next\n");
  });
});
