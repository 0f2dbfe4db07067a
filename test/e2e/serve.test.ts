// End to end: a real `warren serve` process (the built dist/cli/main.js), driven over real HTTP
// with the SDK and raw requests; its logs; a restart on the same state; SIGTERM. Once on the
// embedded PGlite, once on a fresh PostgreSQL database.
import assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdir, mkdtemp, readFile, rm, stat, writeFile } from "node:fs/promises";
import http from "node:http";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import {
  isWarrenApiError,
  WarrenClient,
  type Agent,
  type Guild,
  type Machine,
  type Org,
} from "../../src/sdk/index.js";
import { dbLegs } from "../support/db.js";
import { assertEnvelope, assertError, idRe } from "../http/expect.js";

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const cli = path.join(repo, "dist/cli/main.js");
const missingBuild = `${path.relative(repo, cli)} is missing: run \`npm run build\` before the end-to-end tests`;

/** Secret-looking values sent in headers and bodies; none may reach the logs. */
const SECRETS = ["s3cr3t-bearer", "s3cr3t-cookie", "s3cr3t-token", "s3cr3t-pw", "s3cr3t-body"];
/** A secret-looking query value (`?token=`); checked on its own. */
const QUERY_SECRET = "s3cr3t-query";

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.on("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address() as net.AddressInfo;
      s.close(() => resolve(port));
    });
  });
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Serve {
  child: ChildProcess;
  pid: number;
  url: string;
  port: number;
  stdout: () => string;
  stderr: () => string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

const running = new Set<Serve>();

/** Spawns `node dist/cli/main.js serve` and waits until /health answers 200. */
/** Runs `warren serve` that is expected to refuse to start: its exit code and stderr. */
async function serveRefused(env: Record<string, string>): Promise<{ code: number | null; err: string }> {
  assert.ok(existsSync(cli), missingBuild);
  const child = spawn(process.execPath, [cli, "serve"], {
    cwd: repo,
    env: { PATH: process.env.PATH ?? "/usr/bin:/bin", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let err = "";
  child.stderr.setEncoding("utf8").on("data", (c: string) => (err += c));
  child.stdout.resume();
  const timer = setTimeout(() => child.pid && process.kill(child.pid, "SIGKILL"), 20_000);
  const code = await new Promise<number | null>((resolve) => child.on("exit", (c) => resolve(c)));
  clearTimeout(timer);
  return { code, err };
}

async function startServe(env: Record<string, string>): Promise<Serve> {
  assert.ok(existsSync(cli), missingBuild);
  const port = await freePort();
  const child = spawn(process.execPath, [cli, "serve"], {
    cwd: repo,
    env: {
      PATH: process.env.PATH ?? "/usr/bin:/bin",
      HOME: process.env.HOME ?? "/root",
      WARREN_HOST: "127.0.0.1",
      WARREN_PORT: String(port),
      WARREN_PREVIEW_PORT: "0",
      LOG_LEVEL: "info",
      ...env,
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  assert.ok(child.pid, "the server did not start");
  let out = "";
  let err = "";
  child.stdout?.setEncoding("utf8").on("data", (c: string) => (out += c));
  child.stderr?.setEncoding("utf8").on("data", (c: string) => (err += c));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on("exit", (code, signal) => resolve({ code, signal })),
  );
  const s: Serve = {
    child,
    pid: child.pid,
    url: `http://127.0.0.1:${port}`,
    port,
    stdout: () => out,
    stderr: () => err,
    exited,
  };
  running.add(s);
  let gone = false;
  void exited.then(() => (gone = true));
  const deadline = Date.now() + 45_000;
  for (;;) {
    if (gone) throw new Error(`warren serve exited before it was healthy:\nstdout:\n${out}\nstderr:\n${err}`);
    try {
      const r = await fetch(`${s.url}/health`);
      if (r.status === 200) {
        assert.deepEqual(await r.json(), { ok: true });
        return s;
      }
      await r.body?.cancel();
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline)
      throw new Error(`warren serve was not healthy within 45 s:\nstdout:\n${out}\nstderr:\n${err}`);
    await sleep(100);
  }
}

/** Sends a signal to the server (by its pid) and waits for it to exit. */
async function stopServe(
  s: Serve,
  signal: NodeJS.Signals = "SIGTERM",
): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
  if (s.child.exitCode === null && s.child.signalCode === null) process.kill(s.pid, signal);
  let timer: NodeJS.Timeout | undefined;
  const result = await Promise.race([
    s.exited,
    new Promise<null>((r) => (timer = setTimeout(() => r(null), 20_000))),
  ]);
  clearTimeout(timer);
  if (result === null) {
    process.kill(s.pid, "SIGKILL");
    await s.exited;
    running.delete(s);
    throw new Error(`warren serve did not exit within 20 s of ${signal}`);
  }
  running.delete(s);
  return result;
}

/** Kills whatever is still running, by pid. */
async function killAll(): Promise<void> {
  for (const s of running) {
    if (s.child.exitCode === null && s.child.signalCode === null) {
      try {
        process.kill(s.pid, "SIGKILL");
      } catch {
        // already gone
      }
      await s.exited;
    }
    running.delete(s);
  }
}

/** A raw HTTP request, to set headers fetch would not let through (Host) or would rewrite. */
function raw(
  url: string,
  method: string,
  reqPath: string,
  headers: Record<string, string>,
  body?: string,
): Promise<{ status: number; body: any }> {
  return new Promise((resolve, reject) => {
    const u = new URL(url);
    const req = http.request({ host: u.hostname, port: u.port, method, path: reqPath, headers }, (res) => {
      let text = "";
      res.setEncoding("utf8");
      res.on("data", (c: string) => (text += c));
      res.on("end", () => {
        let parsed: unknown = text;
        try {
          parsed = text ? JSON.parse(text) : undefined;
        } catch {
          // not JSON
        }
        resolve({ status: res.statusCode ?? 0, body: parsed });
      });
    });
    req.on("error", reject);
    req.end(body);
  });
}

/** Every stdout line is a pino JSON object; answers them. */
function logLines(s: Serve): Record<string, unknown>[] {
  const lines = s
    .stdout()
    .split("\n")
    .filter((l) => l.trim() !== "");
  assert.ok(lines.length > 0, "the server logged nothing on stdout");
  return lines.map((l) => {
    let o: unknown;
    try {
      o = JSON.parse(l);
    } catch {
      assert.fail(`a stdout line is not JSON: ${l}`);
    }
    assert.ok(o && typeof o === "object" && !Array.isArray(o), `a log line is not an object: ${l}`);
    const rec = o as Record<string, unknown>;
    assert.equal(typeof rec.level, "number", `no numeric pino level: ${l}`);
    assert.equal(typeof rec.time, "string", `no time: ${l}`);
    assert.equal(typeof rec.msg, "string", `no msg: ${l}`);
    return rec;
  });
}

function assertNoSecrets(s: Serve): void {
  const all = s.stdout() + s.stderr();
  for (const secret of SECRETS) {
    const line = all.split("\n").find((l) => l.includes(secret));
    assert.equal(line, undefined, `the logs hold the secret-looking value ${secret}: ${line?.slice(0, 600)}`);
  }
}

async function rejectsWith(p: Promise<unknown>, status: number, code: string): Promise<void> {
  await assert.rejects(p, (e: unknown) => {
    assert.ok(isWarrenApiError(e), `not a WarrenApiError: ${String(e)}`);
    assert.equal(e.status, status, `${e.code}: ${e.message}`);
    assert.equal(e.code, code, e.message);
    return true;
  });
}

interface Made {
  org: Org;
  machine: Machine;
  agents: Agent[];
  guild: Guild;
}

/** Creates, reads, lists, changes and deletes over HTTP with the SDK; leaves an org, a machine, two agents, a guild. */
async function driveApi(s: Serve): Promise<Made> {
  const c = new WarrenClient({ baseUrl: s.url });
  assert.deepEqual(await c.health(), { ok: true });

  const org = await c.orgs.create({ name: "e2e" });
  assert.match(org.id, idRe("org"));
  assert.deepEqual(org, { id: org.id, name: "e2e", role: "owner", areas: [] });
  assert.deepEqual(await c.orgs.get(org.id), org);
  assert.ok((await c.orgs.list()).items.some((o) => o.id === org.id));

  const machine = await c.machines.create({ org_id: org.id, name: "m", max_workspace_mib: 4096 });
  assert.match(machine.id, idRe("mch"));
  assert.equal(machine.org_id, org.id);
  assert.equal(machine.state, "stopped");
  assert.equal(machine.max_workspace_mib, 4096);
  assert.equal(machine.workspace_mib, null);
  assert.equal(machine.trust, "isolated");
  const { box, ...got } = await c.machines.get(machine.id);
  assert.deepEqual(got, machine);
  assert.deepEqual(box, { state: "stopped", usage: null, events: [] });
  assert.deepEqual(
    (await c.machines.list({ org_id: org.id })).items.map((m) => m.id),
    [machine.id],
  );

  const agents: Agent[] = [];
  for (const name of ["a0", "a1", "a2"]) {
    const a = await c.agents.create({ org_id: org.id, machine_id: machine.id, name, max_workspace_mib: 100 });
    assert.match(a.id, idRe("agt"));
    assert.equal(a.slot, agents.length);
    assert.equal(a.home, `/home/${a.id}`);
    assert.deepEqual(a.ports, { first: 20000 + 100 * a.slot, last: 20099 + 100 * a.slot });
    assert.equal(a.workspace_mib, null);
    agents.push(a);
  }
  assert.deepEqual(await c.agents.get(agents[1]!.id), agents[1]);
  await c.agents.delete(agents[1]!.id);
  await rejectsWith(c.agents.get(agents[1]!.id), 404, "not_found");
  const again = await c.agents.create({
    org_id: org.id,
    machine_id: machine.id,
    name: "a1-again",
    max_workspace_mib: 100,
  });
  assert.equal(again.slot, 1, "the freed slot is taken again");
  const a0 = await c.agents.update(agents[0]!.id, {
    name: "a0-renamed",
    sandbox_policy: { network: { allow: ["example.com:443"] } },
  });
  assert.equal(a0.name, "a0-renamed");
  assert.deepEqual(a0.sandbox_policy.network.allow, ["example.com:443"]);
  const a2 = agents[2]!;
  const live: Agent[] = [a0, again, a2];
  assert.deepEqual(
    (await c.agents.list({ org_id: org.id })).items.map((a) => a.id),
    [a0.id, a2.id, again.id],
    "listed in creation order",
  );
  assert.equal((await c.machines.get(machine.id)).agents, 3);

  const guild = await c.guilds.create({ org_id: org.id, name: "crew" });
  assert.match(guild.id, idRe("gld"));
  await c.guilds.addAgent(guild.id, a0.id);
  await c.guilds.addAgent(guild.id, a2.id);
  const g = await c.guilds.get(guild.id);
  assert.deepEqual([...g.agent_ids].sort(), [a0.id, a2.id].sort());
  assert.ok((await c.guilds.list({ org_id: org.id })).items.some((x) => x.id === guild.id));
  const spare = await c.guilds.create({ org_id: org.id, name: "spare" });
  await c.guilds.delete(spare.id);
  await rejectsWith(c.guilds.get(spare.id), 404, "not_found");

  // errors, through the SDK
  await rejectsWith(c.machines.create({ org_id: "not-an-org", name: "x" }), 400, "request.invalid");
  await rejectsWith(c.agents.get("agt_zzzzzzzzzzzzzzzz"), 404, "not_found");
  await rejectsWith(c.machines.delete(machine.id), 409, "machine.not_empty");
  await rejectsWith(c.orgs.delete(org.id), 409, "machine.not_empty");
  // ... and raw, with the envelope
  const unknown = await fetch(`${s.url}/api/widgets`);
  assertError({ status: unknown.status, body: await unknown.json() }, 404, "not_found");
  const badJson = await fetch(`${s.url}/api/orgs`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: "{nope",
  });
  assertError({ status: badJson.status, body: await badJson.json() }, 400, "request.invalid", "JSON");
  const extra = await fetch(`${s.url}/api/orgs`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ name: "x", password: "s3cr3t-body" }),
  });
  const extraBody = await extra.json();
  assertError({ status: extra.status, body: extraBody }, 400, "request.invalid", "password");
  assert.ok(!JSON.stringify(extraBody).includes("s3cr3t-body"), "the error message echoes a value");

  // Host and Origin over a real socket
  const host = await raw(s.url, "GET", "/api/orgs", { host: "evil.example.com" });
  assertError(host, 421, "host.refused");
  const hostHealth = await raw(s.url, "GET", "/health", { host: `evil.example.com:${s.port}` });
  assertError(hostHealth, 421, "host.refused");
  const origin = await raw(
    s.url,
    "POST",
    "/api/orgs",
    { "content-type": "application/json", origin: "https://evil.example.com" },
    JSON.stringify({ name: "csrf" }),
  );
  assertError(origin, 403, "origin.refused");
  assert.ok(!(await c.orgs.list()).items.some((o) => o.name === "csrf"));
  const sameOrigin = await raw(
    s.url,
    "POST",
    "/api/orgs",
    { "content-type": "application/json", origin: s.url },
    JSON.stringify({ name: "same-origin" }),
  );
  assert.equal(sameOrigin.status, 201, JSON.stringify(sameOrigin.body));
  await c.orgs.delete(sameOrigin.body.id as string);
  const getForeign = await raw(s.url, "GET", "/api/orgs", { origin: "https://evil.example.com" });
  assert.equal(getForeign.status, 200);

  // secret-looking values in headers and the query: answered, never logged
  const secretHeaders = {
    authorization: "Bearer s3cr3t-bearer",
    cookie: "session=s3cr3t-cookie",
    "x-warren-token": "s3cr3t-token",
  };
  const withSecrets = await fetch(`${s.url}/api/orgs/${org.id}`, { headers: secretHeaders });
  assert.equal(withSecrets.status, 200);
  await withSecrets.body?.cancel();
  const failing = await fetch(`${s.url}/api/agents?token=${QUERY_SECRET}`, { headers: secretHeaders });
  assert.equal(failing.status, 400, "an unknown query field is refused");
  const failingBody = await failing.json();
  assertEnvelope(failingBody);
  assert.ok(!JSON.stringify(failingBody).includes(QUERY_SECRET), "the error message echoes a query value");

  const metrics = await (await fetch(`${s.url}/metrics`)).text();
  assert.match(metrics, /^warren_http_requests_total\{/m);
  assert.match(metrics, /^warren_http_errors_total\{code="machine\.not_empty"\} \d+/m);
  assert.match(metrics, /^warren_http_errors_total\{code="host\.refused"\} \d+/m);

  return { org, machine, agents: live, guild: { ...guild, agent_ids: g.agent_ids } };
}

/** What `driveApi` left is all there after a restart, unchanged. */
async function checkPersisted(s: Serve, made: Made): Promise<void> {
  const c = new WarrenClient({ baseUrl: s.url });
  assert.deepEqual(await c.orgs.get(made.org.id), made.org);
  const m = await c.machines.get(made.machine.id);
  assert.equal(m.name, made.machine.name);
  assert.equal(m.max_workspace_mib, made.machine.max_workspace_mib);
  assert.equal(m.created_at, made.machine.created_at);
  assert.equal(m.agents, made.agents.length);
  for (const a of made.agents) {
    const got = await c.agents.get(a.id);
    const { warnings: _w, ...want } = a;
    assert.deepEqual(got, want);
  }
  const g = await c.guilds.get(made.guild.id);
  assert.deepEqual([...g.agent_ids].sort(), [...made.guild.agent_ids].sort());
  // the next agent still takes the lowest free slot
  const next = await c.agents.create({
    org_id: made.org.id,
    machine_id: made.machine.id,
    name: "after-restart",
    max_workspace_mib: 100,
  });
  assert.equal(next.slot, 3);
  await c.agents.delete(next.id);
}

/** Deletes what `driveApi` made, in order. */
async function cleanUp(s: Serve, made: Made): Promise<void> {
  const c = new WarrenClient({ baseUrl: s.url });
  await c.guilds.delete(made.guild.id);
  for (const a of made.agents) await c.agents.delete(a.id);
  await c.machines.delete(made.machine.id);
  await c.orgs.delete(made.org.id);
  await rejectsWith(c.orgs.get(made.org.id), 404, "not_found");
}

describe("warren serve (PGlite under STATE_ROOT)", () => {
  let stateRoot: string;
  /** stdout and stderr of the first process, for the log checks below. */
  let firstLogs = "";
  before(async () => {
    stateRoot = await mkdtemp(path.join(os.tmpdir(), "warren-e2e-"));
  });
  after(async () => {
    await killAll();
    await rm(stateRoot, { recursive: true, force: true, maxRetries: 3 });
  });

  test("serves the API over HTTP, logs JSON lines without secrets, keeps its data across a restart, exits 0 on SIGTERM", async () => {
    assert.ok(existsSync(cli), missingBuild);
    const first = await startServe({ STATE_ROOT: stateRoot });
    let made: Made;
    try {
      made = await driveApi(first);
    } finally {
      const exit = await stopServe(first);
      assert.deepEqual(exit, { code: 0, signal: null }, `stderr:\n${first.stderr()}`);
    }
    assert.ok(
      (await stat(path.join(stateRoot, "pglite"))).isDirectory(),
      "PGlite keeps its data under STATE_ROOT/pglite",
    );
    const lines = logLines(first);
    assert.ok(
      lines.some((l) => /serving/.test(String(l.msg))),
      "no startup line",
    );
    assert.ok(
      lines.some((l) => /stopping/.test(String(l.msg))),
      "no shutdown line",
    );
    assert.ok(lines.every((l) => l.service === "warren"));
    firstLogs = first.stdout() + first.stderr();
    assertNoSecrets(first);
    // the development master key: made once under STATE_ROOT/run, 0600, never in the logs
    const keyFile = path.join(stateRoot, "run", "master.key");
    assert.equal((await stat(keyFile)).mode & 0o777, 0o600);
    const key = (await readFile(keyFile, "utf8")).trim();
    assert.match(key, /^[0-9a-f]{64}$/);
    assert.equal(firstLogs.includes(key), false, "the master key reached the logs");
    assert.ok(lines.some((l) => /development master key/.test(String(l.msg))));

    const second = await startServe({ STATE_ROOT: stateRoot });
    try {
      await checkPersisted(second, made);
      await cleanUp(second, made);
    } finally {
      const exit = await stopServe(second);
      assert.deepEqual(exit, { code: 0, signal: null }, `stderr:\n${second.stderr()}`);
    }
    logLines(second);
    assertNoSecrets(second);
    assert.equal((await readFile(keyFile, "utf8")).trim(), key, "the second start reads the same key");
    assert.equal((second.stdout() + second.stderr()).includes(key), false);
    assert.equal(/development master key/.test(second.stdout()), false, "generated once, not at every start");
  });

  test("a request's query values (?token=...) do not reach the logs", () => {
    assert.ok(firstLogs.length > 0, "the first test did not run the server");
    const line = firstLogs.split("\n").find((l) => l.includes(QUERY_SECRET));
    assert.equal(line, undefined, `a log line holds the query value ${QUERY_SECRET}: ${line}`);
  });

  test("a bad configuration stops it before serving, with a message that says what to fix", async () => {
    const { code, err } = await serveRefused({
      STATE_ROOT: stateRoot,
      WARREN_PORT: "99999",
      AUTH_MODE: "nobody",
    });
    assert.notEqual(code, 0);
    assert.match(err, /WARREN_PORT/);
    // an identity mode is a name extensions may add: it is checked once they are loaded
    const mode = await serveRefused({ STATE_ROOT: stateRoot, AUTH_MODE: "nobody" });
    assert.notEqual(mode.code, 0);
    assert.match(mode.err, /AUTH_MODE must be one of [^\n]*trusted-header/);
    assert.match(mode.err, /"nobody"/);
  });

  test("a damaged development master key stops it with a message, and is left as it was", async () => {
    const root = await mkdtemp(path.join(os.tmpdir(), "warren-e2e-key-"));
    try {
      await mkdir(path.join(root, "run"), { recursive: true, mode: 0o700 });
      const keyFile = path.join(root, "run", "master.key");
      await writeFile(keyFile, "short\n", { mode: 0o600 });
      const { code, err } = await serveRefused({ STATE_ROOT: root, WARREN_PORT: String(await freePort()) });
      assert.equal(code, 2, err);
      assert.match(err, /master\.key must hold 64 hex characters/);
      assert.equal(await readFile(keyFile, "utf8"), "short\n");
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  });
});

const pgLeg = dbLegs.find((l) => l.name === "postgres");

describe(
  "warren serve (DATABASE_URL: a fresh PostgreSQL database)",
  { skip: pgLeg ? (pgLeg.skip ?? false) : "no postgres leg" },
  () => {
    let stateRoot: string;
    let db: { url: string | undefined; drop(): Promise<void> } | undefined;
    before(async () => {
      stateRoot = await mkdtemp(path.join(os.tmpdir(), "warren-e2e-pg-"));
      db = await pgLeg!.fresh();
    });
    after(async () => {
      await killAll();
      await db?.drop();
      await rm(stateRoot, { recursive: true, force: true, maxRetries: 3 });
    });

    test("serves, persists in PostgreSQL across a restart, never logs the database password, exits 0 on SIGTERM", async () => {
      assert.ok(existsSync(cli), missingBuild);
      assert.ok(db?.url);
      // the test server trusts every local connection: a password is accepted and ignored, and must not be logged
      const u = new URL(db.url);
      u.password = "s3cr3t-pw";
      const env = { STATE_ROOT: stateRoot, DATABASE_URL: u.toString() };
      const first = await startServe(env);
      let made: Made;
      try {
        made = await driveApi(first);
      } finally {
        assert.deepEqual(await stopServe(first), { code: 0, signal: null }, `stderr:\n${first.stderr()}`);
      }
      assert.ok(!existsSync(path.join(stateRoot, "pglite")), "with DATABASE_URL there is no PGlite");
      logLines(first);
      assertNoSecrets(first);

      const second = await startServe(env);
      try {
        await checkPersisted(second, made);
        await cleanUp(second, made);
      } finally {
        assert.deepEqual(await stopServe(second), { code: 0, signal: null }, `stderr:\n${second.stderr()}`);
      }
      logLines(second);
      assertNoSecrets(second);
    });
  },
);
