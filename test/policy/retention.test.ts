// Retention on a real server, on PGlite and on PostgreSQL: an organisation's retention_days
// (its guardrails) deletes the outputs and traces of runs that ended longer ago, and the run's
// record says so (retained: false, output_deleted_at); younger runs, and runs of an
// organisation without retention, keep theirs. Runs are real (commands in a box), aged in the
// store.
import assert from "node:assert/strict";
import { eq } from "drizzle-orm";
import { after, before, describe, test } from "node:test";
import { schema } from "../../src/store/index.js";
import { boxSkipReason } from "../box/fixture.js";
import { TERMINAL_STATUSES } from "../support/agent-runs.js";
import { dbLegs } from "../support/db.js";
import { startTestServer, type TestServer } from "../support/server.js";

const DAY_MS = 86_400_000;

for (const leg of dbLegs) {
  describe(
    `retention of run outputs and traces on ${leg.name}`,
    { skip: leg.skip ?? boxSkipReason() ?? false },
    () => {
      let t: TestServer;
      let org: string;
      let agent: string;
      let other: string;

      const run = async (agentId: string, word: string) => {
        const r = await t.call("POST", `/api/agents/${agentId}/runs`, {
          kind: "command",
          argv: ["echo", word],
        });
        assert.equal(r.status, 202, JSON.stringify(r.body));
        const end = Date.now() + 60_000;
        for (;;) {
          const got = (await t.call("GET", `/api/runs/${r.body.id}`)).body;
          if (TERMINAL_STATUSES.includes(got.status)) {
            assert.equal(got.status, "succeeded", JSON.stringify(got));
            return got.id as string;
          }
          if (Date.now() > end) throw new Error(`the run ${r.body.id} did not end`);
          await new Promise((res) => setTimeout(res, 25));
        }
      };
      const age = (runId: string, days: number) =>
        t.server.store.db
          .update(schema.runs)
          .set({ endedAt: new Date(Date.now() - days * DAY_MS) })
          .where(eq(schema.runs.id, runId));

      before(async () => {
        t = await startTestServer({ leg });
        org = (await t.call("POST", "/api/orgs", { name: "kept" })).body.id;
        const m = (await t.call("POST", "/api/machines", { org_id: org, name: "m" })).body.id;
        agent = (await t.call("POST", "/api/agents", { org_id: org, machine_id: m, name: "a" })).body.id;
        const org2 = (await t.call("POST", "/api/orgs", { name: "forever" })).body.id;
        const m2 = (await t.call("POST", "/api/machines", { org_id: org2, name: "m" })).body.id;
        other = (await t.call("POST", "/api/agents", { org_id: org2, machine_id: m2, name: "b" })).body.id;
      });
      after(async () => {
        await t?.close();
      });

      test("retention_days is checked when written", async () => {
        for (const days of [0, 1.5, -3, "7"]) {
          const r = await t.call("PUT", `/api/orgs/${org}/guardrails`, { retention_days: days });
          assert.equal(r.status, 400, JSON.stringify(r.body));
          assert.equal(r.body.error.code, "request.invalid");
          assert.match(r.body.error.message, /retention_days/);
        }
      });

      test("outputs and traces older than retention_days are deleted, and the record says so", async () => {
        const old = await run(agent, "old");
        const young = await run(agent, "young");
        const elsewhere = await run(other, "elsewhere");
        await age(old, 31);
        await age(young, 29);
        await age(elsewhere, 400);
        const set = await t.call("PUT", `/api/orgs/${org}/guardrails`, { retention_days: 30 });
        assert.equal(set.status, 200, JSON.stringify(set.body));
        assert.equal(set.body.retention_days, 30);
        assert.equal(await t.server.retention.sweep(), 1);

        const gone = (await t.call("GET", `/api/runs/${old}`)).body;
        assert.equal(gone.output, "");
        assert.equal(gone.retained, false);
        assert.ok(Date.parse(gone.output_deleted_at) > Date.now() - 60_000);
        assert.equal(gone.status, "succeeded", "the record stays");
        assert.ok(gone.receipt, "the receipt stays");
        assert.deepEqual((await t.call("GET", `/api/runs/${old}/events`)).body.items, []);

        for (const [id, word] of [
          [young, "young"],
          [elsewhere, "elsewhere"],
        ] as const) {
          const kept = (await t.call("GET", `/api/runs/${id}`)).body;
          assert.equal(kept.output, `${word}\n`);
          assert.equal(kept.retained, undefined);
          assert.ok((await t.call("GET", `/api/runs/${id}/events`)).body.items.length > 0);
        }
        // swept once: a second sweep finds nothing more
        assert.equal(await t.server.retention.sweep(), 0);
      });
    },
  );
}
