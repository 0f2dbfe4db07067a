// The agent's terminal through the API, on real boxes: POST /cli, the WebSocket of /cli/tty
// (a real warren server on a loopback port, a real ws client), sharing, reconnects, roles,
// refusals, a flood, the box stopping and the idle timer.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { boxSkipReason } from "../box/fixture.js";
import { startTestServer, type TestServer } from "../support/server.js";
import { openTty, tty, type Tty } from "./ws.js";

const skip = boxSkipReason() ?? false;
const wsUrl = (t: TestServer, path: string) => `${t.url!.replace(/^http/, "ws")}${path}`;

describe("the agent's terminal", { skip }, () => {
  let t: TestServer;
  let org: { id: string };
  let machine: { id: string };
  let a: { id: string; uid: number; home: string; ports: { first: number; last: number } };
  const open: Tty[] = [];
  const ttyOf = async (agentId: string, query = "") => {
    const x = await tty(wsUrl(t, `/api/agents/${agentId}/cli/tty${query}`));
    open.push(x);
    return x;
  };

  before(async () => {
    t = await startTestServer({ listen: true });
    org = (await t.call("POST", "/api/orgs", { name: "term" })).body;
    machine = (await t.call("POST", "/api/machines", { org_id: org.id, name: "m", memory_mib: 512 })).body;
    a = (await t.call("POST", "/api/agents", { org_id: org.id, machine_id: machine.id, name: "a" })).body;
  });
  after(async () => {
    for (const x of open) x.ws.terminate();
    await t?.close();
  });

  test("POST /cli starts the machine and the shell: ready", async () => {
    const r = await t.call("POST", `/api/agents/${a.id}/cli`);
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.deepEqual(r.body, { status: "ready" });
    assert.equal((await t.call("GET", `/api/machines/${machine.id}`)).body.state, "running");
  });

  test("a login shell as the agent, in its home, with its environment and no secret value", async () => {
    const secret = await t.call("POST", "/api/secrets", {
      org_id: org.id,
      name: "TTY_TOKEN",
      description: "must not reach the terminal",
      value: "s3cr3t-value-for-the-tty",
      grants: [{ scope: "agent", id: a.id }],
    });
    assert.equal(secret.status, 201, JSON.stringify(secret.body));
    const x = await ttyOf(a.id);
    const hello = await x.message("attached");
    assert.deepEqual(hello, { type: "attached", mode: "write", shared: true, cols: 80, rows: 24 });
    x.type(
      'echo "[$TERM|$HOME|$WARREN_AGENT_HOME|$PORT|$WARREN_PORTS]"; id -u; pwd; shopt -q login_shell && echo LOGIN; env | grep -c TTY_TOKEN; echo DO""NE\r',
    );
    await x.expect(/DONE/);
    const out = x.out();
    assert.ok(
      out.includes(`[xterm-256color|${a.home}|${a.home}|${a.ports.first}|${a.ports.first}-${a.ports.last}]`),
      out,
    );
    assert.match(out, new RegExp(`^${a.uid}\\r$`, "m"));
    assert.match(out, new RegExp(`^${a.home}\\r$`, "m"));
    assert.match(out, /^LOGIN\r$/m);
    assert.match(out, /^0\r$/m);
    assert.ok(!out.includes("s3cr3t-value-for-the-tty"));
  });

  test("one shell shared by every viewer; a reconnect returns to it and replays the screen", async () => {
    const one = await ttyOf(a.id);
    await one.message("attached");
    one.type("echo PID=$$ MARK1\r");
    const [, pid] = (await one.expect(/PID=(\d+) MARK1\r/)) as string[];
    const two = await ttyOf(a.id);
    await two.message("attached");
    // the second viewer got the recent screen, and sees what the first one types
    await two.expect(/PID=\d+ MARK1/);
    const at = two.out().length;
    one.type("echo MARK2\r");
    await two.expect(/^MARK2\r$/m, at);
    one.ws.close();
    await one.closed;
    const three = await ttyOf(a.id);
    await three.expect(/MARK2/); // replayed
    const from = three.out().length;
    three.type("echo PID=$$ MARK3\r");
    const [, again] = (await three.expect(/PID=(\d+) MARK3\r/, from)) as string[];
    assert.equal(again, pid, "the same shell");
  });

  test("resize: the shell sees the size a writer sets; other viewers are told", async () => {
    const x = await ttyOf(a.id);
    const y = await ttyOf(a.id);
    await y.message("attached");
    const at = x.out().length;
    x.json({ type: "resize", cols: 100, rows: 30 });
    await y.message("resize");
    assert.deepEqual(
      y.messages.find((m) => m.type === "resize"),
      { type: "resize", cols: 100, rows: 30 },
    );
    x.type("stty size\r");
    await x.expect(/^30 100\r$/m, at);
  });

  test("bad input: a bad JSON frame is answered and the terminal stays; an oversized frame closes it (1009)", async () => {
    const x = await ttyOf(a.id);
    await x.message("attached");
    x.ws.send("not json");
    x.json({ type: "resize", cols: 0, rows: 10 });
    const deadline = Date.now() + 30_000;
    while (x.messages.filter((m) => m.type === "error").length < 2 && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 50));
    const errors = x.messages.filter((m) => m.type === "error");
    assert.equal(errors.length, 2, JSON.stringify(x.messages));
    assert.equal(errors[0].code, "request.invalid");
    const at = x.out().length;
    x.type('echo STILL""HERE\r');
    await x.expect(/STILLHERE/, at);
    x.ws.send(Buffer.alloc(100 * 1024, 0x61), { binary: true });
    const c = await x.closed;
    assert.equal(c.code, 1009);
  });

  test("refusals before the upgrade: unknown agent 404, bad id 400, another origin 403, plain GET 400", async () => {
    const ghost = await openTty(wsUrl(t, "/api/agents/agt_0000000000000000/cli/tty"));
    assert.ok("status" in ghost);
    assert.equal(ghost.status, 404);
    assert.equal(ghost.body.error.code, "not_found");
    const bad = await openTty(wsUrl(t, "/api/agents/nope/cli/tty"));
    assert.ok("status" in bad);
    assert.equal(bad.status, 400);
    assert.equal(bad.body.error.code, "request.invalid");
    const evil = await openTty(wsUrl(t, `/api/agents/${a.id}/cli/tty`), { origin: "http://evil.example" });
    assert.ok("status" in evil);
    assert.equal(evil.status, 403);
    assert.equal(evil.body.error.code, "origin.refused");
    const same = await openTty(wsUrl(t, `/api/agents/${a.id}/cli/tty`), { origin: t.url! });
    assert.ok("ws" in same);
    same.ws.close();
    const plain = await t.call("GET", `/api/agents/${a.id}/cli/tty`);
    assert.equal(plain.status, 400);
    assert.equal(plain.body.error.code, "request.invalid");
    assert.equal((await t.call("POST", "/api/agents/agt_0000000000000000/cli")).status, 404);
  });

  test("a command of its own: not the shared shell, its exit status, then a clean close", async () => {
    const q = "?argv=/bin/sh&argv=-c&argv=" + encodeURIComponent('tty; read line; echo "got $line"; exit 5');
    const x = await ttyOf(a.id, q + "&cols=120&rows=40");
    const hello = await x.message("attached");
    assert.equal(hello.shared, false);
    assert.equal(hello.cols, 120);
    await x.expect(/\/dev\/pts\/\d+/);
    x.type("hello\r");
    await x.expect(/got hello/);
    const exit = await x.message("exit");
    assert.equal(exit.exit_code, 5);
    const c = await x.closed;
    assert.equal(c.code, 1000);
    assert.match(c.reason, /exited with code 5/);
  });

  test("an input flood on one terminal does not stall another machine's box", async () => {
    const m2 = (await t.call("POST", "/api/machines", { org_id: org.id, name: "m2", memory_mib: 256 })).body;
    const b = (await t.call("POST", "/api/agents", { org_id: org.id, machine_id: m2.id, name: "b" })).body;
    assert.equal((await t.call("POST", `/api/agents/${b.id}/exec`, { argv: ["true"] })).status, 200);
    const x = await ttyOf(a.id, "?argv=sleep&argv=30");
    await x.message("attached");
    // 32 MiB nobody reads: the terminal, boxd's queue, the sockets fill, and the server stops reading the client
    const chunk = Buffer.alloc(32 * 1024, 0x78);
    for (let i = 0; i < 1024; i++) x.ws.send(chunk, { binary: true });
    await new Promise((r) => setTimeout(r, 500));
    const times: number[] = [];
    for (let i = 0; i < 5; i++) {
      const t0 = Date.now();
      const r = await t.call("POST", `/api/agents/${b.id}/exec`, { argv: ["echo", "ok"] });
      times.push(Date.now() - t0);
      assert.equal(r.body.stdout, "ok\n");
    }
    assert.ok(Math.max(...times) < 2000, `execs on the other box took ${times.join(", ")} ms`);
    assert.ok(x.ws.bufferedAmount > 0, "the flood was pushed back to the client");
    x.ws.terminate();
  });

  test("the box stopping ends the terminal with a clean close and its reason; the next one is a new shell", async () => {
    const x = await ttyOf(a.id);
    await x.message("attached");
    x.type("export OLD_SHELL=yes; echo OL''D\r");
    await x.expect(/^OLD\r$/m);
    assert.equal((await t.call("POST", `/api/machines/${machine.id}/stop`)).status, 200);
    const exit = await x.message("exit");
    assert.match(exit.reason, /the machine stopped/);
    const c = await x.closed;
    assert.equal(c.code, 1000);
    assert.match(c.reason, /machine stopped/);
    assert.deepEqual((await t.call("POST", `/api/agents/${a.id}/cli`)).body, { status: "ready" });
    const y = await ttyOf(a.id);
    await y.message("attached");
    y.type('echo "[${OLD_SHELL:-new shell}]"\r');
    await y.expect(/^\[new shell\]\r$/m);
    assert.ok(!y.out().includes("OLD_SHELL=yes"), "a new shell replays nothing of the old one");
    y.type("exit 4\r");
    const e = await y.message("exit");
    assert.equal(e.exit_code, 4);
    assert.equal((await y.closed).code, 1000);
  });

  test("deleting the agent ends its terminal (agent.deleted) with a clean close and its reason", async () => {
    const gone = (
      await t.call("POST", "/api/agents", { org_id: org.id, machine_id: machine.id, name: "gone" })
    ).body;
    const x = await ttyOf(gone.id);
    await x.message("attached");
    x.type("echo U''P\r");
    await x.expect(/^UP\r$/m);
    assert.equal((await t.call("DELETE", `/api/agents/${gone.id}`)).status, 204);
    const exit = await x.message("exit", 10_000);
    assert.match(exit.reason, /the agent was deleted/);
    assert.equal((await x.closed).code, 1000);
  });
});

describe("the agent's terminal and roles", { skip }, () => {
  let t: TestServer;
  let agent: { id: string; home: string };
  const as = (email: string) => ({ "x-forwarded-email": email });
  const sockets: Tty[] = [];

  before(async () => {
    t = await startTestServer({ listen: true, env: { AUTH_MODE: "trusted-header" } });
    const owner = as("owner@example.com");
    const org = (await t.call("POST", "/api/orgs", { name: "roles" }, owner)).body;
    for (const role of ["viewer", "auditor", "admin"])
      await t.call("PUT", `/api/orgs/${org.id}/members`, { email: `${role}@example.com`, role }, owner);
    // an editor holds an area, and a terminal is never inside one
    await t.call("PUT", `/api/orgs/${org.id}/areas/work`, { folders: ["work"] }, owner);
    const editor = { email: "editor@example.com", role: "writer", areas: ["work"] };
    assert.equal((await t.call("PUT", `/api/orgs/${org.id}/members`, editor, owner)).status, 200);
    const m = (await t.call("POST", "/api/machines", { org_id: org.id, name: "m", memory_mib: 256 }, owner))
      .body;
    agent = (await t.call("POST", "/api/agents", { org_id: org.id, machine_id: m.id, name: "a" }, owner))
      .body;
  });
  after(async () => {
    for (const s of sockets) s.ws.terminate();
    await t?.close();
  });
  const url = () => wsUrl(t, `/api/agents/${agent.id}/cli/tty`);

  test("viewers watch read-only, auditors, editors (fenced) and strangers are refused, an admin types", async () => {
    // nothing runs yet: a viewer is told so, and cannot start it
    assert.equal(
      (await t.call("POST", `/api/agents/${agent.id}/cli`, undefined, as("viewer@example.com"))).status,
      403,
    );
    const early = await tty(url(), as("viewer@example.com"));
    const none = await early.message("exit");
    assert.match(none.reason, /no terminal is running/);
    assert.equal((await early.closed).code, 1000);

    const editor = await tty(url(), as("admin@example.com"));
    sockets.push(editor);
    assert.equal((await editor.message("attached")).mode, "write");
    const viewer = await tty(url(), as("viewer@example.com"));
    sockets.push(viewer);
    assert.equal((await viewer.message("attached")).mode, "watch");
    viewer.type(`touch ${agent.home}/by-viewer\r`);
    viewer.json({ type: "resize", cols: 50, rows: 10 });
    editor.type(`ls ${agent.home}; stty size; echo BY""ADMIN\r`);
    await viewer.expect(/BYADMIN/);
    await editor.expect(/BYADMIN/);
    assert.ok(!editor.out().includes("by-viewer"), "the viewer's keys were dropped");
    assert.match(editor.out(), /^24 80\r$/m, "the viewer's resize was dropped");

    const auditor = await openTty(url(), as("auditor@example.com"));
    assert.ok("status" in auditor);
    assert.equal(auditor.status, 403);
    assert.equal(auditor.body.error.code, "access.denied");
    const fenced = await openTty(url(), as("editor@example.com"));
    assert.ok("status" in fenced);
    assert.equal(fenced.status, 403);
    assert.equal(fenced.body.error.code, "area.refused");
    const stranger = await openTty(url(), as("stranger@example.com"));
    assert.ok("status" in stranger);
    assert.equal(stranger.status, 404);
    const nobody = await openTty(url());
    assert.ok("status" in nobody);
    assert.equal(nobody.status, 401);
    const cmd = await openTty(`${url()}?argv=id`, as("viewer@example.com"));
    assert.ok("status" in cmd);
    assert.equal(cmd.status, 403);
  });
});

describe("the agent's terminal and the idle timer", { skip }, () => {
  let t: TestServer;
  after(async () => t?.close());

  test("input keeps the machine up (restarting the idle timer at most every 30 s); an idle terminal lets it stop", async () => {
    t = await startTestServer({ listen: true, env: { BOX_IDLE_S: "3" } });
    const org = (await t.call("POST", "/api/orgs", { name: "idle" })).body;
    const m = (await t.call("POST", "/api/machines", { org_id: org.id, name: "m", memory_mib: 256 })).body;
    const agent = (await t.call("POST", "/api/agents", { org_id: org.id, machine_id: m.id, name: "a" })).body;
    const state = async () => (await t.call("GET", `/api/machines/${m.id}`)).body.state as string;
    assert.equal((await t.call("POST", `/api/agents/${agent.id}/cli`)).status, 200);
    const t0 = Date.now();
    const x = await tty(wsUrl(t, `/api/agents/${agent.id}/cli/tty`));
    try {
      await x.message("attached");
      await new Promise((r) => setTimeout(r, 2000));
      x.type("echo typed\r"); // the first input: the idle timer starts over (3 s from now)
      const typed = Date.now();
      await x.expect(/^typed\r$/m);
      await new Promise((r) => setTimeout(r, Math.max(0, t0 + 4500 - Date.now())));
      assert.equal(await state(), "running", "input restarted the idle timer");
      x.type("echo again\r"); // within 30 s of the last: does not restart it
      const exit = await x.message("exit", 10_000);
      const stoppedAfter = Date.now() - typed;
      assert.match(exit.reason, /the machine stopped: idle/);
      // the second input would have kept it up until 3 s after it (about 5.5 s after the first)
      assert.ok(stoppedAfter < 4800, `stopped ${stoppedAfter} ms after the first input`);
      assert.ok(stoppedAfter >= 2900, `stopped ${stoppedAfter} ms after the first input`);
      for (let i = 0; i < 100 && (await state()) !== "stopped"; i++)
        await new Promise((r) => setTimeout(r, 50));
      assert.equal(await state(), "stopped");
    } finally {
      x.ws.terminate();
    }
  });
});
