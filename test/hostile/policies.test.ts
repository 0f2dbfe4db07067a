// Tool policies attacked from a member's seat and from the model's tool calls, on a real server
// with real boxes: a policy built to break Cedar leaves every other organisation's saves and
// runs working, and the worked example of docs/agents.md (read from the doc itself) cannot be
// beaten by spelling a path differently.
import assert from "node:assert/strict";
import fs from "node:fs/promises";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { boxSkipReason } from "../box/fixture.js";
import { eventsOfType, putHomeFile, runAgent } from "../support/agent-runs.js";
import { startTestServer, type TestServer } from "../support/server.js";

const SECRET = "the-forbidden-key-9f3a61c2";
const script = (turns: unknown[]) => JSON.stringify({ turns });

describe("hostile: tool policies", { skip: boxSkipReason() ?? false }, () => {
  let t: TestServer;
  let n = 0;

  const orgWithMachine = async (name: string) => {
    const org = (await t.call("POST", "/api/orgs", { name })).body;
    const machine = (
      await t.call("POST", "/api/machines", { org_id: org.id, name: "m", max_workspace_mib: 200 })
    ).body;
    assert.ok(org.id && machine.id);
    return { org, machine };
  };
  const agentIn = async (o: { org: { id: string }; machine: { id: string } }, spec: object) => {
    const r = await t.call("POST", "/api/agents", {
      org_id: o.org.id,
      machine_id: o.machine.id,
      name: `a${++n}`,
      ...spec,
    });
    assert.equal(r.status, 201, JSON.stringify(r.body));
    return r.body;
  };

  before(async () => {
    t = await startTestServer();
  });
  after(async () => {
    await t?.close();
  });

  test("a policy built to break Cedar is refused, and another organisation's saves and runs go on", async () => {
    const attacker = await orgWithMachine("attacker");
    const victim = await orgWithMachine("victim");
    const bad = await agentIn(attacker, {});
    const reads = (id: string) => `@id("${id}") permit(principal, action, resource == Tool::"read_file");`;
    const good = await agentIn(victim, {
      kind: "assistant",
      model: { provider: "script", name: "turns.json" },
      tools: [{ type: "builtin", name: "read_file" }],
      tool_policy: reads("reads-1"),
    });
    await putHomeFile(t, good.id, "facts.txt", "the victim's facts");
    await putHomeFile(
      t,
      good.id,
      "turns.json",
      script([{ tool_calls: [{ name: "read_file", input: { path: "facts.txt" } }] }, { text: "read it" }]),
    );
    const patch = (id: string, tool_policy: string) => t.call("PATCH", `/api/agents/${id}`, { tool_policy });

    // about 10 KB of nested parentheses: refused by the bound, with the limit
    const nested = `permit(principal, action, resource) when { ${"(".repeat(5000)}true${")".repeat(5000)} };`;
    const deep = await patch(bad.id, nested);
    assert.equal(deep.status, 400, JSON.stringify(deep.body));
    assert.equal(deep.body.error.code, "request.invalid");
    assert.match(
      deep.body.error.message,
      /^tool_policy: the policy nests brackets 5001 deep; at most 32 levels/,
    );
    const long = await patch(bad.id, `permit(principal, action, resource);\n//${"x".repeat(70_000)}`);
    assert.equal(long.status, 400);
    assert.match(long.body.error.message, /at most 65536 bytes \(64 KiB\)/);

    // under both bounds (about 40 KB, no nesting) and still too much for cedar-wasm's stack:
    // sent again and again while the other organisation saves and runs
    const chain = `permit(principal, action, resource) when { ${Array(5000).fill("true").join(" || ")} };`;
    const [crashes, saved, ran] = await Promise.all([
      Promise.all([patch(bad.id, chain), patch(bad.id, chain), patch(bad.id, chain)]),
      Promise.all([patch(good.id, reads("reads-2")), patch(good.id, reads("reads-3"))]),
      runAgent(t, good.id, "what are the facts?"),
    ]);
    for (const c of crashes) {
      assert.equal(c.status, 400, JSON.stringify(c.body));
      assert.equal(c.body.error.code, "request.invalid");
      assert.match(c.body.error.message, /^tool_policy: Cedar failed on this policy \(.+\); make it smaller/);
    }
    for (const s of saved) assert.equal(s.status, 200, JSON.stringify(s.body));
    assert.equal(ran.run.status, "succeeded", JSON.stringify(ran.run));
    const calls = eventsOfType(ran.events, "tool_call");
    assert.equal(calls.length, 1);
    assert.equal(calls[0].decision, "allow", JSON.stringify(calls[0]));
    assert.match(calls[0].output, /the victim's facts/);

    // afterwards: saves and runs of the victim, and the attacker's own sound policy, all work
    const again = await patch(good.id, reads("reads-4"));
    assert.equal(again.status, 200, JSON.stringify(again.body));
    const after = await runAgent(t, good.id, "and now?");
    assert.equal(after.run.status, "succeeded", JSON.stringify(after.run));
    const c2 = eventsOfType(after.events, "tool_call");
    assert.deepEqual(
      c2.map((c) => [c.decision, c.policies]),
      [["allow", ["reads-4"]]],
    );
    assert.equal((await patch(bad.id, reads("mine"))).status, 200);
    // nothing of the refused policies was stored
    const stored = (await t.call("GET", `/api/agents/${bad.id}`)).body;
    assert.equal(stored.tool_policy, reads("mine"));
  });

  test("the example policy of docs/agents.md decides on the canonical path, whatever its spelling", async () => {
    const md = await fs.readFile(new URL("../../docs/agents.md", import.meta.url), "utf8");
    const blocks = [...md.matchAll(/```cedar\n([\s\S]*?)```/g)].map((m) => m[1] ?? "");
    const example = blocks.find((b) => b.includes(`@id("no-secrets")`));
    assert.ok(example, "docs/agents.md shows the worked example");
    assert.match(example, /like "secrets\/\*"/);
    assert.match(example, /like "notes\/\*"/);

    const o = await orgWithMachine("spellings");
    const other = await agentIn(o, {});
    await putHomeFile(t, other.id, "secrets/key.txt", SECRET);
    const a = await agentIn(o, {
      kind: "assistant",
      model: { provider: "script", name: "turns.json" },
      tools: ["read_file", "list_files", "write_file"].map((name) => ({ type: "builtin", name })),
      tool_policy: example,
    });
    await putHomeFile(t, a.id, "secrets/key.txt", SECRET);
    const home = path.join(t.stateRoot, "workspaces", o.machine.id, a.id);

    const reads = [
      "secrets/key.txt",
      "./secrets/key.txt",
      `/home/${a.id}/secrets/key.txt`,
      "notes/../secrets/key.txt",
      "secrets//key.txt",
      `/home/${a.id}//notes/./../secrets/key.txt`,
    ];
    // (a NUL is refused too, see src/tools/canonical.test.ts; a run's events cannot hold one yet)
    const leaving = ["../x", "/etc/passwd", `/home/${other.id}/secrets/key.txt`, "../../etc"];
    const writes = [
      { path: "notes/../secrets/planted.txt", content: "planted" },
      { path: `/home/${a.id}/notes/../secrets/planted.txt`, content: "planted" },
      { path: "./notes/../../x/planted.txt", content: "planted" },
      { path: "notes/ok.txt", content: "fine" },
      { path: `./notes//../notes/ok2.txt`, content: "fine too" },
    ];
    await putHomeFile(
      t,
      a.id,
      "turns.json",
      script([
        ...reads.map((p) => ({ tool_calls: [{ name: "read_file", input: { path: p } }] })),
        ...leaving.map((p) => ({ tool_calls: [{ name: "read_file", input: { path: p } }] })),
        ...writes.map((w) => ({ tool_calls: [{ name: "write_file", input: w }] })),
        { tool_calls: [{ name: "list_files", input: { path: "notes/.." } }] },
        { text: "done" },
      ]),
    );
    const { run, events } = await runAgent(t, a.id, "try every spelling", { timeoutMs: 120_000 });
    assert.equal(run.status, "succeeded", JSON.stringify(run));
    // the forbidden file's content is nowhere: not in a tool's answer, an event or the run
    assert.doesNotMatch(JSON.stringify(events), new RegExp(SECRET));
    assert.doesNotMatch(JSON.stringify(run), new RegExp(SECRET));

    const calls = eventsOfType(events, "tool_call");
    assert.equal(calls.length, reads.length + leaving.length + writes.length + 1);
    const readCalls = calls.slice(0, reads.length);
    for (const [i, c] of readCalls.entries()) {
      assert.equal(c.decision, "deny", reads[i]);
      assert.deepEqual(c.policies, ["no-secrets"], reads[i]);
      // decided, and recorded, on the canonical path
      assert.deepEqual(c.arguments, { path: "secrets/key.txt" }, reads[i]);
    }
    const leavingCalls = calls.slice(reads.length, reads.length + leaving.length);
    for (const [i, c] of leavingCalls.entries()) {
      assert.equal(c.decision, "deny", leaving[i]);
      assert.deepEqual(c.policies, [], leaving[i]);
      assert.match(c.output, /refused before the tool policy: .*(leaves|must be inside|NUL)/, leaving[i]);
    }
    const writeCalls = calls.slice(reads.length + leaving.length, -1);
    assert.deepEqual(
      writeCalls.map((c) => [c.decision, c.arguments.path]),
      [
        ["deny", "secrets/planted.txt"],
        ["deny", "secrets/planted.txt"],
        // refused before the policy: recorded as given
        ["deny", "./notes/../../x/planted.txt"],
        ["allow", "notes/ok.txt"],
        ["allow", "notes/ok2.txt"],
      ],
    );
    assert.deepEqual(writeCalls[0].policies, ["no-secrets"]);
    assert.match(writeCalls[2].output, /leaves/);
    const list = calls.at(-1);
    assert.equal(list.decision, "allow");
    assert.deepEqual(list.arguments, { path: "." });
    assert.match(list.output, /notes\//);

    // what happened on disk: nothing planted in secrets/ (nor above the home), the notes written
    await assert.rejects(fs.stat(path.join(home, "secrets/planted.txt")), { code: "ENOENT" });
    await assert.rejects(fs.stat(path.join(home, "../x")), { code: "ENOENT" });
    assert.deepEqual((await fs.readdir(path.join(home, "secrets"))).sort(), ["key.txt"]);
    assert.equal(await fs.readFile(path.join(home, "notes/ok.txt"), "utf8"), "fine");
    assert.equal(await fs.readFile(path.join(home, "notes/ok2.txt"), "utf8"), "fine too");
    assert.equal(await fs.readFile(path.join(home, "secrets/key.txt"), "utf8"), SECRET);
  });
});
