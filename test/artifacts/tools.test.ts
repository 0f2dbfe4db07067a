// The artifact tools on a real server with a real box: each one decided by the Cedar tool
// policy (refused without a permit, a note path tested in its canonical form), script_run
// writing the agent's scripts into its home and running one in the box as the agent, and an
// assistant's memory outliving its home: written by memory_write, the home deleted and made
// again, the next run's system prompt hydrated from the store, every revision kept.
import assert from "node:assert/strict";
import fs from "node:fs/promises";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { ARTIFACT_TOOLS } from "../../src/contract/spec.js";
import type { Toolset } from "../../src/tools/types.js";
import { boxSkipReason } from "../box/fixture.js";
import { eventsOfType, putHomeFile, runAgent } from "../support/agent-runs.js";
import { startTestServer, type TestServer } from "../support/server.js";
import { mountToolGateway } from "../support/tool-gateway.js";
import { agentSecret, builtins, makeAgent, newAgent, orgAndMachine } from "../support/org.js";
import { openToolset } from "../support/toolset.js";

const ALLOW_ALL = `@id("all") permit(principal, action, resource);`;
const SECRET = "sekrit-8d7c6b5a4f3e2d1c";

describe("the artifact tools", { skip: boxSkipReason() ?? false }, () => {
  let t: TestServer;
  let org: { id: string };
  let machine: { id: string };
  let a: { id: string; uid: number; machine_id: string };
  const open: Toolset[] = [];

  const tools = async (
    policy: string,
    names: readonly string[] = ARTIFACT_TOOLS,
    via: "loop" | "gateway" = "loop",
  ) => {
    const opened = await openToolset(t, a.id, { tools: builtins(...names), tool_policy: policy }, via);
    open.push(opened.set);
    return opened;
  };

  const ARGS: Record<(typeof ARTIFACT_TOOLS)[number], Record<string, unknown>> = {
    note_list: {},
    note_read: { path: "plan.md" },
    note_write: { path: "plan.md", content: "the plan" },
    memory_read: {},
    memory_write: { content: "remember" },
    record_list: {},
    record_get: { collection: "leads", id: "acme" },
    record_put: { collection: "leads", id: "acme", record: { a: 1 } },
    script_list: {},
    script_write: { name: "hello.sh", content: "#!/bin/sh\necho hi" },
    script_run: { name: "hello.sh" },
  };

  before(async () => {
    t = await startTestServer({ env: { BOX_IDLE_S: "30" } });
    ({ org, machine } = await orgAndMachine(t.call, "arts", { memory_mib: 512 }));
    a = await newAgent(t.call, { org, machine }, { name: "a" });
    await agentSecret(t.call, org.id, a.id, { name: "API_TOKEN", value: SECRET });
  });
  after(async () => {
    for (const s of open) await s.close();
    await t?.close();
  });

  test("every artifact tool is decided by the Cedar policy: none runs without a permit", async () => {
    const { set, records } = await tools("");
    assert.deepEqual(
      set.tools.map((x) => x.name),
      [...ARTIFACT_TOOLS],
    );
    for (const name of ARTIFACT_TOOLS) {
      const out = await set.call(name, ARGS[name]);
      assert.match(out.output, /refused by the agent's tool policy/, name);
    }
    assert.deepEqual(
      records.map((r) => [r.tool, r.decision]),
      ARTIFACT_TOOLS.map((name) => [name, "deny"]),
    );
    // nothing was written
    const listed = await t.call("GET", `/api/orgs/${org.id}/artifacts?prefix=agents/${a.id}/`);
    assert.deepEqual(listed.body.items, []);

    // each permitted alone: that one runs, the others stay refused
    for (const name of ARTIFACT_TOOLS) {
      const one = await tools(`@id("only") permit(principal, action, resource == Tool::"${name}");`);
      const ok = await one.set.call(name, ARGS[name]);
      assert.equal(ok.record.decision, "allow", `${name}: ${ok.output}`);
      assert.deepEqual(ok.record.policies, ["only"]);
      const other = ARTIFACT_TOOLS.find((x) => x !== name)!;
      assert.equal((await one.set.call(other, ARGS[other])).record.decision, "deny");
    }
  });

  test("a policy tests a note's path in its canonical form", async () => {
    const g = (await t.call("POST", "/api/guilds", { org_id: org.id, name: "g" })).body;
    await t.call("PUT", `/api/orgs/${org.id}/access/guilds/${g.id}/shared.md`, {
      grants: [{ scope: "agent", id: a.id, mode: "write" }],
    });
    const { set } = await tools(`${ALLOW_ALL}
      @id("own-notes-only") forbid(principal, action, resource == Tool::"note_write")
        when { context.arguments has path && !(context.arguments.path like "agents/*") };`);
    const own = await set.call("note_write", { path: "today.md", content: `token ${SECRET}` });
    assert.equal(own.record.decision, "allow", own.output);
    assert.deepEqual(own.record.arguments, {
      path: `agents/${a.id}/notes/today.md`,
      content: "token [redacted]",
    });
    // what the agent wrote is stored redacted of its secrets
    const stored = await t.inject({
      method: "GET",
      url: `/api/orgs/${org.id}/artifacts/agents/${a.id}/notes/today.md`,
    });
    assert.equal(stored.body, "token [redacted]");
    const shared = await set.call("note_write", { path: `guilds/${g.id}/shared.md`, content: "x" });
    assert.equal(shared.record.decision, "deny");
    assert.deepEqual(shared.record.policies, ["own-notes-only"]);
    const bad = await set.call("note_read", { path: "../../etc/passwd" });
    assert.equal(bad.record.decision, "deny");
    assert.match(bad.output, /refused before the tool policy/);
  });

  test("note tools reach every note the access lists reach, as note_list spells it: the organisation's (org/<name>.md), a guild's and its own", async () => {
    const put = async (p: string, text: string) => {
      const r = await t.inject({
        method: "PUT",
        url: `/api/orgs/${org.id}/artifacts/${p}`,
        headers: { "content-type": "text/markdown" },
        payload: text,
      });
      assert.equal(r.statusCode, 200, r.body);
    };
    const share = async (p: string, grants: unknown[]) => {
      const r = await t.call("PUT", `/api/orgs/${org.id}/access/${p}`, { grants });
      assert.equal(r.status, 200, JSON.stringify(r.body));
    };
    const crew = (await t.call("POST", "/api/guilds", { org_id: org.id, name: "crew" })).body;
    assert.equal((await t.call("POST", `/api/guilds/${crew.id}/agents`, { agent_id: a.id })).status, 204);
    await put("team-notes.md", "standup at 9:30");
    await share("team-notes.md", [{ scope: "org", id: org.id, mode: "write" }]);
    await put("handbook.md", "read, do not edit");
    await share("handbook.md", [{ scope: "org", id: org.id, mode: "read" }]);
    await put(`guilds/${crew.id}/roster.md`, "ana, bo");
    await share(`guilds/${crew.id}/roster.md`, [{ scope: "guild", id: crew.id, mode: "write" }]);
    // reached by nothing: an organisation note with no access list, and one that does not exist
    await put("board-only.md", "the board's plans");

    const { set, records } = await tools(ALLOW_ALL, ["note_list", "note_read", "note_write"]);
    const call = async (name: string, args: Record<string, unknown>) => (await set.call(name, args)).output;
    assert.equal(
      (await call("note_write", { path: "mine.md", content: "my own" })).trim(),
      `wrote agents/${a.id}/notes/mine.md (revision 1)`,
    );
    const listed = await call("note_list", {});
    const paths = listed.split("\n").map((l) => l.split("\t")[0]);
    for (const p of [
      "org/team-notes.md",
      "org/handbook.md",
      `guilds/${crew.id}/roster.md`,
      `agents/${a.id}/notes/mine.md`,
    ])
      assert.ok(paths.includes(p), `${p} in:\n${listed}`);
    assert.ok(!paths.some((p) => p?.includes("board-only")), listed);
    assert.match(listed, /^org\/handbook\.md\t\d+ bytes\trevision 1\tread$/m);

    // every path note_list gives reads
    assert.equal(await call("note_read", { path: "org/team-notes.md" }), "standup at 9:30");
    assert.equal(await call("note_read", { path: "org/handbook.md" }), "read, do not edit");
    assert.equal(await call("note_read", { path: `guilds/${crew.id}/roster.md` }), "ana, bo");
    assert.equal(await call("note_read", { path: `agents/${a.id}/notes/mine.md` }), "my own");
    assert.equal(await call("note_read", { path: "mine.md" }), "my own");
    // a bare name stays the agent's own
    assert.match(
      await call("note_read", { path: "team-notes.md" }),
      new RegExp(`no note agents/${a.id}/notes/team-notes\\.md`),
    );

    // under write: written where the access list says, as the store's path
    assert.match(
      await call("note_write", { path: "org/team-notes.md", content: "standup at 10" }),
      /wrote org\/team-notes\.md \(revision 2\)/,
    );
    assert.match(
      await call("note_write", { path: `guilds/${crew.id}/roster.md`, content: "ana, bo, cy" }),
      /revision 2/,
    );
    const stored = await t.inject({ method: "GET", url: `/api/orgs/${org.id}/artifacts/team-notes.md` });
    assert.equal(stored.body, "standup at 10");
    assert.equal(await call("note_read", { path: `guilds/${crew.id}/roster.md` }), "ana, bo, cy");
    // read only: refused, unchanged
    assert.match(
      await call("note_write", { path: "org/handbook.md", content: "edited" }),
      /you may not write the note org\/handbook\.md/,
    );
    assert.equal(
      (await t.inject({ method: "GET", url: `/api/orgs/${org.id}/artifacts/handbook.md` })).body,
      "read, do not edit",
    );

    // a note no list reaches is refused alike whether it exists or not: nothing says which
    const there = await call("note_read", { path: "org/board-only.md" });
    const absent = await call("note_read", { path: "org/no-such-note.md" });
    assert.match(there, /the note org\/board-only\.md is not shared with you/);
    assert.equal(absent.replace("no-such-note", "board-only"), there);
    assert.doesNotMatch(there, /the board's plans/);
    assert.match(await call("note_write", { path: "org/board-only.md", content: "x" }), /you may not write/);
    assert.match(await call("note_read", { path: "org/a/b.md" }), /not an organisation's note/);
    // the policy sees the note as the tool spells it
    assert.ok(
      records.some(
        (r) => r.tool === "note_read" && (r.arguments as { path?: string }).path === "org/team-notes.md",
      ),
    );
  });

  test("script_write stores a script; script_run writes scripts/ in the home and runs it in the box as the agent", async () => {
    const { set } = await tools(ALLOW_ALL);
    assert.match(
      (
        await set.call("script_write", {
          name: "count.sh",
          content: '#!/bin/sh\necho "$# args: $*"\nid -u\necho "$API_TOKEN"',
        })
      ).output,
      /wrote agents\/.*\/scripts\/count.sh \(revision 1\)/,
    );
    await set.call("script_write", { name: "plain", content: 'echo "no shebang, $1"' });
    const scripts = (await set.call("script_list", {})).output;
    assert.match(scripts, new RegExp(`^agents/${a.id}/scripts/count.sh\t\\d+ bytes\trevision 1$`, "m"));
    assert.match(scripts, new RegExp(`^agents/${a.id}/scripts/plain\t21 bytes\trevision 1$`, "m"));
    const run = await set.call("script_run", { name: "count.sh", args: ["a", "b c"] });
    assert.equal(run.output, `exit code 0\n--- stdout\n2 args: a b c\n${a.uid}\n[redacted]\n`);
    assert.equal(
      (await set.call("script_run", { name: "plain", args: ["x"] })).output,
      "exit code 0\n--- stdout\nno shebang, x\n",
    );
    const home = t.server.provider.homes.homeDir(a.machine_id, a.id);
    const st = await fs.stat(path.join(home, "scripts/count.sh"));
    assert.equal(st.uid, a.uid);
    assert.equal(st.mode & 0o777, 0o700);
    assert.match(
      (await set.call("script_run", { name: "nope" })).output,
      /no script named nope \(count.sh, (hello.sh, )?plain\)/,
    );
    assert.match((await set.call("script_write", { name: "../x", content: "" })).output, /call failed: path/);
    // the home's copy is materialised from the store: an edit in the home is replaced on the next run
    await fs.writeFile(path.join(home, "scripts/plain"), "echo tampered");
    assert.match((await set.call("script_run", { name: "plain", args: ["y"] })).output, /no shebang, y/);
  });

  test("memory outlives the home: the next run's prompt has it after the home is deleted and made again", async () => {
    const m = await makeAgent(
      t.call,
      { org, machine },
      {
        name: "rememberer",
        model: { provider: "script", name: "s.json" },
        instructions: "Keep notes of what matters.",
        tools: builtins("memory_read", "memory_write"),
        tool_policy: ALLOW_ALL,
      },
    );
    const script = (turns: unknown[]) => JSON.stringify({ turns });
    await putHomeFile(
      t,
      m.id,
      "s.json",
      script([
        { tool_calls: [{ name: "memory_write", input: { content: "The deploy key rotates on Fridays." } }] },
        {
          tool_calls: [
            {
              name: "memory_write",
              input: { content: "The deploy key rotates on Fridays.\nAsk Ana first." },
            },
          ],
        },
        { text: "noted" },
      ]),
    );
    const first = await runAgent(t, m.id, "remember this");
    assert.equal(first.run.status, "succeeded", JSON.stringify(first.run));
    assert.match(eventsOfType(first.events, "prompt")[0].system, /# Your memory\n\n\(empty\)/);

    // the home goes, and is made again, empty
    const layout = t.server.provider.homes;
    const home = layout.homeDir(m.machine_id, m.id);
    await layout.removeHome(m.machine_id, m.id);
    await assert.rejects(fs.stat(home));
    await layout.prepareHome(m.machine_id, m.id, m.uid, "isolated");
    assert.deepEqual(await fs.readdir(home), []);

    await putHomeFile(
      t,
      m.id,
      "s.json",
      script([{ tool_calls: [{ name: "memory_read", input: {} }] }, { text: "done" }]),
    );
    const second = await runAgent(t, m.id, "what do you know?");
    assert.equal(second.run.status, "succeeded", JSON.stringify(second.run));
    const system: string = eventsOfType(second.events, "prompt")[0].system;
    assert.match(system, /Keep notes of what matters\./);
    assert.match(system, /# Your memory\n\nThe deploy key rotates on Fridays\.\nAsk Ana first\./);
    const read = eventsOfType(second.events, "tool_call").find((c) => c.tool === "memory_read");
    assert.equal(read.decision, "allow");

    // every revision is kept, by the agent, and only operators read the earlier ones
    const revs = await t.call("GET", `/api/orgs/${org.id}/artifacts/agents/${m.id}/memory.md?revisions`);
    assert.deepEqual(
      revs.body.items.map((i: any) => [i.revision, i.by]),
      [
        [2, m.id],
        [1, m.id],
      ],
    );
    const old = await t.inject({
      method: "GET",
      url: `/api/orgs/${org.id}/artifacts/agents/${m.id}/memory.md?revision=1`,
    });
    assert.equal(old.body, "The deploy key rotates on Fridays.");
  });

  test("through the tool gateway (harness kinds): the artifact tools over MCP, each decided by the policy", async () => {
    const { records, runId } = await tools(
      `@id("gw-memory") permit(principal, action, resource == Tool::"memory_read") when { context.run.via == "gateway" };`,
      ["memory_read", "memory_write"],
      "gateway",
    );
    const put = await t.inject({
      method: "PUT",
      url: `/api/orgs/${org.id}/artifacts/agents/${a.id}/memory.md`,
      payload: "from the operator",
      headers: { "content-type": "text/markdown" },
    });
    assert.equal(put.statusCode, 200, put.body);
    const gw = await mountToolGateway(t.server.tools, {
      runId,
      agent: { id: a.id, orgId: org.id, machineId: a.machine_id },
    });
    try {
      const client = await gw.connect(gw.session.token);
      const listed = await client.listTools();
      assert.deepEqual(
        listed.tools.map((x) => x.name),
        ["memory_read", "memory_write"],
      );
      const read = await client.callTool({ name: "memory_read", arguments: {} });
      assert.deepEqual(read.content, [{ type: "text", text: "from the operator" }]);
      const write = await client.callTool({ name: "memory_write", arguments: { content: "overwritten" } });
      assert.equal(write.isError, true);
      assert.match(JSON.stringify(write.content), /refused by the agent's tool policy/);
      assert.deepEqual(
        records.map((r) => [r.tool, r.decision, r.policies]),
        [
          ["memory_read", "allow", ["gw-memory"]],
          ["memory_write", "deny", []],
        ],
      );
      await client.close();
    } finally {
      await gw.close();
    }
  });
});
