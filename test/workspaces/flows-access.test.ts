// Flows and instances on both databases: who may see and change them (a non-member gets 404,
// a viewer reads but changes nothing), what a flow may name, and an instance's lifecycle in
// the store (its own group, its end). No box starts here.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { schema } from "../../src/store/index.js";
import { dbLegs } from "../support/db.js";
import { startTestServer, type TestServer } from "../support/server.js";
import { asMember } from "../support/org.js";

const OWNER = "owner@example.com";
const VIEWER = "viewer@example.com";
const OUTSIDER = "outsider@example.org";

for (const leg of dbLegs)
  describe(`flows on ${leg.name}`, { skip: leg.skip ?? false }, () => {
    let t: TestServer;
    let org: { id: string };
    let agent: string;
    let flow: string;
    let instance: string;
    const as = asMember(() => t);

    before(async () => {
      t = await startTestServer({ leg, env: { AUTH_MODE: "trusted-header" } });
      const owner = as(OWNER);
      org = (await owner("POST", "/api/orgs", { name: "o" })).body;
      assert.equal(
        (await owner("PUT", `/api/orgs/${org.id}/members`, { email: VIEWER, role: "viewer" })).status,
        200,
      );
      const m = (await owner("POST", "/api/machines", { org_id: org.id, name: "m" })).body;
      agent = (await owner("POST", "/api/agents", { org_id: org.id, machine_id: m.id, name: "a" })).body.id;
      const f = await owner("POST", "/api/flows", { org_id: org.id, name: "f", agent_ids: [agent] });
      assert.equal(f.status, 201, JSON.stringify(f.body));
      flow = f.body.id;
      const i = await owner("POST", `/api/flows/${flow}/instances`, { name: "one" });
      assert.equal(i.status, 201, JSON.stringify(i.body));
      instance = i.body.id;
    });
    after(async () => {
      await t?.close();
    });

    test("a non-member gets 404 for every route; a viewer reads but changes nothing", async () => {
      const out = as(OUTSIDER);
      const writes: [string, string, unknown?][] = [
        ["POST", `/api/flows/${flow}/instances`, {}],
        [
          "POST",
          `/api/flow-instances/${instance}/runs`,
          { agent_id: agent, kind: "command", command: "true" },
        ],
        ["POST", `/api/flow-instances/${instance}/conversations`, { agent_id: agent }],
        ["POST", `/api/flow-instances/${instance}/end`],
      ];
      const reads: [string, string][] = [
        ["GET", `/api/flows/${flow}`],
        ["GET", `/api/flows/${flow}/instances`],
        ["GET", `/api/flow-instances/${instance}`],
        ["GET", `/api/flows?org_id=${org.id}`],
      ];
      for (const [method, url, body] of [
        ...writes,
        ...reads,
        ["POST", "/api/flows", { org_id: org.id, name: "x", agent_ids: [agent] }] as const,
      ]) {
        const r = await out(method, url, body);
        assert.equal(r.status, 404, `${method} ${url}: ${JSON.stringify(r.body)}`);
        assert.equal(r.body.error.code, "not_found");
      }
      const viewer = as(VIEWER);
      for (const [method, url] of reads) assert.equal((await viewer(method, url)).status, 200, url);
      for (const [method, url, body] of writes) {
        const r = await viewer(method, url, body);
        assert.equal(r.status, 403, `${method} ${url}: ${JSON.stringify(r.body)}`);
        assert.equal(r.body.error.code, "access.denied");
      }
    });

    test("a flow names agents of its organisation only; bodies are checked", async () => {
      const owner = as(OWNER);
      const other = (await owner("POST", "/api/orgs", { name: "other" })).body;
      const bad = await owner("POST", "/api/flows", { org_id: other.id, name: "x", agent_ids: [agent] });
      assert.equal(bad.status, 400);
      assert.equal(bad.body.error.code, "request.invalid");
      assert.match(bad.body.error.message, new RegExp(`agent_ids: no agent ${agent}`));
      const empty = await owner("POST", "/api/flows", { org_id: org.id, name: "x", agent_ids: [] });
      assert.equal(empty.status, 400);
      const noKind = await owner("POST", `/api/flow-instances/${instance}/runs`, { agent_id: agent });
      assert.equal(noKind.status, 400);
      assert.equal(noKind.body.error.code, "request.invalid");
    });

    test("each instance has a group of its own; an ended one keeps its workspace and takes no work", async () => {
      const owner = as(OWNER);
      const more = await Promise.all(
        [1, 2, 3].map(() => owner("POST", `/api/flows/${flow}/instances`, {}).then((r) => r.body)),
      );
      const gids = (await t.server.store.db.select().from(schema.flowInstances)).map((r) => r.gid);
      assert.equal(new Set(gids).size, gids.length);
      assert.equal(gids.length, 4);
      assert.ok(gids.every((g) => g >= 50_000 && g <= 64_999));
      const ended = await owner("POST", `/api/flow-instances/${more[0].id}/end`);
      assert.equal(ended.status, 200);
      assert.equal(ended.body.status, "ended");
      assert.equal((await owner("POST", `/api/flow-instances/${more[0].id}/end`)).body.status, "ended");
      const late = await owner("POST", `/api/flow-instances/${more[0].id}/runs`, {
        agent_id: agent,
        kind: "command",
        command: "true",
      });
      assert.equal(late.status, 409);
      assert.equal(late.body.error.code, "flow.instance_ended");
      const listed = (await owner("GET", `/api/flows/${flow}/instances`)).body.items;
      assert.equal(listed.length, 4);
    });
  });
