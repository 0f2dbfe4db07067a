// Command runs on real boxes: input, output, records, receipts, limits, caps.
import assert from "node:assert/strict";
import { rm, symlink } from "node:fs/promises";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { boxSkipReason } from "../box/fixture.js";
import { schema } from "../../src/store/index.js";
import { forkCount } from "../support/forks.js";
import { startTestServer, type TestServer } from "../support/server.js";

const terminal = ["succeeded", "failed", "timed_out", "cancelled", "lost"];

describe("command runs", { skip: boxSkipReason() ?? false }, () => {
  let t: TestServer;
  let org: { id: string };
  let machine: { id: string };
  let a: { id: string; uid: number; home: string };
  let b: { id: string };

  const start = (agentId: string, body: Record<string, unknown>) =>
    t.call("POST", `/api/agents/${agentId}/runs`, { kind: "command", ...body });
  const wait = async (id: string, ms = 20_000) => {
    const end = Date.now() + ms;
    for (;;) {
      const r = (await t.call("GET", `/api/runs/${id}`)).body;
      if (terminal.includes(r.status)) return r;
      if (Date.now() > end) throw new Error(`run ${id} still ${r.status}`);
      await new Promise((res) => setTimeout(res, 30));
    }
  };
  const exec = (agentId: string, command: string) =>
    t.call("POST", `/api/agents/${agentId}/exec`, { command });

  before(async () => {
    t = await startTestServer();
    org = (await t.call("POST", "/api/orgs", { name: "runs" })).body;
    machine = (await t.call("POST", "/api/machines", { org_id: org.id, name: "m", max_workspace_mib: 200 }))
      .body;
    a = (
      await t.call("POST", "/api/agents", {
        org_id: org.id,
        machine_id: machine.id,
        name: "a",
        max_workspace_mib: 5,
      })
    ).body;
    b = (
      await t.call("POST", "/api/agents", {
        org_id: org.id,
        machine_id: machine.id,
        name: "b",
        max_workspace_mib: 50,
      })
    ).body;
  });
  after(async () => t.close());

  test("input at /agent/input, output is stdout, a full record and trace", async () => {
    const r = await start(a.id, {
      argv: [
        "/bin/sh",
        "-c",
        'ls -l /agent/input >&2; tr a-z A-Z < /agent/input; echo " $WARREN_INPUT"; echo err >&2',
      ],
      input: "hello run",
    });
    assert.equal(r.status, 202, JSON.stringify(r.body));
    assert.ok(["queued", "running"].includes(r.body.status));
    const run = await wait(r.body.id);
    assert.equal(run.status, "succeeded", JSON.stringify(run));
    assert.equal(run.exit_code, 0);
    assert.equal(run.output, "HELLO RUN /agent/input\n");
    assert.equal(run.output_truncated, false);
    assert.ok(run.started_at && run.ended_at && run.started_at <= run.ended_at);
    const rc = run.receipt;
    assert.equal(rc.agent_id, a.id);
    assert.equal(rc.uid, a.uid);
    assert.deepEqual(rc.argv, run.argv);
    assert.equal(rc.input_bytes, 9);
    assert.equal(rc.stdout_bytes, Buffer.byteLength(run.output));
    assert.ok(rc.bytes_out > rc.stdout_bytes);
    assert.equal(typeof rc.duration_ms, "number");
    assert.equal(typeof rc.cpu_seconds, "number");
    assert.ok(rc.cpu_seconds >= 0);
    assert.ok(rc.peak_memory_bytes > 0, "peak memory of the run's processes is measured");
    assert.equal(typeof rc.disk_after_mib, "number");
    assert.ok(
      rc.files.write.includes(a.home) && rc.files.read.includes("/agent"),
      "the file access it ran under",
    );
    assert.deepEqual(
      Object.keys(rc).slice(0, 4),
      ["run_id", "kind", "argv", "agent_id"],
      "fields in a fixed order",
    );
    const ev = (await t.call("GET", `/api/runs/${run.id}/events`)).body.items as {
      type: string;
      data: any;
    }[];
    const types = ev.map((e) => e.type);
    assert.equal(types[0], "started");
    assert.ok(types.includes("output"));
    assert.deepEqual(types.slice(-2), ["exit", "measurement"]);
    assert.ok(ev.some((e) => e.type === "output" && e.data.stream === "stderr" && /err/.test(e.data.data)));
    const list = (await t.call("GET", `/api/agents/${a.id}/runs`)).body.items;
    assert.equal(list[0].id, run.id);
    const usage = (await t.call("GET", `/api/agents/${a.id}/usage`)).body;
    assert.equal(typeof usage.workspace_mib, "number");
    assert.equal(typeof usage.machine.workspace_mib, "number");
  });

  test("the input is the run's alone and read-only", async () => {
    const r = await start(a.id, { command: "echo x > /agent/input; echo $?; sleep 1.5", input: "mine" });
    await new Promise((res) => setTimeout(res, 400));
    const peek = await exec(b.id, "cat /agent/input 2>&1; ls /agent 2>&1; ls /run/boxd 2>&1 | head -3");
    assert.doesNotMatch(peek.body.stdout, /mine/);
    const run = await wait(r.body.id);
    assert.notEqual(run.output.trim(), "0", "writing /agent/input must fail");
  });

  test("a NUL in what a run prints is stored (as U+FFFD), in its output and its trace", async () => {
    const r = await start(a.id, { command: "printf 'a\\000b\\n'; printf 'c\\000d' >&2" });
    const run = await wait(r.body.id);
    assert.equal(run.status, "succeeded", run.status_reason);
    assert.equal(run.output, "a\uFFFDb\n");
    const events = (await t.call("GET", `/api/runs/${run.id}/events`)).body.items as {
      type: string;
      data: { stream?: string; data?: string };
    }[];
    const of = (stream: string) =>
      events
        .filter((e) => e.type === "output" && e.data.stream === stream)
        .map((e) => e.data.data)
        .join("");
    assert.equal(of("stdout"), "a\uFFFDb\n");
    assert.equal(of("stderr"), "c\uFFFDd");
  });

  test("one generation per agent (wait: false refuses); cancel; timeout", async () => {
    const r = await start(a.id, { command: "sleep 30" });
    const busy = await start(a.id, { command: "true", wait: false });
    assert.equal(busy.status, 409);
    assert.equal(busy.body.error.code, "generation.busy");
    const other = await start(b.id, { command: "echo b" });
    assert.equal(other.status, 202);
    await new Promise((res) => setTimeout(res, 300));
    const c = await t.call("POST", `/api/runs/${r.body.id}/cancel`);
    assert.equal(c.status, 200);
    const run = await wait(r.body.id);
    assert.equal(run.status, "cancelled");
    const again = await t.call("POST", `/api/runs/${r.body.id}/cancel`);
    assert.equal(again.status, 409);
    assert.equal(again.body.error.code, "run.not_cancellable");
    const to = await start(a.id, { command: "echo before; setsid sleep 100 & sleep 100", timeout_s: 1 });
    const tr = await wait(to.body.id);
    assert.equal(tr.status, "timed_out");
    assert.equal(tr.output, "before\n");
    const ps = await exec(a.id, "ps -eo args | grep 'sleep 100' | grep -v grep || true");
    assert.equal(ps.body.stdout, "");
    assert.equal((await wait(other.body.id)).output, "b\n");
  });

  test("a run's own tighter limits", async () => {
    const mem = await wait(
      (
        await start(a.id, {
          argv: [
            "node",
            "-e",
            "const k=[];for(let i=0;i<40;i++)k.push(Buffer.alloc(8<<20,1));console.log('survived')",
          ],
          limits: { memory_mib: 48 },
        })
      ).body.id,
    );
    assert.equal(mem.status, "failed", JSON.stringify(mem));
    assert.doesNotMatch(mem.output, /survived/);
    assert.deepEqual(mem.receipt.limits, { memory_mib: 48 });
    const free = await wait(
      (
        await start(a.id, {
          argv: [
            "node",
            "-e",
            "const k=[];for(let i=0;i<40;i++)k.push(Buffer.alloc(8<<20,1));console.log('survived')",
          ],
        })
      ).body.id,
    );
    assert.equal(free.output, "survived\n", "the same program passes under the machine's own limit");
    const pids = await wait(
      (
        await start(a.id, {
          argv: forkCount(8),
          limits: { pids: 4 },
        })
      ).body.id,
    );
    // perl itself is one of the 4
    assert.equal(pids.output, "3\n", "3 of 8 children could start");
    const bad = await start(a.id, { command: "true", limits: { memory_mib: 1 } });
    assert.equal(bad.status, 400);
    assert.equal(bad.body.error.code, "request.invalid");
  });

  test("failures and bad input", async () => {
    const f = await wait((await start(a.id, { command: "exit 7" })).body.id);
    assert.equal(f.status, "failed");
    assert.equal(f.exit_code, 7);
    const big = await start(a.id, { command: "true", input: "x".repeat(256 * 1024 + 1) });
    assert.equal(big.status, 413);
    assert.equal(big.body.error.code, "run.input_too_large");
    const ok = await start(a.id, { command: "wc -c < /agent/input", input: "x".repeat(256 * 1024) });
    assert.equal((await wait(ok.body.id)).output.trim(), String(256 * 1024));
    for (const body of [
      { kind: "other", command: "x" },
      { kind: "command" },
      { kind: "command", command: "x", timeout_s: 0 },
      { kind: "command", argv: ["\t", "\ud800"], input: "in" }, // not Unicode: once a 500
    ]) {
      const r = await t.call("POST", `/api/agents/${a.id}/runs`, body);
      assert.equal(r.status, 400);
      assert.equal(r.body.error.code, "request.invalid");
    }
    assert.equal((await t.call("GET", "/api/runs/run_0000000000000000")).status, 404);
  });

  test("disk caps: over the cap refuses with both numbers, freeing space counts at once", async () => {
    const fill = await wait(
      (await start(a.id, { command: "head -c 8388608 /dev/urandom > big.bin" })).body.id,
    );
    assert.equal(fill.status, "succeeded");
    const usage = (await t.call("GET", `/api/agents/${a.id}/usage`)).body;
    assert.ok(usage.workspace_mib >= 8, JSON.stringify(usage));
    const refused = await start(a.id, { command: "true" });
    assert.equal(refused.status, 507);
    assert.equal(refused.body.error.code, "workspace.full");
    assert.match(
      refused.body.error.message,
      new RegExp(`holds ${usage.workspace_mib} MiB, above the 5 MiB limit; free space`),
    );
    // execs are never refused for space: they are how an operator frees it
    const rm1 = await exec(a.id, "rm big.bin && echo freed");
    assert.equal(rm1.body.stdout, "freed\n");
    const ok = await start(a.id, { command: "true" });
    assert.equal(ok.status, 202);
    await wait(ok.body.id);
  });

  test("a measurement that fails refuses the generation with workspace.measure", async () => {
    const c = (
      await t.call("POST", "/api/agents", {
        org_id: org.id,
        machine_id: machine.id,
        name: "c",
        max_workspace_mib: 1,
      })
    ).body;
    await wait((await start(c.id, { command: "head -c 3000000 /dev/zero > z" })).body.id);
    const home = path.join(t.stateRoot, "workspaces", machine.id, c.id);
    await rm(home, { recursive: true, force: true });
    await symlink("/etc", home);
    const r = await start(c.id, { command: "true" });
    assert.equal(r.status, 500);
    assert.equal(r.body.error.code, "workspace.measure");
    await rm(home);
  });

  test("records outlive their agent; deleting an agent cancels its generation", async () => {
    const d = (await t.call("POST", "/api/agents", { org_id: org.id, machine_id: machine.id, name: "d" }))
      .body;
    const run = await wait((await start(d.id, { command: "echo last" })).body.id);
    const going = (await start(d.id, { command: "sleep 60" })).body;
    const waiting = (await start(d.id, { command: "echo never" })).body;
    assert.equal(waiting.status, "queued");
    assert.equal((await t.call("DELETE", `/api/agents/${d.id}`)).status, 204);
    const dropped = (await t.call("GET", `/api/runs/${waiting.id}`)).body;
    assert.equal(dropped.status, "cancelled", "its queued runs end too, never started");
    assert.equal(dropped.started_at, null);
    assert.match(dropped.status_reason, /being deleted/);
    // the delete answered only once the generation's record was written
    const cancelled = (await t.call("GET", `/api/runs/${going.id}`)).body;
    assert.equal(cancelled.status, "cancelled");
    assert.ok(cancelled.ended_at);
    const kept = await t.call("GET", `/api/runs/${run.id}`);
    assert.equal(kept.status, 200);
    assert.equal(kept.body.output, "last\n");
  });

  test("runs a previous server left going become lost, with a reason and an event", async () => {
    await t.server.store.db.insert(schema.runs).values({
      id: "run_00000000000000ab",
      orgId: org.id,
      agentId: a.id,
      machineId: machine.id,
      kind: "command",
      status: "running",
      argv: ["sleep", "100"],
      timeoutS: 100,
      startedAt: new Date(),
    });
    assert.equal(await t.server.recorder.markLost("the server stopped while the run was going on"), 1);
    const lost = (await t.call("GET", "/api/runs/run_00000000000000ab")).body;
    assert.equal(lost.status, "lost");
    assert.match(lost.status_reason, /server stopped/);
    assert.ok(lost.ended_at);
    const ev = (await t.call("GET", "/api/runs/run_00000000000000ab/events")).body.items;
    assert.deepEqual(
      ev.map((e: { type: string }) => e.type),
      ["lost"],
    );
    assert.equal(await t.server.recorder.markLost(), 0, "a run already lost stays as it is");
  });
});
