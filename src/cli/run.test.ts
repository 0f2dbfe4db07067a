// The CLI end to end against a real server (trusted-header mode, PGlite in a temporary state root).
import assert from "node:assert/strict";
import { boxSkipReason } from "../../test/box/fixture.js";
import { forkCount } from "../../test/support/forks.js";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { Readable, Writable } from "node:stream";
import { after, before, describe, test, type TestContext } from "node:test";
import { parseConfig } from "../config/index.js";
import { createServer, type Server } from "../server.js";
import { runCli } from "./run.js";

let dir = "";
let server: Server | undefined;
let url = "";
const ME = "x-forwarded-email: me@example.com";

before(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), "warren-cli-"));
  server = await createServer(
    parseConfig({
      STATE_ROOT: path.join(dir, "state"),
      LOG_LEVEL: "silent",
      WARREN_PORT: "0",
      AUTH_MODE: "trusted-header",
    }),
    { defaultMetrics: false },
  );
  url = await server.app.listen({ host: "127.0.0.1", port: 0 });
});

after(async () => {
  try {
    // Closing the server leaves boxes running for the next server to adopt; stop ours first.
    if (server) {
      const machines = await json<{ items: { id: string }[] }>(["machines", "list"]);
      for (const m of machines.items) assert.equal((await warren(["machines", "stop", m.id])).code, 0);
    }
  } finally {
    try {
      await server?.close();
    } finally {
      if (dir) await rm(dir, { recursive: true, force: true });
    }
  }
});

class Sink extends Writable {
  readonly chunks: Buffer[] = [];
  override _write(chunk: Buffer, _enc: BufferEncoding, done: () => void): void {
    this.chunks.push(chunk);
    done();
  }
  get text(): string {
    return Buffer.concat(this.chunks).toString("utf8");
  }
}

interface Outcome {
  code: number;
  stdout: string;
  stderr: string;
  bytes: Buffer;
}

/** Runs the CLI as the operator `me@example.com` unless `env` says otherwise. */
async function warren(
  argv: string[],
  opts: { stdin?: string | Buffer; env?: Record<string, string> } = {},
): Promise<Outcome> {
  const stdout = new Sink();
  const stderr = new Sink();
  const code = await runCli(argv, {
    stdout,
    stderr,
    stdin: Readable.from(opts.stdin === undefined ? [] : [Buffer.from(opts.stdin)]),
    env: { WARREN_URL: url, WARREN_HEADERS: ME, ...opts.env },
  });
  return { code, stdout: stdout.text, stderr: stderr.text, bytes: Buffer.concat(stdout.chunks) };
}

async function json<T>(argv: string[]): Promise<T> {
  const r = await warren(["--json", ...argv]);
  assert.equal(r.code, 0, r.stderr);
  return JSON.parse(r.stdout) as T;
}

/** Skips on a host that cannot run boxes at all (boxSkipReason); anywhere else it stays a failure. */
function boxesMissing(t: TestContext, r: Outcome): boolean {
  const why = boxSkipReason();
  if (why !== null && r.code === 1 && r.stderr.startsWith("error: box.unavailable:")) {
    t.skip(`boxes cannot run here: ${why}`);
    return true;
  }
  return false;
}

describe("warren CLI", () => {
  let org = "";
  let machine = "";
  let agent = "";

  before(async () => {
    org = (await json<{ id: string }>(["orgs", "create", "acme"])).id;
    machine = (await json<{ id: string }>(["machines", "create", "m1", "--org", org, "--memory-mib", "512"]))
      .id;
    agent = (await json<{ id: string }>(["agents", "create", "a1", "--org", org, "--machine", machine])).id;
  });

  test("--help and usage errors", async () => {
    const help = await warren(["--help"]);
    assert.equal(help.code, 0);
    assert.match(help.stdout, /^usage: warren <command>/);
    const groupHelp = await warren(["agents", "--help"]);
    assert.match(groupHelp.stdout, /warren agents create <name> --org <org> --machine <machine>/);
    const bad = await warren(["orgs", "frobnicate"]);
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /^error: unknown command "orgs frobnicate"\n\nusage: warren orgs create/);
    assert.equal(bad.stdout, "");
    assert.equal((await warren([])).code, 2);
  });

  test("--json prints the exact answer; tables for people", async () => {
    const list = await json<{ items: { id: string; name: string; role: string }[] }>(["orgs", "list"]);
    assert.deepEqual(list.items, [{ id: org, name: "acme", role: "owner", areas: [] }]);
    const table = await warren(["orgs", "list"]);
    assert.equal(table.code, 0);
    assert.equal(table.stdout, `ID${" ".repeat(org.length)}NAME  ROLE\n${org}  acme  owner\n`);
    const detail = await warren(["machines", "get", machine]);
    assert.match(detail.stdout, new RegExp(`^id +${machine}$`, "m"));
    assert.match(detail.stdout, /^memory_mib +512$/m);
    const agents = await warren(["agents", "list", "--machine", machine]);
    assert.match(agents.stdout, /^ID +NAME +MACHINE +KIND +SLOT +PORTS +DISK\n/);
    assert.match(agents.stdout, /a1 .* 0 +20000-20099 +-\/10240 MiB\n$/);
    assert.equal((await warren(["guilds", "list", "--org", org])).stdout, "no guilds\n");
  });

  test("guilds, members and deletes", async () => {
    const guild = (await json<{ id: string }>(["guilds", "create", "crew", "--org", org])).id;
    assert.equal(
      (await warren(["guilds", "add-agent", guild, agent])).stdout,
      `added ${agent} to ${guild}\n`,
    );
    assert.deepEqual((await json<{ agent_ids: string[] }>(["guilds", "get", guild])).agent_ids, [agent]);
    const rm = await warren(["guilds", "remove-agent", guild, agent, "--json"]);
    assert.equal(rm.code, 0);
    assert.equal(rm.stdout, "");
    const member = await json<{ user_id: string; role: string }>([
      "orgs",
      "set-member",
      org,
      "--email",
      "bob@example.com",
      "--role",
      "viewer",
    ]);
    assert.equal(member.role, "viewer");
    assert.match((await warren(["orgs", "members", org])).stdout, /bob@example\.com +viewer/);
    assert.equal((await warren(["orgs", "remove-member", org, member.user_id])).code, 0);
    assert.equal((await warren(["guilds", "delete", guild])).stdout, `deleted ${guild}\n`);
  });

  test("server errors print error: <code>: <message> and exit 1", async () => {
    const busy = await warren(["machines", "delete", machine]);
    assert.equal(busy.code, 1);
    assert.match(busy.stderr, /^error: machine\.not_empty: .+\n$/);
    const missing = await warren(["agents", "get", "agt_0000000000000000"]);
    assert.match(missing.stderr, /^error: not_found: /);
    const invalid = await warren(["machines", "create", "m2", "--org", org, "--memory-mib", "1"]);
    assert.match(invalid.stderr, /^error: request\.invalid: .*memory_mib/);
    const anonymous = await warren(["orgs", "list"], { env: { WARREN_HEADERS: "" } });
    assert.equal(anonymous.code, 1);
    assert.match(anonymous.stderr, /^error: auth\.required: .*x-forwarded-email/);
    const viaFlag = await warren(["orgs", "list", "--header", ME, "--json"], { env: { WARREN_HEADERS: "" } });
    assert.equal(viaFlag.code, 0);
    const other = await warren(["orgs", "get", org], {
      env: { WARREN_HEADERS: "X-Forwarded-Email: eve@example.com" },
    });
    assert.match(other.stderr, /^error: not_found: /);
    const offline = await warren(["orgs", "list", "--url", "http://127.0.0.1:1"]);
    assert.equal(offline.code, 1);
    assert.match(offline.stderr, /^error: network: could not reach http:\/\/127\.0\.0\.1:1/);
  });

  test("a policy file that is not JSON is refused before any request", async () => {
    const file = path.join(dir, "policy.json");
    await writeFile(file, "{nope");
    const r = await warren(["agents", "update", agent, "--policy-file", file]);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /^error: local\.policy: /);
    await writeFile(file, JSON.stringify({ network: { allow: ["example.com:443"] } }));
    const ok = await json<{ sandbox_policy: { network: { allow: string[] } } }>([
      "agents",
      "update",
      agent,
      "--policy-file",
      file,
    ]);
    assert.deepEqual(ok.sandbox_policy.network.allow, ["example.com:443"]);
    const missing = await warren(["agents", "update", agent, "--policy-file", path.join(dir, "nope.json")]);
    assert.match(missing.stderr, /^error: local\.read: could not read the policy file .* \(ENOENT\)/);
  });

  test("exec streams output and exits with the command's code", async (t) => {
    const r = await warren([
      "exec",
      agent,
      "--env",
      "WHO=cli",
      "--",
      "sh",
      "-c",
      'echo "out $WHO"; echo err >&2; exit 5',
    ]);
    if (boxesMissing(t, r)) return;
    assert.equal(r.stderr, "err\n");
    assert.equal(r.stdout, "out cli\n");
    assert.equal(r.code, 5);
    const shell = await warren(["exec", agent, "--stdin-file", "-", "--command", "tr a-z A-Z"], {
      stdin: "shout\n",
    });
    assert.equal(shell.stdout, "SHOUT\n");
    assert.equal(shell.code, 0);
  });

  test("exec --json prints the buffered answer and still exits with the code", async (t) => {
    const r = await warren(["exec", agent, "--json", "--", "sh", "-c", "echo hi; exit 4"]);
    if (boxesMissing(t, r)) return;
    assert.equal(r.code, 4);
    const answer = JSON.parse(r.stdout) as { exit_code: number; stdout: string };
    assert.equal(answer.exit_code, 4);
    assert.equal(answer.stdout, "hi\n");
    const limited = await warren(["exec", agent, "--limit-pids", "2", "--", ...forkCount(4)]);
    assert.equal(limited.stdout, "1\n", limited.stderr);
  });

  test("files put and get, usage", async (t) => {
    const put = await warren(["files", "put", agent, "notes/in.bin"], { stdin: Buffer.from([0, 1, 2, 250]) });
    if (boxesMissing(t, put)) return;
    assert.equal(put.code, 0, put.stderr);
    assert.equal(put.stdout, "wrote 4 bytes to notes/in.bin\n");
    const get = await warren(["files", "get", agent, "notes/in.bin"]);
    assert.deepEqual([...get.bytes], [0, 1, 2, 250]);
    const out = path.join(dir, "copy.bin");
    assert.equal((await warren(["files", "get", agent, "notes/in.bin", "--out", out])).code, 0);
    assert.deepEqual([...(await readFile(out))], [0, 1, 2, 250]);
    const bad = await warren(["files", "get", agent, "../../etc/passwd"]);
    assert.match(bad.stderr, /^error: file\.invalid_path: /);
    const usage = await warren(["usage", agent]);
    assert.equal(usage.code, 0, usage.stderr);
    assert.match(usage.stdout, /^agent +\S+\/10240 MiB/m);
  });

  test("runs start --wait prints the output and exits with the run's code; get, list, events", async (t) => {
    const r = await warren([
      "runs",
      "start",
      agent,
      "--input",
      "from input\n",
      "--wait",
      "--",
      "cat",
      "/agent/input",
    ]);
    if (boxesMissing(t, r)) return;
    assert.equal(r.stdout, "from input\n", r.stderr);
    assert.equal(r.code, 0);
    const failing = await warren(["runs", "start", agent, "--wait", "--command", "echo nope; exit 3"]);
    assert.equal(failing.stdout, "nope\n");
    assert.match(failing.stderr, /ended failed/);
    assert.equal(failing.code, 3);
    const runs = await json<{ items: { id: string; status: string }[] }>(["runs", "list", agent]);
    assert.ok(runs.items.length >= 2);
    const id = runs.items[0]?.id ?? "";
    assert.match((await warren(["runs", "get", id])).stdout, new RegExp(`^id +${id}$`, "m"));
    assert.match(
      (await warren(["runs", "list", agent])).stdout,
      /^ID +STATUS +COMMAND +EXIT +STARTED +ENDED\n/,
    );
    assert.match((await warren(["runs", "events", id])).stdout, /^AT +TYPE +DATA\n/);
    const started = await json<{ id: string }>(["runs", "start", agent, "--", "sleep", "30"]);
    const impatient = await warren(["runs", "wait", started.id, "--timeout-ms", "500"]);
    assert.equal(impatient.code, 1);
    assert.match(impatient.stderr, /^error: timeout: run \S+ is still (queued|running) after 500 ms/);
    const refused = await warren(["runs", "start", agent, "--fail-if-busy", "--", "true"]);
    assert.notEqual(refused.code, 0);
    assert.match(refused.stderr, /generation\.busy/);
    const queued = await json<{ id: string; status: string; waiting: { reason: string } }>([
      "runs",
      "start",
      agent,
      "--",
      "true",
    ]);
    assert.equal(queued.status, "queued");
    assert.equal(queued.waiting.reason, "agent_busy");
    const cancelled = await warren(["runs", "cancel", started.id]);
    assert.equal(cancelled.code, 0, cancelled.stderr);
    assert.equal(
      (await json<{ status: string }>(["runs", "wait", started.id, "--timeout-ms", "30000"])).status,
      "cancelled",
    );
    assert.equal(
      (await json<{ status: string }>(["runs", "wait", queued.id, "--timeout-ms", "30000"])).status,
      "succeeded",
    );
  });

  test("an assistant from the command line: spec options, show, update, runs start --input, trace", async (t) => {
    const files = path.join(dir, "spec");
    await rm(files, { recursive: true, force: true });
    await import("node:fs/promises").then((fs) => fs.mkdir(files));
    await writeFile(path.join(files, "instructions.md"), "Answer from the notes.\n");
    await writeFile(path.join(files, "tools.json"), JSON.stringify([{ type: "builtin", name: "read_file" }]));
    await writeFile(
      path.join(files, "policy.cedar"),
      '@id("reads") permit(principal, action, resource == Tool::"read_file");\n',
    );
    const created = await warren([
      "agents",
      "create",
      "helper",
      "--org",
      org,
      "--machine",
      machine,
      "--kind",
      "assistant",
      "--model",
      "script:turns.json",
      "--instructions-file",
      path.join(files, "instructions.md"),
      "--tools-file",
      path.join(files, "tools.json"),
      "--tool-policy-file",
      path.join(files, "policy.cedar"),
      "--max-tokens",
      "20000",
      "--on-limit",
      "finish",
    ]);
    assert.equal(created.code, 0, created.stderr);
    const id = /^id +(agt_\S+)$/m.exec(created.stdout)?.[1] ?? "";
    assert.match(created.stdout, /^kind +assistant$/m);
    assert.match(created.stdout, /^model\.provider +script$/m);
    assert.match(created.stdout, /^limits\.max_tokens +20000$/m);
    assert.match(created.stdout, /\ninstructions:\nAnswer from the notes\.\n/);
    assert.match(created.stdout, /\ntool_policy:\n@id\("reads"\)/);
    const updated = await warren(["agents", "update", id, "--max-usd", "0.5"]);
    assert.equal(updated.code, 0, updated.stderr);
    assert.match(updated.stdout, /^spec_version +2$/m);
    assert.match(updated.stdout, /^limits\.max_tokens +20000$/m);
    assert.match(updated.stdout, /^limits\.max_usd +0\.5$/m);
    const badPolicy = await warren([
      "agents",
      "update",
      id,
      "--tool-policy-file",
      path.join(files, "tools.json"),
    ]);
    assert.equal(badPolicy.code, 1);
    assert.match(badPolicy.stderr, /^error: request\.invalid: tool_policy: /);

    const script = JSON.stringify({
      turns: [
        { tool_calls: [{ name: "read_file", input: { path: "notes.txt" } }] },
        { text: "The notes say: tea at five." },
      ],
    });
    const put = await warren(["files", "put", id, "turns.json"], { stdin: script });
    if (boxesMissing(t, put)) return;
    assert.equal((await warren(["files", "put", id, "notes.txt"], { stdin: "tea at five" })).code, 0);
    const r = await warren(["runs", "start", id, "--input", "What do the notes say?", "--wait"]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, "The notes say: tea at five.\n");
    const runs = await json<{ items: { id: string; kind: string }[] }>(["runs", "list", id]);
    assert.equal(runs.items[0]?.kind, "assistant");
    assert.match((await warren(["runs", "list", id])).stdout, /\n\S+ +succeeded +\(assistant\) +0 /);
    const trace = await warren(["runs", "trace", runs.items[0]?.id ?? ""]);
    assert.equal(trace.code, 0, trace.stderr);
    assert.match(trace.stdout, /started +assistant, model script:turns\.json, spec v2/);
    assert.match(trace.stdout, /model +script:turns\.json ok +\d+→\d+ tok/);
    assert.match(trace.stdout, /tool +read_file ALLOW \(reads\) +\{"path":"notes\.txt"\}/);
    assert.match(trace.stdout, /exit +succeeded/);
    assert.match(trace.stdout, /\nsucceeded: 2 steps, 1 tool calls \(0 refused\)/);
    assert.equal((await warren(["agents", "delete", id])).code, 0);
  });

  test("secrets: create from stdin or a file, grant, revoke, list, get, delete; the command sees the value", async (t) => {
    const value = `tok-${Math.random().toString(36).slice(2)}-${Date.now()}`;
    const made = await warren(["--json", "secrets", "create", "API_KEY", "--org", org, "--grant", agent], {
      stdin: `${value}\n`,
    });
    assert.equal(made.code, 0, made.stderr);
    assert.ok(!made.stdout.includes(value));
    const s = JSON.parse(made.stdout) as { id: string; grants: unknown[] };
    assert.deepEqual(s.grants, [{ scope: "agent", id: agent }]);
    const file = path.join(dir, "value.txt");
    await writeFile(file, "from-a-file-value");
    const second = await json<{ id: string }>([
      "secrets",
      "create",
      "OTHER_KEY",
      "--org",
      org,
      "--value-file",
      file,
    ]);
    const madeModel = await warren(
      ["--json", "secrets", "create", "MODEL_KEY", "--org", org, "--use", "model", "--grant", agent],
      { stdin: "sk-model-7d3e9a1c5b\n" },
    );
    assert.equal(madeModel.code, 0, madeModel.stderr);
    const model = JSON.parse(madeModel.stdout) as { id: string; use: string };
    assert.equal(model.use, "model");
    const badUse = await warren(["secrets", "create", "X_KEY", "--org", org, "--use", "box"], {
      stdin: "12345678",
    });
    assert.equal(badUse.code, 2);
    assert.match(badUse.stderr, /--use is env, model or tool/);
    const listed = (await warren(["secrets", "list", "--org", org])).stdout;
    assert.match(listed, /^ID +NAME +USE +ORG +GRANTS +DESCRIPTION\n/);
    assert.match(listed, /MODEL_KEY +model /);
    assert.match(listed, /API_KEY +env /);
    const granted = await warren(["secrets", "grant", second.id, org]);
    assert.equal(granted.stdout, `${second.id} reaches org:${org}\n`);
    const revoked = await warren(["secrets", "revoke", second.id, org]);
    assert.equal(revoked.stdout, `${second.id} reaches -\n`);
    assert.match((await warren(["secrets", "get", s.id])).stdout, /^name +API_KEY$/m);
    const short = await warren(["secrets", "create", "SHORT", "--org", org], { stdin: "1234567" });
    assert.equal(short.code, 1);
    assert.match(short.stderr, /request.invalid: body.value: must be at least 8 bytes/);
    const e = await warren([
      "exec",
      agent,
      "--command",
      'echo "$API_KEY"; printf %s "$API_KEY" | wc -c; echo "${MODEL_KEY-unset}"',
    ]);
    if (boxesMissing(t, e)) return;
    assert.equal(e.stdout, `[redacted]\n${value.length}\nunset\n`);
    assert.equal((await warren(["secrets", "delete", model.id])).code, 0);
    assert.equal((await warren(["secrets", "delete", second.id])).code, 0);
    assert.equal((await warren(["secrets", "delete", s.id])).code, 0);
    assert.equal((await json<{ items: unknown[] }>(["secrets", "list", "--org", org])).items.length, 0);
  });

  test("machines pause", async () => {
    const paused = await json<{ state: string }>(["machines", "pause", machine]);
    assert.ok(["paused", "stopped"].includes(paused.state), paused.state);
  });

  test("machines stop", async () => {
    const stopped = await json<{ state: string }>(["machines", "stop", machine]);
    assert.equal(stopped.state, "stopped");
  });
});
