// A port serves the whole box, which no area fences: a member who holds areas gets 403
// area.refused at /api/agents/:id/ports/:port/ and no preview token (the previews' listener
// refuses them too). No box is started: the answer is given before any port is reached.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { dbLegs } from "../support/db.js";
import { orgWithAgent } from "../support/org.js";
import { startTestServer, type TestServer } from "../support/server.js";

const OWNER = "owner@example.com";
const FENCED = "fenced@example.com";

for (const leg of dbLegs)
  describe(`the ports route and fenced members, on ${leg.name}`, { skip: leg.skip ?? false }, () => {
    let t: TestServer;
    let agent: { id: string; ports: { first: number } };
    const get = (email: string, url: string) =>
      t.inject({ method: "GET", url, headers: { "x-forwarded-email": email } });

    before(async () => {
      t = await startTestServer({ leg, env: { AUTH_MODE: "trusted-header" }, listen: true });
      const owner = (method: string, url: string, body?: unknown) =>
        t.call(method, url, body, { "x-forwarded-email": OWNER });
      agent = (
        await orgWithAgent(owner, {
          org: "fenced",
          areas: { proj: ["proj/"] },
          members: [{ email: FENCED, role: "writer", areas: ["proj"] }],
        })
      ).agentBody;
    });
    after(async () => {
      await t?.close();
    });

    test("a fenced member gets 403 area.refused and no preview token; the owner is sent to the preview", async () => {
      const url = `/api/agents/${agent.id}/ports/${agent.ports.first}/`;
      const refused = await get(FENCED, url);
      assert.equal(refused.statusCode, 403, refused.body);
      assert.equal(refused.json().error.code, "area.refused");
      assert.equal(refused.headers.location, undefined, "no preview address, no token");
      assert.doesNotMatch(refused.body, /warren_preview/);

      const sent = await get(OWNER, url);
      assert.equal(sent.statusCode, 307, sent.body);
      assert.match(String(sent.headers.location), /warren_preview=/);
    });
  });
