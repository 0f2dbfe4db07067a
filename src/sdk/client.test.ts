// The SDK against a real server over real HTTP (PGlite in a temporary state root).
import assert from "node:assert/strict";
import { boxSkipReason } from "../../test/box/fixture.js";
import { mkdtemp, rm } from "node:fs/promises";
import { createServer as createHttpServer, type Server as HttpServer } from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test, type TestContext } from "node:test";
import { parseConfig } from "../config/index.js";
import { createServer, type Server } from "../server.js";
import {
  isExecExit,
  isWarrenApiError,
  WarrenApiError,
  WarrenClient,
  type Agent,
  type ExecStreamEvent,
  type Machine,
  type Org,
} from "./index.js";

let dir = "";
let server: Server | undefined;
let client: WarrenClient;

async function rejects(p: Promise<unknown>, status: number, code: string): Promise<WarrenApiError> {
  try {
    await p;
  } catch (err) {
    assert.ok(isWarrenApiError(err), `expected a WarrenApiError, got ${String(err)}`);
    assert.equal(err.code, code, err.message);
    assert.equal(err.status, status);
    assert.equal(err.name, "WarrenApiError");
    assert.ok(err.message.length > 0);
    return err;
  }
  assert.fail(`expected ${code}`);
}

/** An org, a machine and an agent of its own for a test. */
async function place(name: string): Promise<{ org: Org; machine: Machine; agent: Agent }> {
  const org = await client.orgs.create({ name });
  const machine = await client.machines.create({ org_id: org.id, name: `${name}-m` });
  const agent = await client.agents.create({ org_id: org.id, machine_id: machine.id, name: `${name}-a` });
  return { org, machine, agent };
}

/**
 * Runs `use`; on a host that cannot run boxes at all (boxSkipReason), a 503 box.unavailable
 * makes the test a reported skip. Anywhere else every error is a failure.
 */
async function orSkip(t: TestContext, use: () => Promise<void>): Promise<void> {
  try {
    await use();
  } catch (err) {
    const why = boxSkipReason();
    if (why !== null && isWarrenApiError(err) && err.status === 503 && err.code === "box.unavailable") {
      t.skip(`boxes cannot run here: ${why}`);
      return;
    }
    throw err;
  }
}

describe("client options", () => {
  test("baseUrl must be an absolute http(s) URL; a trailing slash is dropped", () => {
    assert.throws(() => new WarrenClient({ baseUrl: "localhost:8080" }), TypeError);
    assert.throws(() => new WarrenClient({ baseUrl: "ftp://example.com" }), TypeError);
    assert.equal(new WarrenClient({ baseUrl: "http://127.0.0.1:8080/" }).baseUrl, "http://127.0.0.1:8080");
  });

  test("a closed port is a network error with status 0", async () => {
    const probe = createHttpServer();
    await new Promise<void>((resolve) => probe.listen(0, "127.0.0.1", resolve));
    const { port } = probe.address() as AddressInfo;
    await new Promise<void>((resolve) => probe.close(() => resolve()));
    const err = await rejects(
      new WarrenClient({ baseUrl: `http://127.0.0.1:${port}` }).orgs.list(),
      0,
      "network",
    );
    assert.match(err.message, /ECONNREFUSED/);
  });
});

describe("answers that are not warren's", () => {
  // A scripted server on loopback: a proxy in front of warren that answers by itself.
  let proxy: HttpServer;
  let seen: Record<string, string | string[] | undefined> = {};
  let url = "";
  let closedEarly: Promise<void> = Promise.resolve();
  before(async () => {
    proxy = createHttpServer((req, res) => {
      seen = req.headers;
      if (req.url?.endsWith("/exec")) {
        // The exec protocol, with lines split across writes and a character split across chunks.
        res.writeHead(200, { "content-type": "application/x-ndjson" });
        const line = (o: unknown) => Buffer.from(`${JSON.stringify(o)}\n`);
        const first = Buffer.concat([
          line({ stream: "stdout", data: "héllo\n" }),
          line({ stream: "stderr", data: "warn" }),
        ]);
        const cut = first.indexOf(Buffer.from("é")) + 1;
        res.write(first.subarray(0, cut));
        setTimeout(() => res.write(first.subarray(cut)), 5);
        if (req.url.includes("agt_streamerror")) {
          setTimeout(
            () => res.end(line({ error: { code: "box.unavailable", message: "the box went away" } })),
            10,
          );
        } else if (req.url.includes("agt_truncated")) {
          setTimeout(() => res.end(), 10);
        } else if (req.url.includes("agt_forever")) {
          closedEarly = new Promise((resolve) => res.on("close", () => resolve()));
        } else {
          setTimeout(
            () =>
              res.end(
                Buffer.concat([line({ exit_code: 2, signal: null, duration_ms: 9, timed_out: false })]),
              ),
            10,
          );
        }
      } else if (req.url === "/api/orgs") {
        res.writeHead(502, { "content-type": "text/html" }).end("<html>Bad Gateway</html>");
      } else if (req.url === "/api/orgs/org_0000000000000000") {
        res.writeHead(200, { "content-type": "text/plain" }).end("not json");
      } else {
        res.writeHead(404, { "content-type": "application/json" }).end('{"error":"plain string"}');
      }
    });
    await new Promise<void>((resolve) => proxy.listen(0, "127.0.0.1", resolve));
    url = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
  });
  after(async () => {
    await new Promise<void>((resolve) => proxy.close(() => resolve()));
  });

  test("a body without the envelope gives http.<status> and what it said", async () => {
    const c = new WarrenClient({ baseUrl: url, headers: { "X-Forwarded-Email": "me@example.com" } });
    const err = await rejects(c.orgs.list(), 502, "http.502");
    assert.match(err.message, /Bad Gateway/);
    assert.equal(seen["x-forwarded-email"], "me@example.com");
    assert.equal(seen.accept, "application/json");
    await rejects(c.guilds.get("gld_0000000000000000"), 404, "http.404");
  });

  test("execStream parses NDJSON across chunks and asks for it", async () => {
    const events: ExecStreamEvent[] = [];
    for await (const e of new WarrenClient({ baseUrl: url }).agent("agt_ok").execStream(["x"]))
      events.push(e);
    assert.equal(seen.accept, "application/x-ndjson");
    assert.deepEqual(events, [
      { stream: "stdout", data: "héllo\n" },
      { stream: "stderr", data: "warn" },
      { exit_code: 2, signal: null, duration_ms: 9, timed_out: false },
    ]);
    assert.ok(events[2] && isExecExit(events[2]));
  });

  test("an error line mid-stream is thrown with its code; a stream without an exit is stream.incomplete", async () => {
    const c = new WarrenClient({ baseUrl: url });
    const drain = async (id: string) => {
      for await (const _ of c.agent(id).execStream("x")) {
        /* read to the end */
      }
    };
    await rejects(drain("agt_streamerror"), 0, "box.unavailable");
    await rejects(drain("agt_truncated"), 0, "stream.incomplete");
  });

  test("leaving the loop early closes the request", async () => {
    for await (const e of new WarrenClient({ baseUrl: url }).agent("agt_forever").execStream("x")) {
      assert.equal("stream" in e && e.stream, "stdout");
      break;
    }
    await closedEarly;
  });

  test("a 2xx that is not JSON is response.invalid", async () => {
    await rejects(
      new WarrenClient({ baseUrl: url }).orgs.get("org_0000000000000000"),
      200,
      "response.invalid",
    );
  });
});

describe("a real warren server over HTTP", () => {
  before(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), "warren-sdk-"));
    server = await createServer(parseConfig({ STATE_ROOT: dir, LOG_LEVEL: "silent", WARREN_PORT: "0" }), {
      defaultMetrics: false,
    });
    const url = await server.app.listen({ host: "127.0.0.1", port: 0 });
    client = new WarrenClient({ baseUrl: url });
  });

  after(async () => {
    try {
      // Closing the server leaves boxes running for the next server to adopt; stop ours first.
      if (server) for (const m of (await client.machines.list()).items) await client.machines.stop(m.id);
    } finally {
      try {
        await server?.close();
      } finally {
        if (dir) await rm(dir, { recursive: true, force: true });
      }
    }
  });

  test("health answers ok", async () => {
    assert.deepEqual(await client.health(), { ok: true });
  });

  describe("organisations", () => {
    test("create, list, get, update, members, delete", async () => {
      const org = await client.orgs.create({ name: "acme" });
      assert.match(org.id, /^org_/);
      assert.equal(org.name, "acme");
      assert.equal(org.role, "owner");
      const list = await client.orgs.list();
      assert.ok(list.items.some((o) => o.id === org.id));
      assert.deepEqual(await client.orgs.get(org.id), org);
      assert.equal((await client.orgs.update(org.id, { name: "acme2" })).name, "acme2");

      const members = await client.orgs.members(org.id);
      assert.equal(members.items.length, 1);
      assert.equal(members.items[0]?.role, "owner");
      const bob = await client.orgs.setMember(org.id, { email: "Bob@Example.com", role: "viewer" });
      assert.equal(bob.email, "bob@example.com");
      assert.equal(bob.role, "viewer");
      // a writer holds at least one area
      await rejects(
        client.orgs.setMember(org.id, { email: "bob@example.com", role: "writer" }),
        400,
        "area.required",
      );
      await client.orgs.putArea(org.id, "docs", ["docs"]);
      const editor = await client.orgs.setMember(org.id, {
        email: "bob@example.com",
        role: "writer",
        areas: ["docs"],
      });
      assert.deepEqual([editor.role, editor.areas], ["writer", ["docs"]]);
      await client.orgs.removeMember(org.id, bob.user_id);
      assert.equal((await client.orgs.members(org.id)).items.length, 1);

      await client.orgs.delete(org.id);
      await rejects(client.orgs.get(org.id), 404, "not_found");
    });

    test("bad bodies and ids are request.invalid naming the field", async () => {
      const err = await rejects(client.orgs.create({ name: "" }), 400, "request.invalid");
      assert.match(err.message, /name/);
      await rejects(client.orgs.get("nope"), 400, "request.invalid");
      await rejects(
        client.orgs.setMember("org_0000000000000000", { email: "not-an-email", role: "viewer" }),
        400,
        "request.invalid",
      );
    });

    test("ids are encoded: a slash cannot reach another route", async () => {
      await rejects(client.orgs.get("../machines"), 400, "request.invalid");
    });
  });

  describe("machines", () => {
    test("create with options, list by org, get, update, stop, delete", async () => {
      const org = await client.orgs.create({ name: "machines" });
      const m = await client.machines.create({
        org_id: org.id,
        name: "m1",
        max_workspace_mib: 2048,
        memory_mib: 512,
        cpus: 0.5,
        trust: "shared",
      });
      assert.match(m.id, /^mch_/);
      assert.equal(m.org_id, org.id);
      assert.equal(m.state, "stopped");
      assert.equal(m.max_workspace_mib, 2048);
      assert.equal(m.memory_mib, 512);
      assert.equal(m.cpus, 0.5);
      assert.equal(m.trust, "shared");
      assert.equal(m.workspace_mib, null);
      assert.equal(m.agents, 0);

      const other = await client.orgs.create({ name: "other" });
      await client.machines.create({ org_id: other.id, name: "elsewhere" });
      const mine = await client.machines.list({ org_id: org.id });
      assert.deepEqual(
        mine.items.map((x) => x.id),
        [m.id],
      );
      assert.ok((await client.machines.list()).items.length >= 2);

      assert.equal((await client.machines.get(m.id)).name, "m1");
      const changed = await client.machines.update(m.id, { name: "m2", cpus: 2 });
      assert.equal(changed.name, "m2");
      assert.equal(changed.cpus, 2);
      assert.equal((await client.machines.stop(m.id)).state, "stopped");
      await client.machines.delete(m.id);
      await rejects(client.machines.get(m.id), 404, "not_found");
    });

    test("a machine with agents is machine.not_empty until they go", async () => {
      const { machine, agent } = await place("busy");
      await rejects(client.machines.delete(machine.id), 409, "machine.not_empty");
      await client.agents.delete(agent.id);
      await client.machines.delete(machine.id);
    });

    test("out-of-range sizes are request.invalid", async () => {
      const org = await client.orgs.create({ name: "sizes" });
      const err = await rejects(
        client.machines.create({ org_id: org.id, name: "m", memory_mib: 1 }),
        400,
        "request.invalid",
      );
      assert.match(err.message, /memory_mib/);
    });
  });

  describe("agents", () => {
    test("create, list by machine, get, update, delete", async () => {
      const { org, machine, agent } = await place("agents");
      assert.match(agent.id, /^agt_/);
      assert.equal(agent.slot, 0);
      assert.equal(agent.home, `/home/${agent.id}`);
      assert.deepEqual(agent.ports, { first: 20000, last: 20099 });
      assert.deepEqual(agent.sandbox_policy, { files: { read: [], write: [] }, network: { allow: [] } });

      const second = await client.agents.create({
        org_id: org.id,
        machine_id: machine.id,
        name: "b",
        max_workspace_mib: 100,
      });
      assert.equal(second.slot, 1);
      assert.equal(second.ports.first, 20100);
      assert.equal(second.max_workspace_mib, 100);
      const onMachine = await client.agents.list({ machine_id: machine.id });
      assert.deepEqual(onMachine.items.map((a) => a.id).sort(), [agent.id, second.id].sort());
      assert.equal((await client.agents.list({ org_id: org.id })).items.length, 2);
      assert.deepEqual((await client.agents.get(agent.id)).id, agent.id);

      const updated = await client.agents.update(agent.id, {
        name: "renamed",
        sandbox_policy: { network: { allow: ["example.com:443"] } },
      });
      assert.equal(updated.name, "renamed");
      assert.deepEqual(updated.sandbox_policy.network.allow, ["example.com:443"]);
      await rejects(
        client.agents.update(agent.id, { sandbox_policy: { network: { allow: ["*"] } } }),
        400,
        "request.invalid",
      );

      await client.agents.delete(second.id);
      await rejects(client.agents.get(second.id), 404, "not_found");
    });

    test("an unknown machine is not_found", async () => {
      const org = await client.orgs.create({ name: "lost" });
      await rejects(
        client.agents.create({ org_id: org.id, machine_id: "mch_0000000000000000", name: "a" }),
        404,
        "not_found",
      );
    });
  });

  describe("guilds", () => {
    test("create, add and remove agents, list, get, delete", async () => {
      const { org, agent } = await place("guilds");
      const g = await client.guilds.create({ org_id: org.id, name: "crew" });
      assert.match(g.id, /^gld_/);
      assert.deepEqual(g.agent_ids, []);
      await client.guilds.addAgent(g.id, agent.id);
      assert.deepEqual((await client.guilds.get(g.id)).agent_ids, [agent.id]);
      assert.deepEqual(
        (await client.guilds.list({ org_id: org.id })).items.map((x) => x.id),
        [g.id],
      );
      await client.guilds.removeAgent(g.id, agent.id);
      assert.deepEqual((await client.guilds.get(g.id)).agent_ids, []);
      await rejects(client.guilds.addAgent(g.id, "agt_0000000000000000"), 404, "not_found");
      await client.guilds.delete(g.id);
      await rejects(client.guilds.get(g.id), 404, "not_found");
    });
  });

  describe("commands in the box", () => {
    let agent: Agent;
    before(async () => {
      agent = (await place("exec")).agent;
    });

    test("exec answers output, exit code and the agent's environment", async (t) => {
      await orSkip(t, async () => {
        const a = client.agent(agent.id);
        const r = await a.exec(["sh", "-c", 'echo "$WARREN_AGENT_ID $HOME"; echo oops >&2; exit 3']);
        assert.equal(r.exit_code, 3);
        assert.equal(r.stdout, `${agent.id} ${agent.home}\n`);
        assert.equal(r.stderr, "oops\n");
        assert.equal(r.timed_out, false);
        const shell = await a.exec("cat; echo $FOO", { stdin: "in\n", env: { FOO: "bar" } });
        assert.equal(shell.stdout, "in\nbar\n");
        assert.equal(shell.exit_code, 0);
      });
    });

    test("execStream yields output as it arrives, then the exit last", async (t) => {
      await orSkip(t, async () => {
        const events: ExecStreamEvent[] = [];
        for await (const e of client
          .agent(agent.id)
          .execStream({ command: "echo one; echo two >&2; echo three; exit 7" }))
          events.push(e);
        const last = events.at(-1);
        assert.ok(last && !("stream" in last));
        assert.equal(last.exit_code, 7);
        const text = (s: string) =>
          events
            .filter((e) => "stream" in e && e.stream === s)
            .map((e) => ("data" in e ? e.data : ""))
            .join("");
        assert.equal(text("stdout"), "one\nthree\n");
        assert.equal(text("stderr"), "two\n");
      });
    });

    test("a timeout is reported, not thrown", async (t) => {
      await orSkip(t, async () => {
        const r = await client.agent(agent.id).exec(["sleep", "5"], { timeout_ms: 300 });
        assert.equal(r.timed_out, true);
      });
    });

    test("a bad exec body is request.invalid before any box starts", async () => {
      await rejects(client.agent(agent.id).exec({ argv: [], command: "x" }), 400, "request.invalid");
      await rejects(client.agent("agt_0000000000000000").exec(["true"]), 404, "not_found");
    });
  });

  describe("homes and runs (as their routes arrive)", () => {
    let agent: Agent;
    before(async () => {
      agent = (await place("homes")).agent;
    });

    test("files write then read the same bytes", async (t) => {
      await orSkip(t, async () => {
        const files = client.agent(agent.id).files;
        const bytes = new Uint8Array([0, 1, 2, 255, 10]);
        await files.write("data/blob.bin", bytes);
        assert.deepEqual(await files.read("data/blob.bin"), bytes);
        await files.write("notes/héllo wörld #1?.txt", "hi ✓\n");
        assert.equal(await files.readText("notes/héllo wörld #1?.txt"), "hi ✓\n");
        assert.equal(await files.readText(`${agent.home}/notes/héllo wörld #1?.txt`), "hi ✓\n");
        assert.equal(await files.readText("notes/../notes/./héllo wörld #1?.txt"), "hi ✓\n");
        await rejects(files.read("../../etc/passwd"), 400, "file.invalid_path");
        await rejects(files.read("/etc/passwd"), 400, "file.invalid_path");
        await rejects(files.read("notes"), 400, "file.not_regular");
        await rejects(files.read("missing.txt"), 404, "file.not_found");
      });
    });

    test("a name with % in it is the name it says", async (t) => {
      await orSkip(t, async () => {
        const files = client.agent(agent.id).files;
        await files.write("100%.txt", "full");
        assert.equal(await files.readText("100%.txt"), "full");
        await files.write("%41.txt", "percent-four-one");
        await files.write("A.txt", "a");
        assert.equal(await files.readText("%41.txt"), "percent-four-one");
      });
    });

    test("usage names the agent's and the machine's disk", async (t) => {
      await orSkip(t, async () => {
        const u = await client.agent(agent.id).usage();
        assert.equal(u.max_workspace_mib, agent.max_workspace_mib);
        assert.equal(u.machine.id, agent.machine_id);
      });
    });

    test("a run is created, listed, waited for and has events", async (t) => {
      await orSkip(t, async () => {
        const a = client.agent(agent.id);
        const run = await a.runs.create({
          argv: ["sh", "-c", "cat /agent/input; echo done"],
          input: "hello\n",
        });
        assert.equal(run.agent_id, agent.id);
        assert.ok((await a.runs.list()).items.some((r) => r.id === run.id));
        const done = await client.runs.wait(run.id, { timeoutMs: 60_000 });
        assert.equal(done.status, "succeeded");
        assert.equal(done.output, "hello\ndone\n");
        assert.equal(done.exit_code, 0);
        const events = (await client.runs.events(run.id)).items;
        assert.ok(events.length > 0);
        const first = events[0];
        assert.ok(first);
        assert.deepEqual((await client.runs.events(run.id, { after: first.id })).items, events.slice(1));
        assert.equal((await a.runs.list({ limit: 1 })).items.length, 1);
        await rejects(client.runs.get("run_0000000000000000"), 404, "not_found");
        await rejects(client.runs.cancel(run.id), 409, "run.not_cancellable");
      });
    });

    test("waiting gives up with timeout; a cancelled run ends cancelled", async (t) => {
      await orSkip(t, async () => {
        const run = await client.agent(agent.id).runs.create({ command: "sleep 30", timeout_s: 60 });
        const err = await rejects(client.runs.wait(run.id, { timeoutMs: 200, intervalMs: 50 }), 0, "timeout");
        assert.match(err.message, /warren runs cancel/);
        await client.runs.cancel(run.id);
        const done = await client.runs.wait(run.id, { timeoutMs: 30_000 });
        assert.equal(done.status, "cancelled");
      });
    });

    test("an aborted wait stops polling", async (t) => {
      await orSkip(t, async () => {
        const run = await client.agent(agent.id).runs.create({ argv: ["sleep", "30"] });
        const abort = new AbortController();
        setTimeout(() => abort.abort(new Error("enough")), 100);
        await assert.rejects(client.runs.wait(run.id, { signal: abort.signal, intervalMs: 20 }), /enough/);
        await client.runs.cancel(run.id);
        await client.runs.wait(run.id, { timeoutMs: 30_000 });
      });
    });
  });
});
