// `warren versions`, `warren canary` and `warren approvals` against a real server (PGlite, real
// boxes, an assistant on the scripted model): versions listed, read whole and made current (the
// gate's 409 version.gate said), a canary set and ended with its stats, and a waiting tool call
// listed and decided with its SHA-256 (a wrong digest is approval.stale; the tool never ran).
import assert from "node:assert/strict";
import fs from "node:fs/promises";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { boxSkipReason } from "../box/fixture.js";
import { waitFor } from "../conversations/support.js";
import { putHomeFile, TERMINAL_STATUSES } from "../support/agent-runs.js";
import { runWarren } from "../support/cli.js";
import { startTestServer, type TestServer } from "../support/server.js";
import { builtins, makeAgent, orgAndMachine } from "../support/org.js";

const POLICY = `@id("writes") @approval("required") permit(principal, action, resource == Tool::"write_file");`;

describe("warren versions, canary, approvals", { skip: boxSkipReason() ?? false }, () => {
  let t: TestServer;
  let org: { id: string };
  let machine: { id: string };

  const warren = (argv: string[]) => runWarren(argv, { url: t.url });

  before(async () => {
    t = await startTestServer({ listen: true });
    ({ org, machine } = await orgAndMachine(t.call, "cli-versions"));
  });
  after(async () => {
    await t?.close();
  });

  test("versions list, show and current (the gate refuses, then allows a rollback); canary set, show, end", async () => {
    const a = await makeAgent(t.call, { org, machine }, { name: "v", instructions: "first" });
    const v2 = await t.call("POST", `/api/agents/${a.id}/versions`, {
      instructions: "second, not current",
      sandbox_policy: { network: { allow: ["example.com:443"] } },
    });
    assert.equal(v2.status, 201, JSON.stringify(v2.body));
    assert.equal(v2.body.version, 2);

    const list = await warren(["versions", "list", a.id]);
    assert.equal(list.code, 0, list.stderr);
    assert.match(list.stdout, /^VERSION\s+CREATED\s+BY\s+CURRENT\s+CANARY\n/);
    assert.match(
      list.stdout,
      /\n1\s+\S+\s+operator@localhost\s+yes\s+-\n2\s+\S+\s+operator@localhost\s+-\s+-\n$/,
    );
    const json = JSON.parse((await warren(["--json", "versions", "list", a.id])).stdout);
    assert.deepEqual(
      json.items.map((v: any) => [v.version, v.current]),
      [
        [1, true],
        [2, false],
      ],
    );

    const shown = await warren(["versions", "show", a.id, "2"]);
    assert.equal(shown.code, 0, shown.stderr);
    assert.match(shown.stdout, /^version\s+2$/m);
    assert.match(shown.stdout, /^current\s+false$/m);
    assert.match(shown.stdout, /sandbox_policy\.network\.allow\s+.*example\.com:443/);
    assert.match(shown.stdout, /\ninstructions:\nsecond, not current\n/);
    const bad = await warren(["versions", "show", a.id, "two"]);
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /N must be a version number/);
    const missing = await warren(["versions", "show", a.id, "9"]);
    assert.equal(missing.code, 1);
    assert.match(missing.stderr, /not_found/);

    // the canary: set (with a bad share refused before any request), shown side by side, ended
    const wrongShare = await warren(["canary", "set", a.id, "--version", "2", "--share", "1"]);
    assert.equal(wrongShare.code, 2);
    assert.match(wrongShare.stderr, /--share must be above 0 and below 1/);
    const set = await warren(["canary", "set", a.id, "--version", "2", "--share", "0.3"]);
    assert.equal(set.code, 0, set.stderr);
    assert.match(set.stdout, /^canary: version 2 takes 0\.3 of runs \(started by operator@localhost/);
    assert.match(
      (await warren(["versions", "list", a.id])).stdout,
      /\n2\s+\S+\s+operator@localhost\s+-\s+0\.3\n/,
    );
    const stats = JSON.parse((await warren(["--json", "canary", "show", a.id])).stdout);
    assert.equal(stats.canary.version, 2);
    assert.equal(stats.canary.share, 0.3);
    const ended = await warren(["canary", "end", a.id]);
    assert.equal(ended.code, 0, ended.stderr);
    assert.match(ended.stdout, /^no canary; current: 1\n/);
    assert.equal((await t.call("GET", `/api/agents/${a.id}/canary`)).body.canary, null);

    // the gate: version 2 has no passed evaluation, so it cannot become current
    const suite = await t.call("POST", `/api/agents/${a.id}/evals`, {
      name: "smoke",
      cases: [{ input: "hi", expect: { contains: "hello" } }],
      pass_rate: 1,
    });
    assert.equal(suite.status, 201, JSON.stringify(suite.body));
    assert.equal((await t.call("PUT", `/api/agents/${a.id}/eval-gate`, { suite: "smoke" })).status, 200);
    const refused = await warren(["versions", "current", a.id, "2"]);
    assert.equal(refused.code, 1);
    assert.match(refused.stderr, /version\.gate/);
    assert.equal((await t.call("GET", `/api/agents/${a.id}`)).body.spec_version, 1);
    assert.equal((await t.call("PUT", `/api/agents/${a.id}/eval-gate`, { suite: null })).status, 200);
    const promoted = await warren(["versions", "current", a.id, "2"]);
    assert.equal(promoted.code, 0, promoted.stderr);
    assert.equal(promoted.stdout, "version 2 is current\n");
    const rolledBack = await warren(["versions", "current", a.id, "1"]);
    assert.equal(rolledBack.stdout, "version 1 is current\n");
    assert.equal((await t.call("GET", `/api/agents/${a.id}`)).body.spec_version, 1);
  });

  test("approvals list shows the waiting call; decide needs its SHA-256; a denial never runs the tool", async () => {
    const a = await makeAgent(
      t.call,
      { org, machine },
      { name: "w", tools: builtins("write_file"), tool_policy: POLICY },
    );
    await putHomeFile(
      t,
      a.id,
      "turns.json",
      JSON.stringify([
        { tool_calls: [{ name: "write_file", input: { path: "out.txt", content: "hello" } }] },
        { text: "Could not write." },
      ]),
    );
    const run = await t.call("POST", `/api/agents/${a.id}/runs`, { kind: "agent", input: "go" });
    assert.equal(run.status, 202, JSON.stringify(run.body));
    const approval = await waitFor("the run to wait for an approval", async () => {
      const items = (await t.call("GET", `/api/runs/${run.body.id}/approvals`)).body.items;
      return items.find((x: any) => x.status === "waiting");
    });

    const listed = await warren(["approvals", "list", org.id]);
    assert.equal(listed.code, 0, listed.stderr);
    assert.match(listed.stdout, /^ID\s+STATUS\s+RUN\s+TOOL\s+ARGUMENTS\s+POLICY V\s+SHA256\n/);
    const line = listed.stdout.split("\n").find((l) => l.startsWith(approval.id)) ?? "";
    assert.match(line, /\swaiting\s/);
    assert.match(line, /\swrite_file\s/);
    assert.ok(line.includes('"content":"hello"'), line);
    assert.ok(line.endsWith(approval.args_sha256), line);

    const noDigest = await warren(["approvals", "decide", approval.id, "deny"]);
    assert.equal(noDigest.code, 2);
    assert.match(noDigest.stderr, /--sha256/);
    const stale = await warren(["approvals", "decide", approval.id, "allow", "--sha256", "0".repeat(64)]);
    assert.equal(stale.code, 1);
    assert.match(stale.stderr, /approval\.stale/);
    const denied = await warren([
      "approvals",
      "decide",
      approval.id,
      "deny",
      "--sha256",
      approval.args_sha256,
      "--message",
      "not today",
    ]);
    assert.equal(denied.code, 0, denied.stderr);
    assert.equal(denied.stdout, `approval ${approval.id}: denied by operator@localhost (write_file)\n`);
    const done = await waitFor("the run to end", async () => {
      const r = (await t.call("GET", `/api/runs/${run.body.id}`)).body;
      return TERMINAL_STATUSES.includes(r.status) ? r : null;
    });
    assert.equal(done.status, "succeeded", JSON.stringify(done));
    const written = await fs
      .readFile(path.join(t.stateRoot, "workspaces", machine.id, a.id, "out.txt"), "utf8")
      .catch(() => null);
    assert.equal(written, null, "a denied call never runs the tool");
    const none = await warren(["approvals", "list", org.id]);
    assert.equal(none.stdout, "no approvals\n");
    const all = JSON.parse((await warren(["--json", "approvals", "list", org.id, "--status", "all"])).stdout);
    assert.equal(all.items.find((x: any) => x.id === approval.id).message, "not today");
  });
});
