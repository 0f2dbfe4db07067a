// secret_store on real boxes, through the API: an agent's command stores a file of its home
// as a secret (warren-secret store), granted to that agent alone; the value is redacted from
// then on and reaches the agent's next commands; warren-secret list shows only what reaches
// the caller; links, folders and paths outside the home are refused; 20 per agent; the
// caller is the uid boxd saw, whatever the command sends; no value ever comes back.
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { boxSkipReason } from "../box/fixture.js";
import { startTestServer, type TestServer } from "../support/server.js";

const token = (n: number) => randomBytes(n).toString("base64url");
const terminal = ["succeeded", "failed", "timed_out", "cancelled", "lost"];

/** A python3 program that sends one raw request on the calls socket and prints the answer. */
const raw = (request: unknown) =>
  `/usr/bin/python3 -c '
import socket, struct, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect("/run/calls/calls.sock")
body = sys.argv[1].encode()
s.sendall(struct.pack(">IB", len(body) + 1, 1) + body)
data = b""
while True:
    c = s.recv(65536)
    if not c: break
    data += c
while data:
    n, k = struct.unpack(">IB", data[:5]); p = data[5:4 + n]; data = data[4 + n:]
    print(k, p.decode())
' '${JSON.stringify(request)}'`;

describe("secret_store from inside the box", { skip: boxSkipReason() ?? false }, () => {
  let t: TestServer;
  let stateRoot: string;
  const log: string[] = [];
  let org: string;
  let machine: string;
  let a: { id: string; slot: number };
  let b: { id: string };
  let c: { id: string };
  const value = token(36);
  const orgValue = token(24);
  const exec = async (agentId: string, command: string) => {
    const r = await t.call("POST", `/api/agents/${agentId}/exec`, { command, timeout_ms: 30_000 });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    return r.body as { stdout: string; stderr: string; exit_code: number };
  };
  const secretsOf = async () =>
    (await t.call("GET", `/api/secrets?org_id=${org}`)).body.items as {
      id: string;
      name: string;
      grants: { scope: string; id: string }[];
      stored_by_agent: string | null;
    }[];

  before(async () => {
    stateRoot = await mkdtemp(path.join(os.tmpdir(), "warren-secret-store-"));
    t = await startTestServer({
      stateRoot,
      listen: true,
      env: { LOG_LEVEL: "debug" },
      logDestination: { write: (line: string) => void log.push(line) },
    });
    org = (await t.call("POST", "/api/orgs", { name: "store" })).body.id;
    const m = (await t.call("POST", "/api/machines", { org_id: org, name: "m" })).body.id;
    machine = m;
    const agent = async (name: string) =>
      (await t.call("POST", "/api/agents", { org_id: org, machine_id: m, name })).body;
    a = await agent("a");
    b = await agent("b");
    c = await agent("c");
    const s = await t.call("POST", "/api/secrets", {
      org_id: org,
      name: "ORG_TOKEN",
      description: "every agent of the org",
      value: orgValue,
      grants: [{ scope: "org", id: org }],
    });
    assert.equal(s.status, 201, JSON.stringify(s.body));
  });
  after(async () => {
    // stops every box of the suite, even when a test failed
    await t?.close();
    if (stateRoot) await rm(stateRoot, { recursive: true, force: true, maxRetries: 3 });
  });

  test("a run stores a file of its home: granted to that agent, redacted from then on", async () => {
    const r = await t.call("POST", `/api/agents/${a.id}/runs`, {
      kind: "command",
      // the value comes on the environment: the command's text is in the run's events
      env: { V: value },
      command: `printf "%s\\n" "$V" > token.txt; chmod 600 token.txt; warren-secret store MY_TOKEN token.txt; echo "code $?"; cat token.txt; echo after`,
    });
    assert.equal(r.status, 202, JSON.stringify(r.body));
    let run;
    for (const end = Date.now() + 30_000; ;) {
      run = (await t.call("GET", `/api/runs/${r.body.id}`)).body;
      if (terminal.includes(run.status)) break;
      assert.ok(Date.now() < end, "the run ends");
      await new Promise((res) => setTimeout(res, 50));
    }
    assert.equal(run.status, "succeeded", JSON.stringify(run));
    assert.match(run.output, /^stored MY_TOKEN \(sec_[0-9a-z]{16}\), granted to this agent/);
    assert.ok(run.output.endsWith("code 0\n[redacted]\nafter\n"), run.output);
    const events = JSON.stringify((await t.call("GET", `/api/runs/${run.id}/events`)).body);
    assert.ok(!events.includes(value), "run events hide the value");

    const mine = (await secretsOf()).filter((s) => s.name === "MY_TOKEN");
    assert.equal(mine.length, 1);
    assert.deepEqual(mine[0]!.grants, [{ scope: "agent", id: a.id }]);
    assert.equal(mine[0]!.stored_by_agent, a.id);
    assert.ok(!JSON.stringify(mine).includes(value));

    // the agent's next command: the value on its environment, redacted from its output
    const next = await exec(a.id, 'echo "$MY_TOKEN"; test "$MY_TOKEN" = "$(cat token.txt)" && echo same');
    assert.equal(next.stdout, "[redacted]\nsame\n");
    // another agent does not get it
    const other = await exec(b.id, 'echo "[${MY_TOKEN:-unset}]"');
    assert.equal(other.stdout, "[unset]\n");
    assert.ok(!log.join("").includes(value), "the server's log hides the value");
  });

  test("an exec's own output hides a value it stores mid-way", async () => {
    const v = token(20);
    const r = await exec(
      b.id,
      `printf %s "${v}" > b.txt; echo "before ${v}"; sleep 0.3; warren-secret store B_TOKEN b.txt >/dev/null; echo "after ${v}"`,
    );
    assert.equal(r.exit_code, 0, r.stderr);
    // before the call the value was nothing special; from the call on it is hidden
    assert.equal(r.stdout, `before ${v}\nafter [redacted]\n`);
  });

  test("warren-secret list shows only what reaches the caller, never a value", async () => {
    const la = await exec(a.id, "warren-secret list");
    assert.equal(la.exit_code, 0, la.stderr);
    assert.equal(la.stdout, "MY_TOKEN\nORG_TOKEN\tevery agent of the org\n");
    const lb = await exec(b.id, "warren-secret list");
    assert.equal(lb.stdout, "B_TOKEN\nORG_TOKEN\tevery agent of the org\n");
    const lc = await exec(c.id, "warren-secret list");
    assert.equal(lc.stdout, "ORG_TOKEN\tevery agent of the org\n");
  });

  test("links, folders, other files and paths outside the home are refused", async () => {
    const cases: [string, RegExp][] = [
      ["ln -sf /etc/passwd x; warren-secret store X x", /file\.link/],
      ["ln -sf token.txt y; warren-secret store Y y", /file\.link/],
      ["mkdir -p d/e; ln -sfn d dl; warren-secret store D dl/e", /file\.link/],
      ["mkdir -p d; warren-secret store D d", /file\.not_regular/],
      ["mkfifo f 2>/dev/null; warren-secret store F f", /file\.not_regular/],
      ["warren-secret store P /etc/passwd", /file\.invalid_path/],
      [`warren-secret store P /home/${b.id}/b.txt`, /file\.invalid_path/],
      ["cd /tmp && echo 0123456789abcdef > t && warren-secret store T t", /file\.invalid_path/],
      ["warren-secret store P missing.txt", /file\.not_found/],
      ["printf short > s.txt; warren-secret store S s.txt", /request\.invalid: .*at least 8/],
      ["warren-secret store lower token.txt", /request\.invalid: name must match/],
      ["warren-secret store PATH token.txt", /request\.invalid: name is one of warren's own/],
      ["warren-secret store MY_TOKEN token.txt", /request\.invalid: .*already has a secret MY_TOKEN/],
      ["head -c 20000 /dev/zero | tr '\\0' a > big.txt; warren-secret store BIG big.txt", /file\.too_large/],
      ["warren-secret store ONLY_TWO", /usage: warren-secret/],
    ];
    for (const [command, want] of cases) {
      const r = await exec(a.id, command);
      assert.notEqual(r.exit_code, 0, command);
      assert.match(r.stderr, want, command);
      assert.ok(!r.stderr.includes(value) && !r.stdout.includes(value), command);
    }
    const names = (await secretsOf()).map((s) => s.name);
    for (const n of ["X", "Y", "D", "F", "P", "T", "S", "BIG"]) assert.ok(!names.includes(n), n);
  });

  test("the caller is the uid boxd saw: nothing sent names another agent", async () => {
    // a request that tries to name agent a, or its uid, is refused as it stands
    const named = await exec(
      b.id,
      raw({
        op: "store",
        name: "AS_A",
        path: `/home/${b.id}/b.txt`,
        agent_id: a.id,
        uid: 10000 + (a.slot ?? 0),
      }),
    );
    assert.match(named.stdout, /request\.invalid: store takes a name and a path only/);
    // environment claims change nothing: the secret is b's
    const r = await exec(
      b.id,
      `printf %s "${token(16)}" > c.txt; WARREN_AGENT_ID=${a.id} HOME=/home/${a.id} warren-secret store AS_B c.txt`,
    );
    assert.equal(r.exit_code, 0, r.stderr);
    const s = (await secretsOf()).find((x) => x.name === "AS_B")!;
    assert.deepEqual(s.grants, [{ scope: "agent", id: b.id }]);
    assert.equal(s.stored_by_agent, b.id);
    const la = await exec(a.id, "warren-secret list");
    assert.ok(!la.stdout.includes("AS_B"));
  });

  test("the calls socket is boxd's: an agent cannot replace it or put a file beside it", async () => {
    const r = await exec(
      a.id,
      "rm -f /run/calls/calls.sock 2>/dev/null && echo removed; touch /run/calls/x 2>/dev/null && echo made; mv /run/calls/calls.sock /tmp/s 2>/dev/null && echo moved; ls /run/calls",
    );
    assert.equal(r.stdout, "calls.sock\n");
    assert.equal((await exec(a.id, "warren-secret list")).exit_code, 0);
  });

  test("no op reads a value back, deletes or regrants", async () => {
    for (const op of ["get", "read", "delete", "grant", "value"]) {
      const r = await exec(a.id, raw({ op, name: "MY_TOKEN" }));
      assert.match(r.stdout, /op must be \\"list\\" or \\"store\\"|op must be "list" or "store"/, r.stdout);
      assert.ok(!r.stdout.includes(value));
    }
    const bad = await exec(a.id, raw("not an object"));
    assert.match(bad.stdout, /request must be an object|not a JSON object/);
    const mine = (await secretsOf()).filter((s) => s.name === "MY_TOKEN");
    assert.deepEqual(mine[0]!.grants, [{ scope: "agent", id: a.id }]);
  });

  test("the channel comes back with the box: stopped, then started by the next command", async () => {
    const stop = await t.call("POST", `/api/machines/${machine}/stop`);
    assert.ok(stop.status < 300, JSON.stringify(stop.body));
    // the box starts again with this command, its calls channel open before the command runs
    const r = await exec(a.id, "warren-secret list");
    assert.equal(r.exit_code, 0, r.stderr);
    assert.match(r.stdout, /^MY_TOKEN\n/);
  });

  test("at most 20 per agent: the 21st is secret.limit", async () => {
    const r = await exec(
      c.id,
      `for i in $(seq 1 20); do printf "%s-$i" "${token(12)}" > v.txt; warren-secret store C_$i v.txt >/dev/null || echo "failed $i"; done; printf %s "${token(12)}" > v.txt; warren-secret store C_21 v.txt; echo "code $?"`,
    );
    assert.equal(r.stdout, "code 1\n", r.stderr);
    assert.match(r.stderr, /secret\.limit: this agent already stored 20 secrets/);
    const stored = (await secretsOf()).filter((s) => s.stored_by_agent === c.id);
    assert.equal(stored.length, 20);
  });
});
