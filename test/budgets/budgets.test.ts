// An organisation's budgets on a real server, on PGlite and on PostgreSQL: owners and admins
// write limits of dollars and tokens per day and per month, of the organisation and per agent;
// the model gateway reserves each call's maximum in the database before sending it, so two
// runs started at once against a budget that holds one call cannot pass it together: exactly
// one call reaches the model, the other run is refused with a `budget` event and stops.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { boxSkipReason } from "../box/fixture.js";
import { eventsOfType, TERMINAL_STATUSES } from "../support/agent-runs.js";
import { dbLegs } from "../support/db.js";
import { startHeldModel, type HeldModel } from "../support/held-model.js";
import { waitFor } from "../conversations/support.js";
import { startTestServer, type TestServer } from "../support/server.js";
import { asMember, makeAgent } from "../support/org.js";

const OWNER = "owner@example.com";
const EDITOR = "editor@example.com";

for (const leg of dbLegs) {
  describe(`organisation budgets on ${leg.name}`, { skip: leg.skip ?? boxSkipReason() ?? false }, () => {
    let t: TestServer;
    let held: HeldModel;
    let org: string;
    let machine: string;
    let n = 0;
    const as = asMember(() => t);
    const owner = as(OWNER);

    const agentWith = async (model: Record<string, unknown>) => {
      const r = await makeAgent(owner, { org_id: org, machine_id: machine }, { name: `a${++n}`, model });
      return r.id as string;
    };
    const start = async (agentId: string) => {
      const r = await owner("POST", `/api/agents/${agentId}/runs`, { kind: "agent", input: "tea?" });
      assert.equal(r.status, 202, JSON.stringify(r.body));
      return r.body.id as string;
    };
    const runOf = async (id: string) => (await owner("GET", `/api/runs/${id}`)).body;
    const ended = (id: string) =>
      waitFor(`the run ${id} to end`, async () => {
        const run = await runOf(id);
        return TERMINAL_STATUSES.includes(run.status) ? run : undefined;
      });
    const eventsOf = async (id: string) => (await owner("GET", `/api/runs/${id}/events`)).body.items;

    before(async () => {
      held = await startHeldModel("Tea is ", "served.");
      t = await startTestServer({
        leg,
        env: { AUTH_MODE: "trusted-header", WARREN_EGRESS_PRIVATE_ALLOW: `127.0.0.1:${held.port}` },
      });
      org = (await owner("POST", "/api/orgs", { name: "budgets" })).body.id;
      machine = (await owner("POST", "/api/machines", { org_id: org, name: "m" })).body.id;
      // an editor holds an area (area.required)
      assert.equal((await owner("PUT", `/api/orgs/${org}/areas/work`, { folders: ["work"] })).status, 200);
      const r = await owner("PUT", `/api/orgs/${org}/members`, {
        email: EDITOR,
        role: "writer",
        areas: ["work"],
      });
      assert.ok(r.status === 200 || r.status === 201, JSON.stringify(r.body));
    });
    after(async () => {
      held?.release();
      await t?.close();
      await held?.close();
    });

    test("owners write the limits; bad ones are refused with the field; an editor may only read", async () => {
      const agent = await agentWith({ provider: "script", name: "turns.json" });
      const put = (body: unknown, who = owner) => who("PUT", `/api/orgs/${org}/budgets`, body);
      const denied = await put({ items: [{ period: "day", max_usd: 5 }] }, as(EDITOR));
      assert.equal(denied.status, 403);
      assert.equal(denied.body.error.code, "access.denied");
      for (const [body, field] of [
        [{ items: [{ period: "day" }] }, /max_usd, max_tokens or both/],
        [{ items: [{ period: "week", max_usd: 1 }] }, /period/],
        [{ items: [{ period: "day", max_usd: -1 }] }, /max_usd/],
        [
          {
            items: [
              { period: "day", max_usd: 1 },
              { period: "day", max_tokens: 10 },
            ],
          },
          /items\.1: a second day limit of the organisation/,
        ],
        [{ items: [{ agent_id: "agt_nope", period: "day", max_usd: 1 }] }, /agt_nope is not an agent/],
      ] as const) {
        const r = await put(body);
        assert.equal(r.status, 400, JSON.stringify(r.body));
        assert.equal(r.body.error.code, "request.invalid");
        assert.match(r.body.error.message, field);
      }
      const ok = await put({
        items: [
          { period: "month", max_usd: 100, max_tokens: 1_000_000 },
          { agent_id: agent, period: "day", max_tokens: 5000 },
        ],
      });
      assert.equal(ok.status, 200, JSON.stringify(ok.body));
      const read = await as(EDITOR)("GET", `/api/orgs/${org}/budgets`);
      assert.equal(read.status, 200);
      assert.deepEqual(
        read.body.items.map((i: any) => [
          i.agent_id,
          i.period,
          i.max_usd,
          i.max_tokens,
          i.used_tokens,
          i.updated_by,
        ]),
        [
          [null, "month", 100, 1_000_000, 0, OWNER],
          [agent, "day", null, 5000, 0, OWNER],
        ],
      );
      assert.match(read.body.items[0].period_start, /^\d{4}-\d{2}$/);
      assert.match(read.body.items[1].period_start, /^\d{4}-\d{2}-\d{2}$/);
      // an agent's daily limit that cannot hold one call's maximum: its run is refused and stops
      const file = await t.inject({
        method: "PUT",
        url: `/api/agents/${agent}/files/turns.json`,
        payload: JSON.stringify({ turns: [{ text: "never" }] }),
        headers: { "content-type": "application/octet-stream", "x-forwarded-email": OWNER },
      });
      assert.equal(file.statusCode, 204, file.body);
      const run = await ended(await start(agent));
      assert.equal(run.status, "failed");
      assert.match(
        run.status_reason,
        /the agent's daily token budget in its organisation was reached .*; stopped/,
      );
      const [ev] = eventsOfType(await eventsOf(run.id), "budget");
      assert.equal(ev.scope, "agent");
      assert.equal(ev.period, "day");
      assert.equal(ev.refused, true);
      assert.equal(ev.max, 5000);
      assert.equal((await put({ items: [] })).status, 200);
      assert.deepEqual((await owner("GET", `/api/orgs/${org}/budgets`)).body.items, []);
    });

    test("the ledger: 20 reservations at once against room for 5 of them: exactly 5 are held", async () => {
      const agent = await agentWith({ provider: "script", name: "turns.json" });
      const other = await agentWith({ provider: "script", name: "turns.json" });
      const put = await owner("PUT", `/api/orgs/${org}/budgets`, {
        items: [
          { period: "month", max_tokens: 5000 },
          { agent_id: agent, period: "day", max_usd: 1 },
        ],
      });
      assert.equal(put.status, 200, JSON.stringify(put.body));
      const ledger = t.server.budgets;
      const tries = await Promise.all(
        Array.from({ length: 20 }, (_, i) =>
          ledger.reserve({ orgId: org, agentId: i % 2 ? agent : other }, { tokens: 1000, usd: 0.01 }),
        ),
      );
      const held = tries.filter((r) => r.ok);
      assert.equal(held.length, 5);
      for (const r of tries)
        if (!r.ok) {
          assert.equal(r.refusal.scope, "organisation");
          assert.equal(r.refusal.period, "month");
          assert.equal(r.refusal.used + r.refusal.reserved, 5000);
        }
      const mid = (await owner("GET", `/api/orgs/${org}/budgets`)).body.items;
      assert.equal(mid.find((i: any) => i.agent_id === null).reserved_tokens, 5000);
      for (const r of held) if (r.ok) await r.release();
      // settled: nothing held; a call's usage counts in the organisation's and the agent's periods
      await ledger.spend({ orgId: org, agentId: agent }, { tokens: 700, usd: 0.25 });
      const end = (await owner("GET", `/api/orgs/${org}/budgets`)).body.items;
      const orgMonth = end.find((i: any) => i.agent_id === null);
      const agentDay = end.find((i: any) => i.agent_id === agent);
      assert.equal(orgMonth.reserved_tokens, 0);
      assert.equal(agentDay.reserved_usd, 0);
      assert.equal(orgMonth.used_tokens, 700);
      assert.equal(agentDay.used_usd, 0.25);
      // the agent's dollars: 0.25 used of 1, so a call that may cost 0.8 is refused, by the agent's limit
      const over = await ledger.reserve({ orgId: org, agentId: agent }, { tokens: 10, usd: 0.8 });
      assert.equal(over.ok, false);
      if (!over.ok)
        assert.deepEqual([over.refusal.scope, over.refusal.limit, over.refusal.used], ["agent", "usd", 0.25]);
      assert.equal((await owner("PUT", `/api/orgs/${org}/budgets`, { items: [] })).status, 200);
    });

    test("two runs started at once against a budget that holds one call: exactly one call is sent", async () => {
      const model = { provider: "openai-compatible", name: "held", base_url: held.baseUrl };
      const [a, b] = [await agentWith(model), await agentWith(model)];
      // one call reserves its input's estimate and 16384 tokens out: one fits, two do not
      const put = await owner("PUT", `/api/orgs/${org}/budgets`, {
        items: [{ period: "day", max_tokens: 25_000 }],
      });
      assert.equal(put.status, 200, JSON.stringify(put.body));
      const before = put.body.items[0].used_tokens as number;
      const ids = await Promise.all([start(a), start(b)]);
      // the refused one ends while the other's call is held by the model
      const refused = await waitFor("one run to be refused", async () => {
        for (const id of ids) {
          const run = await runOf(id);
          if (TERMINAL_STATUSES.includes(run.status)) return run;
        }
        return undefined;
      });
      const other = ids.find((id) => id !== refused.id)!;
      assert.equal(refused.status, "failed", JSON.stringify(refused));
      assert.match(
        refused.status_reason,
        /the organisation's daily token budget was reached .* held.*; stopped/,
      );
      const [ev] = eventsOfType(await eventsOf(refused.id), "budget");
      assert.equal(ev.scope, "organisation");
      assert.equal(ev.refused, true);
      assert.equal(ev.limit, "tokens");
      assert.ok(ev.reserved > 0, "the other run's call holds its reservation");
      assert.equal(eventsOfType(await eventsOf(refused.id), "model_call").length, 0, "never sent");
      const mid = (await owner("GET", `/api/orgs/${org}/budgets`)).body.items[0];
      assert.ok(mid.reserved_tokens > 0 && mid.reserved_tokens <= 25_000);
      assert.notEqual((await runOf(other)).status, "failed");
      held.release();
      const done = await ended(other);
      assert.equal(done.status, "succeeded", JSON.stringify(done));
      assert.equal(done.output, "Tea is served.");
      // settled: the call's real usage (10 in, 8 out) counted, nothing held
      const after = (await owner("GET", `/api/orgs/${org}/budgets`)).body.items[0];
      assert.equal(after.used_tokens - before, 18);
      assert.equal(after.reserved_tokens, 0);
    });
  });
}
