// Who may see and use a conversation (AUTH_MODE=trusted-header): a non-member gets 404 for
// every route of conversations and personas, never 403, and learns nothing; a viewer reads
// but cannot send or fork. A fork keeps the source's persona and areas (not the forker's),
// its starter the forker. No box is started: nothing here sends a message that runs.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { dbLegs } from "../support/db.js";
import { startTestServer, type TestServer } from "../support/server.js";
import { asMember, builtins, makeAgent } from "../support/org.js";

const OWNER = "owner@example.com";
const VIEWER = "viewer@example.com";
const WRITER = "writer@example.com";
const OUTSIDER = "outsider@example.org";

for (const leg of dbLegs)
  describe(`conversation access on ${leg.name}`, { skip: leg.skip ?? false }, () => {
    let t: TestServer;
    let agent: string;
    let conversation: string;
    let persona: string;
    const as = asMember(() => t);

    before(async () => {
      t = await startTestServer({ leg, env: { AUTH_MODE: "trusted-header" } });
      const owner = as(OWNER);
      const org = (await owner("POST", "/api/orgs", { name: "o" })).body;
      assert.equal(
        (await owner("PUT", `/api/orgs/${org.id}/members`, { email: VIEWER, role: "viewer" })).status,
        200,
      );
      assert.equal((await owner("PUT", `/api/orgs/${org.id}/areas/proj`, { folders: ["proj"] })).status, 200);
      const w = await owner("PUT", `/api/orgs/${org.id}/members`, {
        email: WRITER,
        role: "writer",
        areas: ["proj"],
      });
      assert.equal(w.status, 200, JSON.stringify(w.body));
      const m = (await owner("POST", "/api/machines", { org_id: org.id, name: "m" })).body;
      const a = await makeAgent(
        owner,
        { org_id: org.id, machine_id: m.id },
        { name: "a", model: { provider: "script", name: "s.json" }, tools: builtins("read_file") },
      );
      agent = a.id;
      const c = await owner("POST", `/api/agents/${agent}/conversations`, { title: "private" });
      assert.equal(c.status, 201, JSON.stringify(c.body));
      conversation = c.body.id;
      const p = await owner("POST", `/api/agents/${agent}/personas`, { name: "p", tools: ["read_file"] });
      assert.equal(p.status, 201, JSON.stringify(p.body));
      persona = p.body.id;
    });
    after(async () => {
      await t?.close();
    });

    test("a non-member gets 404 for every route, and sees no conversation in any list", async () => {
      const out = as(OUTSIDER);
      const routes: [string, string, unknown?][] = [
        ["POST", `/api/agents/${agent}/conversations`, {}],
        ["GET", `/api/agents/${agent}/conversations`],
        ["GET", `/api/conversations/${conversation}`],
        ["POST", `/api/conversations/${conversation}/messages`, { text: "hi" }],
        ["GET", `/api/conversations/${conversation}/messages`],
        ["GET", `/api/conversations/${conversation}/events`],
        ["POST", `/api/conversations/${conversation}/close`],
        ["POST", `/api/conversations/${conversation}/fork`, {}],
        ["POST", `/api/agents/${agent}/personas`, { name: "x" }],
        ["GET", `/api/agents/${agent}/personas`],
        ["DELETE", `/api/personas/${persona}`],
      ];
      for (const [method, url, body] of routes) {
        const r = await out(method, url, body);
        assert.equal(r.status, 404, `${method} ${url}: ${JSON.stringify(r.body)}`);
        assert.equal(r.body.error.code, "not_found");
        assert.ok(!JSON.stringify(r.body).includes("private"));
      }
      // the conversation is untouched
      const c = await as(OWNER)("GET", `/api/conversations/${conversation}`);
      assert.equal(c.body.status, "open");
    });

    test("a viewer reads the conversation but cannot send to it or close it", async () => {
      const v = as(VIEWER);
      assert.equal((await v("GET", `/api/conversations/${conversation}`)).status, 200);
      assert.equal((await v("GET", `/api/agents/${agent}/conversations`)).body.items.length, 1);
      const send = await v("POST", `/api/conversations/${conversation}/messages`, { text: "hi" });
      assert.equal(send.status, 403);
      assert.equal(send.body.error.code, "access.denied");
      assert.equal((await v("POST", `/api/conversations/${conversation}/close`)).status, 403);
      assert.equal((await v("DELETE", `/api/personas/${persona}`)).status, 403);
      const fork = await v("POST", `/api/conversations/${conversation}/fork`, {});
      assert.equal(fork.status, 403, JSON.stringify(fork.body));
      assert.equal(fork.body.error.code, "access.denied");
      // neither the outsider's fork nor the viewer's made a conversation
      assert.equal((await v("GET", `/api/agents/${agent}/conversations`)).body.items.length, 1);
    });

    test("a fork keeps the source's persona and areas; its starter is the forker", async () => {
      const owner = as(OWNER);
      const homed = await owner("POST", `/api/agents/${agent}/personas`, { name: "proj", area: "proj" });
      assert.equal(homed.status, 201, JSON.stringify(homed.body));
      const persona = homed.body.id as string;
      const src = await as(WRITER)("POST", `/api/agents/${agent}/conversations`, {
        title: "fenced",
        persona_id: persona,
      });
      assert.equal(src.status, 201, JSON.stringify(src.body));
      assert.deepEqual([src.body.persona_id, src.body.areas], [persona, ["proj"]]);
      const f = await owner("POST", `/api/conversations/${src.body.id}/fork`, {});
      assert.equal(f.status, 201, JSON.stringify(f.body));
      assert.notEqual(f.body.id, src.body.id);
      assert.equal(f.body.persona_id, persona);
      assert.deepEqual(f.body.areas, ["proj"], "the source's fence, not the owner's (none)");
      assert.equal(f.body.started_by.email, OWNER);
      assert.equal(f.body.title, "fenced");
      // the writer reaches the fork: it lies inside the writer's areas
      assert.equal((await as(WRITER)("GET", `/api/conversations/${f.body.id}`)).status, 200);
    });

    test("bad bodies are 400 request.invalid naming the field; a persona of another agent is 404", async () => {
      const owner = as(OWNER);
      const empty = await owner("POST", `/api/conversations/${conversation}/messages`, { text: "" });
      assert.equal(empty.status, 400);
      assert.match(empty.body.error.message, /^body\.text/);
      const extra = await owner("POST", `/api/agents/${agent}/conversations`, { nope: 1 });
      assert.equal(extra.status, 400);
      const ghost = await owner("POST", `/api/agents/${agent}/conversations`, {
        persona_id: "prs_0000000000000000",
      });
      assert.equal(ghost.status, 404);
    });
  });
