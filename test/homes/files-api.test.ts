// The home file routes over HTTP (in-process), each rule and its refusal code.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdirSync, readFileSync, readdirSync, symlinkSync, writeFileSync, statSync } from "node:fs";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { schema } from "../../src/store/index.js";
import { startTestServer, type TestServer } from "../support/server.js";

describe("home file routes", () => {
  let t: TestServer;
  let agent: { id: string; machine_id: string; uid: number };
  let home: string;
  let outside: string;

  before(async () => {
    t = await startTestServer();
    const org = (await t.call("POST", "/api/orgs", { name: "files" })).body;
    const m = (await t.call("POST", "/api/machines", { org_id: org.id, name: "m" })).body;
    agent = (await t.call("POST", "/api/agents", { org_id: org.id, machine_id: m.id, name: "a" })).body;
    home = path.join(t.stateRoot, "workspaces", m.id, agent.id);
    outside = path.join(t.stateRoot, "outside");
    mkdirSync(outside);
    writeFileSync(path.join(outside, "secret"), "TOP-SECRET");
  });
  after(async () => t.close());

  const get = (p: string) => t.inject({ method: "GET", url: `/api/agents/${agent.id}/files/${p}` });
  const put = (p: string, data: string | Buffer) =>
    t.inject({
      method: "PUT",
      url: `/api/agents/${agent.id}/files/${p}`,
      payload: data,
      headers: { "content-type": "application/octet-stream" },
    });
  const code = (r: { body: string }) => (JSON.parse(r.body) as { error: { code: string } }).error.code;

  test("write then read, folders made one at a time and owned by the agent", async () => {
    const w = await put("a/b/c.txt", "hello");
    assert.equal(w.statusCode, 204);
    const r = await get("a/b/c.txt");
    assert.equal(r.statusCode, 200);
    assert.equal(r.body, "hello");
    assert.equal(statSync(path.join(home, "a/b")).uid, agent.uid);
    assert.equal(statSync(path.join(home, "a/b/c.txt")).uid, agent.uid);
    const abs = await get(`${encodeURIComponent(`/home/${agent.id}/a/b/c.txt`)}`);
    assert.equal(abs.statusCode, 200);
    // a JSON content type is still the file's bytes
    const j = await t.inject({
      method: "PUT",
      url: `/api/agents/${agent.id}/files/j.json`,
      payload: '{"a":1}',
      headers: { "content-type": "application/json" },
    });
    assert.equal(j.statusCode, 204);
    assert.equal(readFileSync(path.join(home, "j.json"), "utf8"), '{"a":1}');
  });

  test("paths that leave the home are file.invalid_path", async () => {
    for (const p of [
      "%2e%2e%2fx",
      "a%2f%2e%2e%2f%2e%2e%2fetc%2fpasswd",
      encodeURIComponent("/etc/passwd"),
      encodeURIComponent("/home/agt_0000000000000000/x"),
      "a%00b",
    ]) {
      const r = await get(p);
      assert.equal(r.statusCode, 400, p);
      assert.equal(code(r), "file.invalid_path", p);
    }
  });

  test("links: inside followed on read, out refused, any refused on write", async () => {
    writeFileSync(path.join(home, "real.txt"), "real");
    symlinkSync("real.txt", path.join(home, "in-link"));
    symlinkSync(path.join(outside, "secret"), path.join(home, "out-link"));
    symlinkSync(outside, path.join(home, "out-dir"));
    symlinkSync("../../../outside/secret", path.join(home, "rel-out"));
    assert.equal((await get("in-link")).body, "real");
    for (const p of ["out-link", "out-dir/secret", "rel-out"]) {
      const r = await get(p);
      assert.equal(r.statusCode, 400, p);
      assert.equal(code(r), "file.link", p);
      assert.doesNotMatch(r.body, /TOP-SECRET/);
    }
    for (const p of ["in-link", "out-link", "out-dir/new"]) {
      const r = await put(p, "x");
      assert.equal(r.statusCode, 400, p);
      assert.equal(code(r), "file.link", p);
    }
    assert.deepEqual(readdirSync(outside), ["secret"]);
    assert.equal(readFileSync(path.join(outside, "secret"), "utf8"), "TOP-SECRET");
  });

  test("folders, FIFOs and missing files", async () => {
    mkdirSync(path.join(home, "dir"));
    execFileSync("mkfifo", [path.join(home, "fifo")]);
    const d = await get("dir");
    assert.equal(code(d), "file.not_regular");
    const f = await get("fifo");
    assert.equal(f.statusCode, 400);
    assert.equal(code(f), "file.not_regular");
    assert.equal(code(await put("fifo", "x")), "file.not_regular");
    const n = await get("missing");
    assert.equal(n.statusCode, 404);
    assert.equal(code(n), "file.not_found");
  });

  test("too large is file.too_large", async () => {
    const big = Buffer.alloc(32 * 1024 * 1024 + 1, 1);
    const r = await put("big", big);
    assert.equal(r.statusCode, 413);
    assert.equal(code(r), "file.too_large");
  });

  test("viewers read but cannot write; other organisations see nothing", async () => {
    const other = await startTestServer({ env: { AUTH_MODE: "trusted-header" } });
    try {
      const h = (e: string) => ({ "x-forwarded-email": e });
      const org = (await other.call("POST", "/api/orgs", { name: "o" }, h("own@x.io"))).body;
      const m = (await other.call("POST", "/api/machines", { org_id: org.id, name: "m" }, h("own@x.io")))
        .body;
      const a = (
        await other.call(
          "POST",
          "/api/agents",
          { org_id: org.id, machine_id: m.id, name: "a" },
          h("own@x.io"),
        )
      ).body;
      await other.call(
        "PUT",
        `/api/orgs/${org.id}/members`,
        { email: "view@x.io", role: "viewer" },
        h("own@x.io"),
      );
      const w = await other.inject({
        method: "PUT",
        url: `/api/agents/${a.id}/files/x`,
        payload: "1",
        headers: { ...h("own@x.io"), "content-type": "text/plain" },
      });
      assert.equal(w.statusCode, 204);
      assert.equal(
        (await other.inject({ method: "GET", url: `/api/agents/${a.id}/files/x`, headers: h("view@x.io") }))
          .statusCode,
        200,
      );
      const vw = await other.inject({
        method: "PUT",
        url: `/api/agents/${a.id}/files/x`,
        payload: "2",
        headers: { ...h("view@x.io"), "content-type": "text/plain" },
      });
      assert.equal(vw.statusCode, 403);
      // an auditor reads the record without workloads: no files, no run output, no trace
      await other.call(
        "PUT",
        `/api/orgs/${org.id}/members`,
        { email: "audit@x.io", role: "auditor" },
        h("own@x.io"),
      );
      const af = await other.inject({
        method: "GET",
        url: `/api/agents/${a.id}/files/x`,
        headers: h("audit@x.io"),
      });
      assert.equal(af.statusCode, 403);
      assert.equal(code(af), "access.denied");
      // A receipt in the contract's shape: the server answers only what fits it.
      const receipt = {
        run_id: "run_0000000000000abc",
        kind: "command",
        argv: ["echo", "private"],
        agent_id: a.id,
        agent_name: "a",
        machine_id: m.id,
        uid: 10000,
        server_version: "0.1.0",
        started_at: "2026-01-01T00:00:00.000Z",
        ended_at: "2026-01-01T00:00:01.000Z",
        duration_ms: 1000,
        exit_code: 0,
        signal: null,
        cpu_seconds: null,
        peak_memory_bytes: null,
        bytes_out: 8,
        stdout_bytes: 8,
        stderr_bytes: 0,
        input_bytes: 0,
        limits: null,
        disk_before_mib: null,
        disk_after_mib: null,
        machine_disk_before_mib: null,
        machine_disk_after_mib: null,
      };
      await other.server.store.db.insert(schema.runs).values({
        id: "run_0000000000000abc",
        orgId: org.id,
        agentId: a.id,
        machineId: m.id,
        kind: "command",
        status: "succeeded",
        argv: ["echo", "private"],
        timeoutS: 10,
        output: "private output",
        receipt,
      });
      const ar = await other.call("GET", "/api/runs/run_0000000000000abc", undefined, h("audit@x.io"));
      assert.equal(ar.status, 200);
      assert.equal(ar.body.output, "");
      assert.equal(ar.body.output_withheld, true);
      assert.deepEqual(ar.body.receipt, receipt);
      const al = await other.call("GET", `/api/agents/${a.id}/runs`, undefined, h("audit@x.io"));
      assert.equal(al.body.items[0].output, "");
      const ae = await other.call("GET", "/api/runs/run_0000000000000abc/events", undefined, h("audit@x.io"));
      assert.equal(ae.status, 403);
      const vr = await other.call("GET", "/api/runs/run_0000000000000abc", undefined, h("view@x.io"));
      assert.equal(vr.body.output, "private output");
      assert.equal(vr.body.output_withheld, undefined);
      const stranger = await other.inject({
        method: "GET",
        url: `/api/agents/${a.id}/files/x`,
        headers: h("stranger@x.io"),
      });
      assert.equal(stranger.statusCode, 404);
      assert.equal(code(stranger), "not_found");
    } finally {
      await other.close();
    }
  });
});
