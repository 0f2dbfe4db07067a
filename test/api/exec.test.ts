// Exec through the API on real boxes: environment, streaming, timeouts, lifecycle, ports.
import assert from "node:assert/strict";
import http from "node:http";
import { after, before, describe, test } from "node:test";
import { previewGet } from "../support/preview.js";
import { boxSkipReason } from "../box/fixture.js";
import { waitFor } from "../conversations/support.js";
import { forkCount } from "../support/forks.js";
import { startTestServer, type TestServer } from "../support/server.js";

describe("exec through the API", { skip: boxSkipReason() ?? false }, () => {
  let t: TestServer;
  let org: { id: string };
  let machine: { id: string };
  let a: { id: string; uid: number; ports: { first: number; last: number }; home: string };
  let b: { id: string; uid: number };

  before(async () => {
    t = await startTestServer({ listen: true, env: { BOX_IDLE_S: "2" } });
    org = (await t.call("POST", "/api/orgs", { name: "exec" })).body;
    machine = (await t.call("POST", "/api/machines", { org_id: org.id, name: "m", memory_mib: 512 })).body;
    a = (await t.call("POST", "/api/agents", { org_id: org.id, machine_id: machine.id, name: "a" })).body;
    b = (await t.call("POST", "/api/agents", { org_id: org.id, machine_id: machine.id, name: "b" })).body;
  });
  after(async () => t.close());

  const exec = (agentId: string, body: unknown) => t.call("POST", `/api/agents/${agentId}/exec`, body);

  test("runs as the agent in its home with warren's environment", async () => {
    const r = await exec(a.id, {
      command: 'id -u; pwd; echo "$HOME|$WARREN_AGENT_HOME|$WARREN_AGENT_ID|$PORT|$WARREN_PORTS|$MINE"',
      env: { MINE: "yes", HOME: "/elsewhere" },
    });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    const [uid, cwd, env] = (r.body.stdout as string).trim().split("\n");
    assert.equal(Number(uid), a.uid);
    assert.equal(cwd, a.home);
    assert.equal(env, `${a.home}|${a.home}|${a.id}|${a.ports.first}|${a.ports.first}-${a.ports.last}|yes`);
    assert.equal(r.body.exit_code, 0);
    assert.equal(r.body.timed_out, false);
    assert.equal(typeof r.body.duration_ms, "number");
    const m = (await t.call("GET", `/api/machines/${machine.id}`)).body;
    assert.equal(m.state, "running");
  });

  test("argv, stdin, stderr, exit codes and signals", async () => {
    const r = await exec(a.id, {
      argv: ["/bin/sh", "-c", "cat; echo oops >&2; exit 3"],
      stdin: "from stdin",
    });
    assert.equal(r.body.stdout, "from stdin");
    assert.equal(r.body.stderr, "oops\n");
    assert.equal(r.body.exit_code, 3);
    const k = await exec(a.id, { command: "kill -9 $$" });
    assert.equal(k.body.exit_code, null);
    assert.equal(k.body.signal, "SIGKILL");
    const cwd = await exec(a.id, { command: "mkdir -p sub && cd sub && pwd", cwd: "." });
    assert.equal(cwd.body.stdout.trim(), a.home + "/sub");
    const rel = await exec(a.id, { argv: ["pwd"], cwd: "sub" });
    assert.equal(rel.body.stdout.trim(), a.home + "/sub");
  });

  test("a timeout kills the whole tree, escaped children too", async () => {
    const r = await exec(a.id, { command: "setsid sleep 300 & (sleep 301 &) ; sleep 302", timeout_ms: 500 });
    assert.equal(r.body.timed_out, true);
    const ps = await exec(a.id, { command: "ps -eo user,args | grep 'sleep 30' | grep -v grep || true" });
    assert.equal(ps.body.stdout, "");
  });

  test("NDJSON streams output as it arrives, then the exit", async () => {
    const url = new URL(`/api/agents/${a.id}/exec`, t.url);
    const lines: { at: number; obj: any }[] = [];
    const t0 = Date.now();
    await new Promise<void>((resolve, reject) => {
      const req = http.request(
        url,
        { method: "POST", headers: { "content-type": "application/json", accept: "application/x-ndjson" } },
        (res) => {
          assert.equal(res.headers["content-type"], "application/x-ndjson");
          let buf = "";
          res.on("data", (c: Buffer) => {
            buf += c.toString();
            let i;
            while ((i = buf.indexOf("\n")) >= 0) {
              lines.push({ at: Date.now() - t0, obj: JSON.parse(buf.slice(0, i)) });
              buf = buf.slice(i + 1);
            }
          });
          res.on("end", resolve);
          res.on("error", reject);
        },
      );
      req.end(JSON.stringify({ command: "echo one; sleep 0.6; echo two >&2; exit 4" }));
    });
    const out = lines.filter((l) => "stream" in l.obj);
    assert.deepEqual(
      out.map((l) => [l.obj.stream, l.obj.data]),
      [
        ["stdout", "one\n"],
        ["stderr", "two\n"],
      ],
    );
    assert.ok(
      (out[1]?.at ?? 0) - (out[0]?.at ?? 0) >= 400,
      "the first line arrived before the command ended",
    );
    const last = lines.at(-1)?.obj;
    assert.equal(last.exit_code, 4);
    assert.equal(last.timed_out, false);
  });

  test("agents cannot read each other's homes on an isolated machine", async () => {
    await exec(b.id, { command: "echo private > secret.txt" });
    const r = await exec(a.id, { command: `cat /home/${b.id}/secret.txt` });
    assert.notEqual(r.body.exit_code, 0);
    assert.match(r.body.stderr, /Permission denied/);
  });

  test("on a trust: shared machine agents read each other's homes, and cannot write them", async () => {
    const m2 = (await t.call("POST", "/api/machines", { org_id: org.id, name: "shared", trust: "shared" }))
      .body;
    const x = (await t.call("POST", "/api/agents", { org_id: org.id, machine_id: m2.id, name: "x" })).body;
    const y = (await t.call("POST", "/api/agents", { org_id: org.id, machine_id: m2.id, name: "y" })).body;
    const w = await exec(y.id, { command: "echo shared-note > note.txt && id -G" });
    assert.equal(w.body.exit_code, 0, JSON.stringify(w.body));
    const r = await exec(x.id, {
      command: `cat /home/${y.id}/note.txt; touch /home/${y.id}/intruder 2>&1; echo rc=$?`,
    });
    assert.match(r.body.stdout, /^shared-note\n/);
    assert.match(r.body.stdout, /Permission denied/);
    assert.match(r.body.stdout, /rc=1/);
    await t.call("POST", `/api/machines/${m2.id}/stop`);
  });

  test("many execs at once", async () => {
    const rs = await Promise.all(
      Array.from({ length: 30 }, (_, i) => exec(i % 2 ? a.id : b.id, { argv: ["echo", String(i)] })),
    );
    rs.forEach((r, i) => assert.equal(r.body.stdout, `${i}\n`));
  });

  test("a command's own tighter limits: memory and processes of its whole tree", async () => {
    const bomb = "const k=[];for(let i=0;i<40;i++)k.push(Buffer.alloc(8<<20,1));console.log('survived')";
    const mem = await exec(a.id, { argv: ["node", "-e", bomb], limits: { memory_mib: 48 } });
    assert.equal(mem.status, 200, JSON.stringify(mem.body));
    assert.doesNotMatch(mem.body.stdout, /survived/);
    assert.ok(mem.body.exit_code !== 0, JSON.stringify(mem.body));
    const free = await exec(a.id, { argv: ["node", "-e", bomb] });
    assert.match(free.body.stdout, /survived/, "the machine's own limit is larger");
    const forks = await exec(a.id, { argv: forkCount(8), limits: { pids: 4 } });
    assert.equal(forks.body.stdout, "3\n", "perl and 3 children make the 4");
    const unlimited = await exec(a.id, { argv: forkCount(8) });
    assert.equal(unlimited.body.stdout, "8\n");
  });

  test("bad exec bodies are request.invalid", async () => {
    for (const body of [
      {},
      { argv: [] },
      { argv: ["x"], command: "y" },
      { command: "x", timeout_ms: -1 },
      { command: "x", env: { "1BAD": "v" } },
      { command: "x", limits: { memory_mib: 1 } },
      { command: "x", limits: { pids: 0 } },
      { command: "x", limits: { cpus: 1 } },
    ]) {
      const r = await exec(a.id, body);
      assert.equal(r.status, 400, JSON.stringify(body));
      assert.equal(r.body.error.code, "request.invalid");
    }
  });

  test("a port is served on its preview's origin, reached through a 307 from the API, within the agent's own block only", async () => {
    const port = a.ports.first + 7;
    const bg = exec(a.id, {
      argv: [
        "node",
        "-e",
        `require("http").createServer((q,r)=>{r.end("hi from "+q.url);if(q.url.startsWith("/quit"))setTimeout(()=>process.exit(0),50)}).listen(${port},"127.0.0.1",()=>console.log("up"));setTimeout(()=>process.exit(0),60000)`,
      ],
      timeout_ms: 65000,
    });
    const moved = await t.inject({ method: "GET", url: `/api/agents/${a.id}/ports/${port}/x/y?z=1` });
    assert.equal(moved.statusCode, 307);
    assert.equal(moved.body, "the port is served on its preview's origin: follow the Location header\n");
    const to = new URL(String(moved.headers.location));
    assert.equal(to.origin, `http://${port}-${a.id}.localhost:${t.previewPort}`);
    assert.equal(to.pathname, "/x/y");
    assert.equal(to.searchParams.get("z"), "1");
    // the preview trades the token for its cookie, then answers the box's page
    const first = await previewGet(t.previewPort!, to);
    assert.equal(first.status, 303, first.body);
    assert.equal(first.headers.location, "/x/y?z=1");
    const cookie = String(first.headers["set-cookie"]).split(";")[0]!;
    let body = "";
    for (let i = 0; i < 100 && body === ""; i++) {
      const r = await previewGet(t.previewPort!, new URL("/x/y?z=1", to.origin), { cookie });
      if (r.status === 200) body = r.body;
      else await new Promise((res) => setTimeout(res, 100));
    }
    assert.equal(body, "hi from /x/y?z=1");
    await previewGet(t.previewPort!, new URL("/quit", to.origin), { cookie });
    const outside = await t.inject({ method: "GET", url: `/api/agents/${a.id}/ports/${a.ports.last + 1}/` });
    assert.equal(outside.statusCode, 400);
    assert.equal(JSON.parse(outside.body).error.code, "request.invalid");
    const bFirst = ((await t.call("GET", `/api/agents/${b.id}`)).body as { ports: { first: number } }).ports
      .first;
    const other = await t.inject({ method: "GET", url: `/api/agents/${a.id}/ports/${bFirst}/` });
    assert.equal(other.statusCode, 400);
    await bg;
  });

  test("an agent listens on its own port block and ephemeral ports, never on another agent's", async () => {
    const b2 = (await t.call("GET", `/api/agents/${b.id}`)).body as { ports: { first: number } };
    const listen = (port: number) =>
      `require("net").createServer().listen(${port},"127.0.0.1",function(){console.log("${port}:ok");this.close()}).on("error",e=>console.log("${port}:"+e.code))`;
    const r = await exec(a.id, {
      argv: [
        "node",
        "-e",
        [a.ports.first, a.ports.last, 0, b2.ports.first, a.ports.last + 1, 8080].map(listen).join(";"),
      ],
    });
    assert.equal(r.body.exit_code, 0, r.body.stderr);
    const seen = new Map(
      (r.body.stdout as string)
        .trim()
        .split("\n")
        .map((l) => l.split(":") as [string, string]),
    );
    assert.equal(seen.get(String(a.ports.first)), "ok");
    assert.equal(seen.get(String(a.ports.last)), "ok");
    assert.equal(seen.get("0"), "ok");
    assert.equal(seen.get(String(b2.ports.first)), "EACCES");
    assert.equal(seen.get(String(a.ports.last + 1)), "EACCES");
    assert.equal(seen.get("8080"), "EACCES");
  });

  test("a process a generation left running keeps the box from idling", async () => {
    const run = await t.call("POST", `/api/agents/${b.id}/runs`, {
      kind: "command",
      command: "setsid sleep 600 >/dev/null 2>&1 < /dev/null & echo $!",
    });
    assert.equal(run.status, 202);
    const done = await waitFor(`run ${run.body.id} to end`, async () => {
      const r = (await t.call("GET", `/api/runs/${run.body.id}`)).body;
      return ["running", "queued"].includes(r.status) ? undefined : r;
    });
    assert.equal(done.status, "succeeded", JSON.stringify(done));
    const pid = String(done.output).trim();
    assert.match(pid, /^\d+$/);
    // three times the idle time (2 s) passes with the process left running: the box stays up
    const until = Date.now() + 6000;
    while (Date.now() < until) {
      const m = (await t.call("GET", `/api/machines/${machine.id}`)).body;
      assert.equal(m.state, "running", "idle time passed, but the generation's process still runs");
      await new Promise((res) => setTimeout(res, 250));
    }
    // and it was that process: once it ends, the box is stopped for being idle
    assert.equal((await exec(b.id, { command: `kill ${pid}` })).body.exit_code, 0);
    const stopped = await waitFor("the box stopped once idle", async () => {
      const m = (await t.call("GET", `/api/machines/${machine.id}`)).body;
      return m.state === "stopped" ? m : undefined;
    });
    assert.match(stopped.state_reason, /idle/);
  });

  test("a box that died on its own is started again by the next exec", async () => {
    assert.equal((await exec(a.id, { argv: ["true"] })).body.exit_code, 0);
    // the box dies behind the runtime's back (as if killed or out of memory)
    await t.server.provider.stop(machine.id);
    const r = await exec(a.id, { argv: ["echo", "back"] });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.equal(r.body.stdout, "back\n");
    assert.equal((await t.server.provider.list()).filter((x) => x.state === "running").length, 1);
  });

  test("stops when idle, starts again on demand with every file in place", async () => {
    await exec(a.id, { command: "echo kept > kept.txt" });
    let state = "running";
    for (let i = 0; i < 250 && state !== "stopped"; i++) {
      await new Promise((res) => setTimeout(res, 100));
      state = (await t.call("GET", `/api/machines/${machine.id}`)).body.state;
    }
    const m = (await t.call("GET", `/api/machines/${machine.id}`)).body;
    assert.equal(m.state, "stopped");
    assert.match(m.state_reason, /idle/);
    const r = await exec(a.id, { argv: ["cat", "kept.txt"] });
    assert.equal(r.body.stdout, "kept\n");
    const stop = await t.call("POST", `/api/machines/${machine.id}/stop`);
    assert.equal(stop.status, 200);
    assert.equal(stop.body.state, "stopped");
    assert.equal(stop.body.state_reason, "stopped by an operator");
    assert.equal((await t.server.provider.list()).filter((x) => x.state === "running").length, 0);
  });
});
