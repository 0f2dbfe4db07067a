// The artifact store on a real server, on both databases: the Markdown view and writes under
// display paths, memory's every revision (operators only), access lists resolved for agents
// through their tools in each case (own row, guild, organisation, none, agents created later),
// and refusals with their codes.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import type { Toolset } from "../../src/tools/types.js";
import { dbLegs } from "../support/db.js";
import { startTestServer, type TestServer } from "../support/server.js";
import { openToolset } from "../support/toolset.js";
import { orgAndMachine } from "../support/org.js";

const ALLOW_ALL = `@id("all") permit(principal, action, resource);`;
const ARTIFACT_TOOLS = ["note_list", "note_read", "note_write", "record_list", "record_get", "record_put"];

for (const leg of dbLegs) {
  describe(`artifacts (${leg.name})`, { skip: leg.skip ?? false }, () => {
    let t: TestServer;
    let org: { id: string };
    let machine: { id: string };
    let n = 0;
    const open: Toolset[] = [];

    const agent = async (): Promise<{ id: string; org_id: string }> => {
      const r = await t.call("POST", "/api/agents", {
        org_id: org.id,
        machine_id: machine.id,
        name: `a${++n}`,
      });
      assert.equal(r.status, 201, JSON.stringify(r.body));
      return r.body;
    };
    const guild = async (...agentIds: string[]): Promise<string> => {
      const g = await t.call("POST", "/api/guilds", { org_id: org.id, name: `g${++n}` });
      assert.equal(g.status, 201, JSON.stringify(g.body));
      for (const id of agentIds) {
        const r = await t.call("POST", `/api/guilds/${g.body.id}/agents`, { agent_id: id });
        assert.ok(r.status < 300, JSON.stringify(r.body));
      }
      return g.body.id;
    };
    const put = (p: string, text: string, type = "text/markdown") =>
      t.inject({
        method: "PUT",
        url: `/api/orgs/${org.id}/artifacts/${p}`,
        payload: text,
        headers: { "content-type": type },
      });
    const get = (p: string) => t.inject({ method: "GET", url: `/api/orgs/${org.id}/artifacts/${p}` });
    const grant = async (p: string, grants: unknown[]) => {
      const r = await t.call("PUT", `/api/orgs/${org.id}/access/${p}`, { grants });
      assert.equal(r.status, 200, JSON.stringify(r.body));
    };
    const toolsOf = async (agentId: string) => {
      const { set } = await openToolset(t, agentId, {
        tools: ARTIFACT_TOOLS.map((name) => ({ type: "builtin", name })),
        tool_policy: ALLOW_ALL,
      });
      open.push(set);
      return set;
    };

    before(async () => {
      t = await startTestServer({ leg });
      ({ org, machine } = await orgAndMachine(t.call, "notes"));
    });
    after(async () => {
      for (const s of open) await s.close();
      await t?.close();
    });

    test("notes and records under display paths: written, read as Markdown or JSON, listed by prefix", async () => {
      const a = await agent();
      const w = await put(`agents/${a.id}/notes/plan.md`, "# Plan\n\nthree green apples\n");
      assert.equal(w.statusCode, 200, w.body);
      assert.deepEqual(w.json(), { path: `agents/${a.id}/notes/plan.md`, revision: 1 });
      assert.equal((await put(`agents/${a.id}/notes/plan.md`, "# Plan\n\nfour\n")).json().revision, 2);
      const r = await get(`agents/${a.id}/notes/plan.md`);
      assert.equal(r.statusCode, 200);
      assert.match(String(r.headers["content-type"]), /^text\/markdown/);
      assert.equal(r.body, "# Plan\n\nfour\n");
      assert.equal((await put("handbook.md", "org-wide")).statusCode, 200);
      const rec = await put("collections/leads/acme", '{ "name": "Acme",  "size": 3 }', "application/json");
      assert.equal(rec.statusCode, 200, rec.body);
      const rr = await get("collections/leads/acme");
      assert.match(String(rr.headers["content-type"]), /^application\/json/);
      assert.deepEqual(rr.json(), { name: "Acme", size: 3 });

      const all = await t.call("GET", `/api/orgs/${org.id}/artifacts`);
      assert.equal(all.status, 200);
      const paths = all.body.items.map((i: any) => i.path);
      assert.ok(paths.includes("handbook.md") && paths.includes("collections/leads/acme"));
      const mine = await t.call("GET", `/api/orgs/${org.id}/artifacts?prefix=agents/${a.id}/`);
      assert.deepEqual(
        mine.body.items.map((i: any) => [i.path, i.kind, i.bytes, i.revision]),
        [[`agents/${a.id}/notes/plan.md`, "note", 13, 2]],
      );
      assert.match(mine.body.items[0].updated_at, /^\d{4}-\d\d-\d\dT/);
      // a prefix's LIKE wildcards are only characters
      assert.deepEqual((await t.call("GET", `/api/orgs/${org.id}/artifacts?prefix=%25`)).body.items, []);
    });

    test("memory keeps every revision, read by operators only; an agent's tools see the current text", async () => {
      const a = await agent();
      const p = `agents/${a.id}/memory.md`;
      assert.equal((await put(p, "first")).json().revision, 1);
      assert.equal((await put(p, "second")).json().revision, 2);
      const revs = await t.call("GET", `/api/orgs/${org.id}/artifacts/${p}?revisions`);
      assert.equal(revs.status, 200);
      assert.deepEqual(
        revs.body.items.map((i: any) => [i.revision, i.by, i.bytes]),
        [
          [2, "operator@localhost", 6],
          [1, "operator@localhost", 5],
        ],
      );
      const old = await t.inject({ method: "GET", url: `/api/orgs/${org.id}/artifacts/${p}?revision=1` });
      assert.equal(old.body, "first");
      assert.equal((await get(p)).body, "second");
      // a note keeps only its current revision
      await put(`agents/${a.id}/notes/x.md`, "x");
      await put(`agents/${a.id}/notes/x.md`, "y");
      const noteRevs = await t.call(
        "GET",
        `/api/orgs/${org.id}/artifacts/agents/${a.id}/notes/x.md?revisions`,
      );
      assert.deepEqual(
        noteRevs.body.items.map((i: any) => i.revision),
        [2],
      );
      const noOld = await t.call("GET", `/api/orgs/${org.id}/artifacts/agents/${a.id}/notes/x.md?revision=1`);
      assert.equal(noOld.status, 400);
      assert.equal(noOld.body.error.code, "request.invalid");
    });

    test("writes at once are one transaction each: consecutive revisions, every memory revision kept", async () => {
      const a = await agent();
      const p = `agents/${a.id}/memory.md`;
      const answers = await Promise.all(Array.from({ length: 6 }, (_, i) => put(p, `version ${i}`)));
      assert.deepEqual(
        answers.map((r) => r.statusCode),
        Array(6).fill(200),
      );
      assert.deepEqual(answers.map((r) => r.json().revision).sort(), [1, 2, 3, 4, 5, 6]);
      const revs = await t.call("GET", `/api/orgs/${org.id}/artifacts/${p}?revisions`);
      assert.deepEqual(
        revs.body.items.map((i: any) => i.revision),
        [6, 5, 4, 3, 2, 1],
      );
      // the current text is the last revision's
      const last = await t.inject({ method: "GET", url: `/api/orgs/${org.id}/artifacts/${p}?revision=6` });
      assert.equal((await get(p)).body, last.body);
    });

    test("bad paths, bodies and grants are request.invalid; missing things and other organisations are 404", async () => {
      const a = await agent();
      for (const bad of [
        "agents/nope/memory.md",
        `agents/${a.id}/other.md`,
        "x/y.md",
        "collections/leads",
        "notes.txt",
        `agents/${a.id}/notes/.md`,
      ]) {
        const r = await put(bad, "x");
        assert.equal(r.statusCode, 400, bad);
        assert.equal(r.json().error.code, "request.invalid", bad);
      }
      const notJson = await put("collections/leads/x", "{not json", "application/json");
      assert.equal(notJson.statusCode, 400);
      assert.match(notJson.json().error.message, /JSON/);
      const nul = await put("nul.md", "a\u0000b");
      assert.equal(nul.statusCode, 400);
      assert.equal((await get("missing.md")).statusCode, 404);
      // an agent of another organisation, and another organisation's store
      const { org: other, machine: om } = await orgAndMachine(t.call, "other");
      const oa = (await t.call("POST", "/api/agents", { org_id: other.id, machine_id: om.id, name: "x" }))
        .body;
      const foreign = await put(`agents/${oa.id}/notes/x.md`, "x");
      assert.equal(foreign.statusCode, 404);
      const stranger = await t.call("GET", `/api/orgs/${other.id}/artifacts`, undefined, {});
      assert.equal(stranger.status, 200); // the operator is a member of both here
      // access lists are on notes and collections only, naming this organisation's own
      const onMemory = await t.call("PUT", `/api/orgs/${org.id}/access/agents/${a.id}/memory.md`, {
        grants: [],
      });
      assert.equal(onMemory.status, 400);
      const foreignGrant = await t.call("PUT", `/api/orgs/${org.id}/access/handbook.md`, {
        grants: [{ scope: "agent", id: oa.id, mode: "read" }],
      });
      assert.equal(foreignGrant.status, 400);
      assert.match(foreignGrant.body.error.message, /grants\[0\]\.id/);
      const badMode = await t.call("PUT", `/api/orgs/${org.id}/access/handbook.md`, {
        grants: [{ scope: "org", id: org.id, mode: "admin" }],
      });
      assert.equal(badMode.status, 400);
      const twice = await t.call("PUT", `/api/orgs/${org.id}/access/collections/leads`, {
        grants: [
          { scope: "org", id: org.id, mode: "read" },
          { scope: "org", id: org.id, mode: "write" },
        ],
      });
      assert.equal(twice.status, 400);
    });

    test("an access list resolved for agents in each case, through their tools", async () => {
      const [a, b, c] = [await agent(), await agent(), await agent()];
      const g = await guild(a.id, b.id);
      const note = `guilds/${g}/brief.md`;
      await put(note, "the brief");
      const read = async (id: string, p: string) =>
        (await (await toolsOf(id)).call("note_read", { path: p })).output;
      const write = async (id: string, p: string, content: string) =>
        (await (await toolsOf(id)).call("note_write", { path: p, content })).output;

      // no row, no access
      assert.match(await read(a.id, note), /not shared with you/);
      // the guild's write reaches its agents; the agent's own none beats it
      await grant(note, [
        { scope: "guild", id: g, mode: "write" },
        { scope: "agent", id: b.id, mode: "none" },
      ]);
      assert.equal(await read(a.id, note), "the brief");
      assert.match(await write(a.id, note, "edited by a"), /revision 2/);
      assert.match(await read(b.id, note), /not shared with you/);
      assert.match(await read(c.id, note), /not shared with you/);
      // otherwise the better of guild and organisation: the guild's none, the organisation's read
      await grant(note, [
        { scope: "guild", id: g, mode: "none" },
        { scope: "org", id: org.id, mode: "read" },
      ]);
      assert.equal(await read(a.id, note), "edited by a");
      assert.match(await write(a.id, note, "no"), /no write/);
      assert.equal(await read(c.id, note), "edited by a");
      // an agent's own write beats the organisation's none
      await grant(note, [
        { scope: "org", id: org.id, mode: "none" },
        { scope: "agent", id: c.id, mode: "write" },
      ]);
      assert.match(await write(c.id, note, "by c"), /revision 3/);
      assert.match(await read(a.id, note), /not shared with you/);

      // an organisation or guild row covers agents created after it
      await grant("collections/leads", [{ scope: "org", id: org.id, mode: "read" }]);
      await grant("collections/deals", [{ scope: "guild", id: g, mode: "write" }]);
      const later = await agent();
      const tools = await toolsOf(later.id);
      assert.equal((await tools.call("record_list", {})).output, "leads\tread");
      assert.match((await tools.call("record_get", { collection: "leads", id: "acme" })).output, /Acme/);
      assert.match(
        (await tools.call("record_put", { collection: "leads", id: "x", record: { a: 1 } })).output,
        /read-only/,
      );
      await t.call("POST", `/api/guilds/${g}/agents`, { agent_id: later.id });
      const again = await toolsOf(later.id);
      assert.equal((await again.call("record_list", {})).output, "deals\twrite\nleads\tread");
      assert.match(
        (await again.call("record_put", { collection: "deals", id: "d1", record: { v: 2 } })).output,
        /wrote collections\/deals\/d1 \(revision 1\)/,
      );
      assert.deepEqual((await get("collections/deals/d1")).json(), { v: 2 });
      assert.match(
        (await again.call("record_list", { collection: "deals" })).output,
        /^collections\/deals\/d1\t7 bytes/,
      );

      // own notes: always the agent's; note_list shows its own and what reaches it
      assert.match(await write(later.id, "mine.md", "my note"), /agents\/.*\/notes\/mine.md/);
      await grant("handbook.md", [{ scope: "org", id: org.id, mode: "read" }]);
      const listed = (await again.call("note_list", {})).output;
      assert.match(listed, new RegExp(`agents/${later.id}/notes/mine.md\\t7 bytes\\trevision 1\\twrite`));
      assert.match(listed, /handbook.md\t8 bytes\trevision 1\tread/);
      assert.doesNotMatch(listed, /brief/);
      // the list as the operator reads it back
      const acl = await t.call("GET", `/api/orgs/${org.id}/access/${note}`);
      assert.deepEqual(acl.body.grants, [
        { scope: "agent", id: c.id, mode: "write" },
        { scope: "org", id: org.id, mode: "none" },
      ]);
      // what an agent wrote is by its id
      const revs = await t.call("GET", `/api/orgs/${org.id}/artifacts/${note}?revisions`);
      assert.equal(revs.body.items[0].by, c.id);
    });
  });
}
