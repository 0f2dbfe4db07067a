import assert from "node:assert/strict";
import { test } from "node:test";
import { commands, groups, optionTable } from "./catalog.js";
import { defineCommand, defineSingle, UsageError } from "./command.js";
import { usageLine } from "./help.js";
import { DEFAULT_URL, parseEnvPairs, parseHeader, parseHeaders } from "./options.js";
import { parseCli } from "./parse.js";
import { parseGrant, valueOf } from "./commands/secrets.js";

/** The parsed command as `{ kind: "orgs.create", ...what its parse answered }`, or help. */
const cmd = (argv: string[], env: Record<string, string> = {}): Record<string, unknown> => {
  const c = parseCli(argv, env).command;
  if (c.kind === "help") return c;
  return { kind: c.key.replace(" ", "."), ...(c.params as object) };
};

function usage(argv: string[], pattern: RegExp, topic?: string): void {
  assert.throws(
    () => parseCli(argv, {}),
    (err: unknown) => {
      assert.ok(err instanceof UsageError, String(err));
      assert.match(err.message, pattern);
      if (topic !== undefined) assert.equal(err.topic, topic);
      return true;
    },
  );
}

test("server URL, headers and --json: flags, then the environment, then the default", () => {
  const d = parseCli(["orgs", "list"]);
  assert.equal(d.url, DEFAULT_URL);
  assert.deepEqual(d.headers, {});
  assert.equal(d.json, false);
  const e = parseCli(["orgs", "list"], {
    WARREN_URL: "http://10.0.0.1:9000",
    WARREN_HEADERS: "X-Forwarded-Email: a@x.io\nX-Other: 1",
  });
  assert.equal(e.url, "http://10.0.0.1:9000");
  assert.deepEqual(e.headers, { "x-forwarded-email": "a@x.io", "x-other": "1" });
  const f = parseCli(
    ["--url", "http://h:1", "orgs", "list", "--json", "--header", "x-forwarded-email: b@x.io"],
    {
      WARREN_URL: "http://ignored:2",
      WARREN_HEADERS: "X-Forwarded-Email: a@x.io",
    },
  );
  assert.equal(f.url, "http://h:1");
  assert.deepEqual(f.headers, { "x-forwarded-email": "b@x.io" });
  assert.equal(f.json, true);
  usage(["--url", "localhost:8080", "orgs", "list"], /server URL/);
  usage(["--header", "nocolon", "orgs", "list"], /Name: value/);
});

test("resource commands become typed commands", () => {
  assert.deepEqual(cmd(["orgs", "create", "acme"]), { kind: "orgs.create", name: "acme" });
  assert.deepEqual(cmd(["orgs", "list"]), { kind: "orgs.list" });
  assert.deepEqual(cmd(["orgs", "set-member", "org_1", "--email", "b@x.io", "--role", "viewer"]), {
    kind: "orgs.set-member",
    orgId: "org_1",
    email: "b@x.io",
    role: "viewer",
  });
  assert.deepEqual(cmd(["orgs", "remove-member", "org_1", "usr_2"]), {
    kind: "orgs.remove-member",
    orgId: "org_1",
    userId: "usr_2",
  });
  assert.deepEqual(
    cmd([
      "machines",
      "create",
      "m1",
      "--org",
      "org_1",
      "--cpus",
      "0.5",
      "--memory-mib",
      "512",
      "--trust",
      "shared",
    ]),
    {
      kind: "machines.create",
      body: { org_id: "org_1", name: "m1", cpus: 0.5, memory_mib: 512, trust: "shared" },
    },
  );
  assert.deepEqual(cmd(["machines", "list"]), { kind: "machines.list", orgId: undefined });
  assert.deepEqual(cmd(["machines", "stop", "mch_1"]), { kind: "machines.stop", machineId: "mch_1" });
  assert.deepEqual(cmd(["machines", "pause", "mch_1"]), { kind: "machines.pause", machineId: "mch_1" });
  assert.deepEqual(cmd(["machines", "update", "mch_1", "--max-workspace-mib", "2048"]), {
    kind: "machines.update",
    machineId: "mch_1",
    body: { max_workspace_mib: 2048 },
  });
  assert.deepEqual(cmd(["agents", "create", "a", "--org", "org_1", "--machine", "mch_1"]), {
    kind: "agents.create",
    body: { org_id: "org_1", machine_id: "mch_1", name: "a" },
  });
  assert.deepEqual(cmd(["agents", "list", "--machine", "mch_1"]), {
    kind: "agents.list",
    orgId: undefined,
    machineId: "mch_1",
  });
  assert.deepEqual(cmd(["agents", "update", "agt_1", "--policy-file", "p.json"]), {
    kind: "agents.update",
    agentId: "agt_1",
    body: {},
    policyFile: "p.json",
  });
  assert.deepEqual(cmd(["guilds", "add-agent", "gld_1", "agt_1"]), {
    kind: "guilds.add-agent",
    id: "gld_1",
    agentId: "agt_1",
  });
  assert.deepEqual(cmd(["usage", "agt_1"]), { kind: "usage", agentId: "agt_1" });
  assert.deepEqual(cmd(["serve"]), { kind: "serve", stopBoxes: false });
  assert.deepEqual(cmd(["serve", "--stop-boxes"]), { kind: "serve", stopBoxes: true });
  assert.deepEqual(cmd(["doctor"]), { kind: "doctor" });
});

test("exec: argv after --, or --command, with its options", () => {
  assert.deepEqual(
    cmd([
      "exec",
      "agt_1",
      "--cwd",
      "src",
      "--env",
      "A=1",
      "--env",
      "B=x=y",
      "--timeout-ms",
      "500",
      "--limit-memory-mib",
      "64",
      "--",
      "ls",
      "-la",
      "--json",
    ]),
    {
      kind: "exec",
      agentId: "agt_1",
      orgId: undefined,
      target: { argv: ["ls", "-la", "--json"] },
      cwd: "src",
      env: { A: "1", B: "x=y" },
      stdinFile: undefined,
      timeoutMs: 500,
      limits: { memory_mib: 64 },
    },
  );
  const c = cmd(["exec", "agt_1", "--command", "echo hi | wc -c", "--stdin-file", "-"]);
  assert.equal(c.kind, "exec");
  assert.deepEqual(c.target, { command: "echo hi | wc -c" });
  assert.equal(c.stdinFile, "-");
  assert.equal(c.limits, undefined);
  usage(["exec", "agt_1", "--limit-pids", "many", "--", "ls"], /whole number/);
  usage(["exec", "agt_1"], /after --/, "exec");
  usage(["exec", "agt_1", "--command", "x", "--", "ls"], /not both/, "exec");
  usage(["exec", "agt_1", "ls"], /put the command after --/, "exec");
  usage(["exec", "agt_1", "ls", "-la"], /put the command after --/, "exec");
  usage(["exec", "agt_1", "--env", "1A=x", "--", "ls"], /NAME=value/);
  usage(["exec", "agt_1", "--timeout-ms", "soon", "--", "ls"], /whole number/);
});

test("runs: start with input text or file, get, events, cancel, list, wait", () => {
  assert.deepEqual(
    cmd([
      "runs",
      "start",
      "agt_1",
      "--input",
      "hello",
      "--timeout-s",
      "30",
      "--limit-pids",
      "8",
      "--wait",
      "--fail-if-busy",
      "--",
      "cat",
      "/agent/input",
    ]),
    {
      kind: "runs.start",
      agentId: "agt_1",
      target: { argv: ["cat", "/agent/input"] },
      input: { text: "hello" },
      timeoutS: 30,
      limits: { pids: 8 },
      wait: true,
      failIfBusy: true,
    },
  );
  const f = cmd(["runs", "start", "agt_1", "--input-file", "in.txt", "--command", "wc -c < /agent/input"]);
  assert.equal(f.kind, "runs.start");
  assert.deepEqual(f.input, { file: "in.txt" });
  assert.equal(f.wait, false);
  assert.equal(f.failIfBusy, false);
  usage(["runs", "start", "agt_1", "--input", "a", "--input-file", "b", "--", "x"], /not both/);
  assert.deepEqual(cmd(["runs", "get", "run_1"]), { kind: "runs.get", id: "run_1" });
  assert.deepEqual(cmd(["runs", "events", "run_1"]), { kind: "runs.events", id: "run_1" });
  assert.deepEqual(cmd(["runs", "cancel", "run_1"]), { kind: "runs.cancel", id: "run_1" });
  assert.deepEqual(cmd(["runs", "list", "agt_1"]), { kind: "runs.list", agentId: "agt_1" });
  assert.deepEqual(cmd(["runs", "wait", "run_1", "--timeout-ms", "10"]), {
    kind: "runs.wait",
    id: "run_1",
    timeoutMs: 10,
  });
});

test("files get and put", () => {
  assert.deepEqual(cmd(["files", "get", "agt_1", "notes/a.txt"]), {
    kind: "files.get",
    agentId: "agt_1",
    path: "notes/a.txt",
    out: undefined,
  });
  assert.deepEqual(cmd(["files", "get", "agt_1", "a", "--out", "b"]), {
    kind: "files.get",
    agentId: "agt_1",
    path: "a",
    out: "b",
  });
  assert.deepEqual(cmd(["files", "put", "agt_1", "a", "./local"]), {
    kind: "files.put",
    agentId: "agt_1",
    path: "a",
    source: "./local",
  });
  assert.deepEqual(cmd(["files", "put", "agt_1", "a"]), {
    kind: "files.put",
    agentId: "agt_1",
    path: "a",
    source: undefined,
  });
});

test("help: --help, -h, help <topic>, and nothing at all is a usage error", () => {
  assert.deepEqual(cmd(["--help"]), { kind: "help", topic: undefined });
  assert.deepEqual(cmd(["-h"]), { kind: "help", topic: undefined });
  assert.deepEqual(cmd(["orgs", "--help"]), { kind: "help", topic: "orgs" });
  assert.deepEqual(cmd(["machines", "create", "--help"]), { kind: "help", topic: "machines create" });
  assert.deepEqual(cmd(["exec", "--help"]), { kind: "help", topic: "exec" });
  assert.deepEqual(cmd(["help", "runs", "start"]), { kind: "help", topic: "runs start" });
  usage([], /say what to do/);
});

test("mistakes are usage errors that name the command", () => {
  usage(["nope"], /unknown command "nope"/);
  usage(["orgs"], /orgs needs a command/, "orgs");
  usage(["orgs", "lst"], /unknown command "orgs lst"/, "orgs");
  usage(["orgs", "get"], /<org> is missing/, "orgs get");
  usage(["orgs", "get", "a", "b"], /unexpected argument "b"/, "orgs get");
  usage(["orgs", "list", "--cpus", "1"], /--cpus does not apply/, "orgs list");
  usage(["orgs", "list", "--bogus"], /Unknown option '--bogus'/, "orgs list");
  usage(["orgs", "list", "--", "x"], /takes nothing after --/);
  usage(["machines", "create", "m"], /--org is required/, "machines create");
  usage(["machines", "create", "m", "--org", "o", "--trust", "open"], /isolated or shared/);
  usage(["machines", "create", "m", "--org", "o", "--cpus", "lots"], /must be a number/);
  usage(["machines", "update", "mch_1"], /say what to change/);
  usage(["agents", "update", "agt_1"], /say what to change/);
  usage(["orgs", "set-member", "org_1", "--email", "a@b.c", "--role", "god"], /owner, admin/);
  usage(["orgs", "list", "--url"], /argument missing/);
});

test("helpers", () => {
  assert.deepEqual(parseHeader("X-Forwarded-Email:  a@b.c "), ["x-forwarded-email", "a@b.c"]);
  assert.deepEqual(parseHeader("Cookie: a=1; b=2"), ["cookie", "a=1; b=2"]);
  assert.throws(() => parseHeader(": x"), UsageError);
  assert.deepEqual(parseHeaders("\n\nA: 1\r\n", ["a: 2", "B: 3"]), { a: "2", b: "3" });
  assert.equal(parseEnvPairs([]), undefined);
  assert.deepEqual(parseEnvPairs(["EMPTY="]), { EMPTY: "" });
  assert.equal(usageLine("machines create"), "warren machines create <name> --org <org> [options]");
  assert.equal(usageLine("files put"), "warren files put <agent> <path> [local-file]");
  assert.equal(usageLine("exec"), "warren exec <agent> [options] [-- argv...]");
  for (const [key, spec] of Object.entries(commands)) assert.ok(spec.summary.length > 0, key);
});

test("options stand anywhere before --, as the command's or as global ones", () => {
  assert.deepEqual(cmd(["--org", "org_1", "machines", "list"]), { kind: "machines.list", orgId: "org_1" });
  assert.deepEqual(cmd(["machines", "--org=org_1", "list"]), { kind: "machines.list", orgId: "org_1" });
  assert.deepEqual(cmd(["machines", "create", "m", "--org", "a", "--org", "b"]), {
    kind: "machines.create",
    body: { org_id: "b", name: "m" },
  });
  assert.equal(parseCli(["orgs", "--json", "list"]).json, true);
  assert.deepEqual(cmd(["exec", "agt_1", "--", "ls", "--", "--help"]), {
    kind: "exec",
    agentId: "agt_1",
    orgId: undefined,
    target: { argv: ["ls", "--", "--help"] },
    cwd: undefined,
    env: undefined,
    stdinFile: undefined,
    timeoutMs: undefined,
    limits: undefined,
  });
  assert.deepEqual(cmd(["files", "put", "agt_1", "a", "-"]), {
    kind: "files.put",
    agentId: "agt_1",
    path: "a",
    source: "-",
  });
});

test("the messages of mistakes the option reader finds", () => {
  usage(["orgs", "list", "--json=1"], /^Option '--json' does not take an argument$/, "orgs list");
  usage(["orgs", "get", "--help=1"], /^Option '-h, --help' does not take an argument$/);
  usage(["orgs", "list", "-x"], /^Unknown option '-x'$/, "orgs list");
  usage(["-hx"], /^Unknown option '-x'$/);
  usage(["exec", "agt_1", "ls", "-la"], /^Unknown option '-l'; put the command after --, e.g. warren exec/);
  usage(["exec", "agt_1", "--cwd", "--", "ls"], /^Option '--cwd' argument is ambiguous\.\n/, "exec");
  usage(["orgs", "list", "--url"], /^Option '--url <value>' argument missing$/);
  usage(["--bogus", "orgs", "lst"], /^Unknown option '--bogus'$/, "orgs");
  usage(["orgs", "list", "--bogus", "--help"], /Unknown option/);
  usage(["orgs", "get", "a", "b"], /^unexpected argument "b"$/);
  usage(["exec", "agt_1", "ls"], /^put the command after --, e.g. warren exec <agent> \[options\] -- ls$/);
  usage(["orgs", "get", "--cpus", "1"], /--cpus does not apply/, "orgs get");
  usage(["orgs", "list", "--name", "y", "--org=x"], /^--name does not apply/);
  usage(["-h", "nope"], /^unknown command "nope"$/);
  usage(["--", "orgs"], /^say what to do$/);
  usage(["orgs", "--", "x"], /^orgs needs a command$/);
  assert.deepEqual(cmd(["orgs", "list", "--cpus", "1", "--help"]), { kind: "help", topic: "orgs list" });
  assert.deepEqual(cmd(["machines", "create", "-h"]), { kind: "help", topic: "machines create" });
  assert.deepEqual(cmd(["help", "--cpus", "1"]), { kind: "help", topic: undefined });
});

test("one option name is one kind of option in every command", () => {
  const table = optionTable();
  for (const [key, spec] of Object.entries(commands)) {
    for (const def of spec.options) {
      assert.ok(def.help.length > 0, `--${def.name} of ${key}`);
      assert.equal(
        table.get(def.name)?.value === undefined,
        def.value === undefined,
        `--${def.name} of ${key}`,
      );
    }
  }
  const flag = defineCommand({
    summary: "x",
    options: [{ name: "org", help: "a flag" }],
    parse: () => ({}),
    run: async () => 0,
  });
  assert.throws(() => optionTable([...groups, defineSingle("odd", "x", flag)]), /--org of "warren odd"/);
});

test("secrets: grants by id, the value from stdin or a file, never an argument", () => {
  const org = "org_0123456789abcdef";
  assert.deepEqual(cmd(["secrets", "create", "API_KEY", "--org", org, "--grant", "agt_0123456789abcdef"]), {
    kind: "secrets.create",
    body: {
      org_id: org,
      name: "API_KEY",
      description: undefined,
      alias_of: undefined,
      grants: [{ scope: "agent", id: "agt_0123456789abcdef" }],
    },
    valueFile: "-",
  });
  assert.equal(
    (cmd(["secrets", "create", "K", "--org", org, "--value-file", "v.txt"]) as { valueFile: string })
      .valueFile,
    "v.txt",
  );
  assert.equal(
    (
      cmd(["secrets", "create", "K", "--org", org, "--alias-of", "sec_0123456789abcdef"]) as {
        valueFile?: string;
      }
    ).valueFile,
    undefined,
  );
  usage(["secrets", "create", "K", "--org", org, "--alias-of", "sec_x", "--value-file", "f"], /not both/);
  usage(["secrets", "create", "K", "--org", org, "--grant", "everyone"], /org_, gld_ or agt_ id/);
  usage(["secrets", "create", "K", "--org", org, "--value", "s3cret"], /value/);
  assert.deepEqual(parseGrant("gld_0123456789abcdef"), { scope: "guild", id: "gld_0123456789abcdef" });
  assert.deepEqual(cmd(["secrets", "revoke", "sec_0123456789abcdef", org]), {
    kind: "secrets.revoke",
    id: "sec_0123456789abcdef",
    grant: { scope: "org", id: org },
  });
  assert.equal(valueOf(Buffer.from("tok\n")), "tok");
  assert.equal(valueOf(Buffer.from("tok\r\n")), "tok");
  assert.equal(valueOf(Buffer.from("a\n\n")), "a\n");
});
