// Persona choice and a fenced member: one who holds areas picks only a persona homed in one of
// them (403 area.refused otherwise, the same whether the persona exists); a persona's area must
// name an area of the organisation (400 request.invalid). No turn is started, so no box.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { dbLegs } from "../support/db.js";
import { asMember, orgWithAgent } from "../support/org.js";
import { startTestServer, type TestServer } from "../support/server.js";

const OWNER = "owner@example.com";
const FENCED = "fenced@example.com";

for (const leg of dbLegs)
  describe(`personas and fenced members, on ${leg.name}`, { skip: leg.skip ?? false }, () => {
    let t: TestServer;
    let agent: string;
    const as = asMember(() => t);
    const owner = as(OWNER);
    const fenced = as(FENCED);

    before(async () => {
      t = await startTestServer({ leg, env: { AUTH_MODE: "trusted-header" } });
      ({ agent } = await orgWithAgent(owner, {
        areas: { proj: ["proj/"], other: ["other/"] },
        members: [{ email: FENCED, role: "writer", areas: ["proj"] }],
      }));
    });
    after(async () => {
      await t?.close();
    });

    test("a persona's area must exist", async () => {
      const r = await owner("POST", `/api/agents/${agent}/personas`, { name: "ghost", area: "nowhere" });
      assert.equal(r.status, 400, JSON.stringify(r.body));
      assert.equal(r.body.error.code, "request.invalid");
      assert.match(r.body.error.message, /area: the organisation has no area named nowhere/);
    });

    test("a fenced member picks only a persona homed in its areas; outside or missing is the same 403", async () => {
      const outside = await owner("POST", `/api/agents/${agent}/personas`, { name: "out", area: "other" });
      assert.equal(outside.status, 201, JSON.stringify(outside.body));
      const none = await owner("POST", `/api/agents/${agent}/personas`, { name: "none" });
      assert.equal(none.status, 201, JSON.stringify(none.body));
      const gone = await owner("POST", `/api/agents/${agent}/personas`, { name: "gone", area: "proj" });
      assert.equal((await owner("DELETE", `/api/personas/${gone.body.id}`)).status, 204);
      const answers = [];
      for (const persona_id of [outside.body.id, none.body.id, gone.body.id]) {
        const r = await fenced("POST", `/api/agents/${agent}/conversations`, { persona_id });
        assert.equal(r.status, 403, `${persona_id}: ${JSON.stringify(r.body)}`);
        assert.equal(r.body.error.code, "area.refused");
        answers.push(r.body);
      }
      assert.deepEqual(answers[0], answers[2], "an existing persona outside and a missing one answer alike");
    });
  });
