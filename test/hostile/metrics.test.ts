// /metrics in trusted-header mode (issue: "No door back into the server"): it needs an
// identity, and a member sees the series of a machine or organisation only for the
// organisations they belong to. Two organisations with running boxes, on real boxes.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { boxSkipReason } from "../box/fixture.js";
import { startTestServer, type TestServer } from "../support/server.js";

const A = "a-owner@example.com";
const B = "b-owner@example.com";
const NOBODY = "nobody@example.org";

describe(
  "/metrics behind identity, each organisation's series to its members",
  { skip: boxSkipReason() ?? false },
  () => {
    let t: TestServer;
    const orgs: Record<string, { org: string; machine: string; agent: string }> = {};
    const metrics = async (email?: string) =>
      t.inject({ method: "GET", url: "/metrics", headers: email ? { "x-forwarded-email": email } : {} });

    before(async () => {
      t = await startTestServer({ env: { AUTH_MODE: "trusted-header", BOX_HEALTH_MS: "250" } });
      for (const email of [A, B]) {
        const h = { "x-forwarded-email": email };
        const org = (await t.call("POST", "/api/orgs", { name: email }, h)).body;
        const m = (await t.call("POST", "/api/machines", { org_id: org.id, name: "m", memory_mib: 256 }, h))
          .body;
        const agent = (
          await t.call("POST", "/api/agents", { org_id: org.id, machine_id: m.id, name: "a" }, h)
        ).body;
        orgs[email] = { org: org.id, machine: m.id, agent: agent.id };
        const r = await t.call("POST", `/api/agents/${agent.id}/exec`, { argv: ["true"] }, h);
        assert.equal(r.body.exit_code, 0, JSON.stringify(r.body));
      }
    });
    after(async () => t.close());

    test("no identity: 401 auth.required, nothing of the metrics", async () => {
      const r = await metrics();
      assert.equal(r.statusCode, 401);
      assert.equal(JSON.parse(r.body).error.code, "auth.required");
      assert.ok(!r.body.includes("warren_"));
    });

    test("a member of one organisation sees its machines' series and none of the other's", async () => {
      const seen = async (email: string) => {
        const own = orgs[email]!;
        for (let i = 0; ; i++) {
          const r = await metrics(email);
          assert.equal(r.statusCode, 200);
          if (r.body.includes(`warren_box_pids{machine="${own.machine}",org="${own.org}"}`)) return r.body;
          assert.ok(i < 300, `no box series of ${own.machine} for ${email}`);
          await new Promise((res) => setTimeout(res, 200));
        }
      };
      await seen(A);
      const textB = await seen(B);
      const textA = await seen(A); // both boxes are sampled by now
      // the server's own series are everyone's
      assert.match(textA, /^warren_http_requests_total\{/m);
      for (const [text, other] of [
        [textA, orgs[B]!],
        [textB, orgs[A]!],
      ] as const) {
        assert.ok(!text.includes(other.machine), "another organisation's machine id");
        assert.ok(!text.includes(other.org), "another organisation's id");
      }
      // someone of no organisation sees no box at all
      const none = await metrics(NOBODY);
      assert.equal(none.statusCode, 200);
      assert.doesNotMatch(none.body, /machine="|org="/);
    });
  },
);
