// A server that starts while its container engine is down: without WARREN_ALLOW_DEGRADED
// naming the oci checks it refuses to start, as before; with it, it boots, a run asked for
// waits queued with why (the oci provider is down), and once the engine answers again the box
// the last server left is taken back (the same container, not a second one) and the run runs
// in it. The engine is a Podman service of the test's own on a socket of its own, stopped and
// started again mid-test; the test's boxes and service are removed whatever happens.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { boxSkipReason } from "../box/fixture.js";
import { startTestServer, type TestServer } from "../support/server.js";

const run = promisify(execFile);
const checkout = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const terminal = ["succeeded", "failed", "timed_out", "cancelled", "lost"];
const skip =
  process.env.WARREN_PROVIDER !== "oci"
    ? "the oci phase of scripts/test.sh runs it (WARREN_PROVIDER=oci)"
    : (boxSkipReason() ?? false);

describe("a server whose container engine is down at boot", { skip }, () => {
  let dir = "";
  let sock = "";
  let servicePid = 0;
  let stateRoot = "";
  let t: TestServer | undefined;
  let orgId = "";

  /** Podman's API service on the test's socket (scripts/oci.sh waits until it answers). */
  const engineUp = async () => {
    const { stdout } = await run(path.join(checkout, "scripts/oci.sh"), ["service", sock]);
    servicePid = Number(stdout.trim().split(/\s+/)[1]);
    assert.ok(servicePid > 0, stdout);
  };
  /** Ends the service (its containers go on) and waits until nothing answers on the socket. */
  const engineDown = async () => {
    const pid = servicePid;
    servicePid = 0;
    process.kill(pid, "SIGTERM");
    for (;;) {
      const alive = await run("curl", ["-sf", "--unix-socket", sock, "http://d/_ping"]).then(
        () => true,
        () => false,
      );
      if (!alive) return;
      await new Promise((r) => setTimeout(r, 50));
    }
  };
  const serve = () =>
    startTestServer({
      stateRoot,
      env: {
        WARREN_PROVIDER: "oci",
        WARREN_OCI_SOCKET: sock,
        WARREN_ALLOW_DEGRADED: "oci_engine,oci_image,oci_runtime",
      },
    });
  const until = async (id: string, pred: (r: any) => boolean, what: string, ms = 120_000) => {
    const end = Date.now() + ms;
    for (;;) {
      const r = (await t!.call("GET", `/api/runs/${id}`)).body;
      if (pred(r)) return r;
      if (Date.now() > end) throw new Error(`run ${id} is ${r.status} (${r.status_reason}), not ${what}`);
      await new Promise((res) => setTimeout(res, 50));
    }
  };
  const containers = async (machine: string) =>
    (
      await run("podman", ["ps", "-a", "--filter", `label=warren.machine=${machine}`, "--format", "{{.ID}}"])
    ).stdout
      .trim()
      .split("\n")
      .filter(Boolean);

  before(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), "warren-engine-down-"));
    sock = path.join(dir, "podman.sock");
    stateRoot = path.join(dir, "state");
  });
  after(async () => {
    // the boxes are removed through an engine that answers
    if (t) {
      if (!servicePid) await engineUp().catch(() => undefined);
      await t.close().catch(() => undefined);
    }
    // a box no server holds (the second did not boot): removed by its organisation's label
    if (orgId) {
      const { stdout } = await run("podman", ["ps", "-aq", "--filter", `label=warren.org=${orgId}`]);
      for (const id of stdout.split("\n").filter(Boolean))
        await run("podman", ["rm", "-f", id]).catch(() => {});
    }
    if (servicePid) process.kill(servicePid, "SIGTERM");
    rmSync(dir, { recursive: true, force: true, maxRetries: 3 });
  });

  test("boots, the run waits saying the provider is down, and runs in the adopted box once it answers", async () => {
    // the last server: its machine's box runs, and is left running when it stops
    await engineUp();
    t = await serve();
    const org = (await t.call("POST", "/api/orgs", { name: "engine-down" })).body;
    orgId = org.id;
    const machine = (await t.call("POST", "/api/machines", { org_id: org.id, name: "m" })).body;
    const agent = (await t.call("POST", "/api/agents", { org_id: org.id, machine_id: machine.id, name: "a" }))
      .body;
    const first = await t.call("POST", `/api/agents/${agent.id}/runs`, {
      kind: "command",
      command: "echo one > one.txt",
      timeout_s: 120,
    });
    assert.equal(first.status, 202, JSON.stringify(first.body));
    assert.equal(
      (await until(first.body.id, (x) => terminal.includes(x.status), "ended")).status,
      "succeeded",
    );
    const before = await containers(machine.id);
    assert.equal(before.length, 1, `the machine has one container: ${before.join(", ")}`);
    await t.server.close();
    t = undefined;

    // the engine goes down: a server that does not accept it refuses to start, as before
    await engineDown();
    await assert.rejects(
      startTestServer({ stateRoot, env: { WARREN_PROVIDER: "oci", WARREN_OCI_SOCKET: sock } }),
      /cannot start: oci_engine: no engine answers/,
    );
    // one that accepts running without the engine boots all the same
    t = await serve();
    const health = await t.call("GET", "/health");
    assert.equal(health.status, 200);
    assert.ok(health.body.degraded.includes("oci_engine"), JSON.stringify(health.body));
    const r = await t.call("POST", `/api/agents/${agent.id}/runs`, {
      kind: "command",
      command: "cat one.txt; echo two",
      timeout_s: 300,
    });
    assert.equal(r.status, 202, JSON.stringify(r.body));
    const waiting = await until(r.body.id, (x) => x.status_reason !== null, "waiting with a reason");
    assert.equal(waiting.status, "queued", JSON.stringify(waiting));
    assert.match(waiting.status_reason, /waiting for its machine's box to start: .*the oci provider is down/);
    assert.equal(waiting.started_at, null);

    // the engine answers again: the box is taken back (the same container) and the run runs there
    await engineUp();
    const done = await until(r.body.id, (x) => terminal.includes(x.status), "ended");
    assert.equal(done.status, "succeeded", JSON.stringify(done));
    assert.equal(done.output, "one\ntwo\n");
    assert.equal(done.status_reason, null);
    assert.deepEqual(await containers(machine.id), before);
    const m = (await t.call("GET", `/api/machines/${machine.id}`)).body;
    assert.equal(m.state, "running");
    assert.match(m.state_reason, /adopted after a server restart/);
  });
});
