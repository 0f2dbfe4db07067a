// Who gained or lost an area (or a role) is a revision with its author: every change of a
// member's access through PUT /api/orgs/:id/members or DELETE /api/orgs/:id/members/:user_id
// is kept, oldest first, at GET /api/orgs/:id/members/revisions, with who made it and when; a
// PUT that changes nothing adds none; a member who holds areas may not read it. No box is
// started.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { dbLegs } from "../support/db.js";
import { asMember, orgWithAgent } from "../support/org.js";
import { startTestServer, type TestServer } from "../support/server.js";

const OWNER = "owner@example.com";
const ADMIN = "admin@example.com";
const ED = "ed@example.com";

for (const leg of dbLegs)
  describe(`member revisions, on ${leg.name}`, { skip: leg.skip ?? false }, () => {
    let t: TestServer;
    let org: string;
    const as = asMember(() => t);
    const owner = as(OWNER);
    const admin = as(ADMIN);

    before(async () => {
      t = await startTestServer({ leg, env: { AUTH_MODE: "trusted-header" } });
      ({ org } = await orgWithAgent(owner, {
        org: "revised",
        areas: { proj: ["proj"], other: ["other"] },
        members: [{ email: ADMIN, role: "admin" }],
      }));
    });
    after(async () => {
      await t?.close();
    });

    test("each gain or loss of an area or a role is a revision with its author, a removal and a return included", async () => {
      const put = (call: typeof owner, body: object) => call("PUT", `/api/orgs/${org}/members`, body);
      assert.equal((await put(owner, { email: ED, role: "editor", areas: ["proj"] })).status, 200);
      // the same again changes nothing: no revision
      assert.equal((await put(owner, { email: ED, role: "editor", areas: ["proj"] })).status, 200);
      assert.equal((await put(admin, { email: ED, role: "editor", areas: ["other", "proj"] })).status, 200);
      assert.equal((await put(admin, { email: ED, role: "viewer" })).status, 200); // areas kept
      const members = (await owner("GET", `/api/orgs/${org}/members`)).body.items;
      const ed = members.find((m: { email: string }) => m.email === ED);
      const gone = await admin("DELETE", `/api/orgs/${org}/members/${ed.user_id}`);
      assert.equal(gone.status, 204, JSON.stringify(gone.body));
      assert.equal((await put(owner, { email: ED, role: "editor", areas: ["other"] })).status, 200);

      const mine = await owner("GET", `/api/orgs/${org}/members/revisions?email=${encodeURIComponent(ED)}`);
      assert.equal(mine.status, 200, JSON.stringify(mine.body));
      assert.deepEqual(
        mine.body.items.map((r: any) => [r.revision, r.role, r.areas, r.by]),
        [
          [1, "editor", ["proj"], OWNER],
          [2, "editor", ["other", "proj"], ADMIN],
          [3, "viewer", ["other", "proj"], ADMIN],
          [4, null, [], ADMIN],
          [5, "editor", ["other"], OWNER],
        ],
      );
      for (const r of mine.body.items) {
        assert.equal(r.email, ED);
        assert.equal(r.user_id, ed.user_id);
        assert.ok(!Number.isNaN(Date.parse(r.at)), r.at);
      }

      // the whole organisation's: its founding owner and the admin's addition too
      const all = await admin("GET", `/api/orgs/${org}/members/revisions`);
      assert.equal(all.status, 200, JSON.stringify(all.body));
      const first = (email: string) => all.body.items.find((r: any) => r.email === email);
      assert.deepEqual([first(OWNER).role, first(OWNER).by, first(OWNER).revision], ["owner", OWNER, 1]);
      assert.deepEqual([first(ADMIN).role, first(ADMIN).by], ["admin", OWNER]);
      assert.equal(all.body.items.filter((r: any) => r.email === ED).length, 5);
    });

    test("a member who holds areas may not read them (403 area.refused); a stranger gets 404", async () => {
      const fenced = await as(ED)("GET", `/api/orgs/${org}/members/revisions`);
      assert.equal(fenced.status, 403, JSON.stringify(fenced.body));
      assert.equal(fenced.body.error.code, "area.refused");
      const stranger = await as("nobody@example.org")("GET", `/api/orgs/${org}/members/revisions`);
      assert.equal(stranger.status, 404, JSON.stringify(stranger.body));
    });
  });
