// The evaluation gate guards every way a version takes runs, not only "make current": with the
// gate on, a canary and a run that names its version may name only a version that passed
// (409 version.gate saying why); turning the gate off is an owner's act, and every change of
// the gate is kept in the agent's gate history with who made it; an admin neither changes an
// open gate's suite nor rewrites the suite it names (an owner does, in the history), and what
// passed a suite before its rewrite no longer passes the gate. No box is started: every
// answer here is given before a run would reach one.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { schema } from "../../src/store/index.js";
import { dbLegs } from "../support/db.js";
import { asMember, orgWithAgent } from "../support/org.js";
import { startTestServer, type TestServer } from "../support/server.js";

const OWNER = "owner@example.com";
const ADMIN = "admin@example.com";

for (const leg of dbLegs)
  describe(`the gate on every way in, on ${leg.name}`, { skip: leg.skip ?? false }, () => {
    let t: TestServer;
    let org: string;
    let agent: string;
    const as = asMember(() => t);
    const owner = as(OWNER);
    const admin = as(ADMIN);

    before(async () => {
      t = await startTestServer({ leg, env: { AUTH_MODE: "trusted-header" } });
      ({ org, agent } = await orgWithAgent(owner, {
        org: "gated",
        script: "v1.json",
        members: [{ email: ADMIN, role: "admin" }],
      }));
      for (const name of ["v2.json", "v3.json"]) {
        const v = await owner("POST", `/api/agents/${agent}/versions`, {
          model: { provider: "script", name },
        });
        assert.equal(v.status, 201, JSON.stringify(v.body));
      }
      const suite = await owner("POST", `/api/agents/${agent}/evals`, {
        name: "math",
        cases: [{ input: "What is 2+2?", expect: { contains: "4" } }],
        pass_rate: 1,
      });
      assert.equal(suite.status, 201, JSON.stringify(suite.body));
      // version 3 passed the suite (as an evaluation would record it; evals.test.ts runs one)
      await t.server.store.db.insert(schema.evalRuns).values({
        id: "evr_passed3",
        orgId: org,
        agentId: agent,
        suiteId: suite.body.id,
        suiteName: "math",
        version: 3,
        status: "passed",
        passRate: 1,
        cases: [],
        startedBy: OWNER,
        endedAt: new Date(),
      });
    });
    after(async () => {
      await t?.close();
    });

    test("with the gate on, a canary or a run naming a version that never passed is 409 version.gate", async () => {
      const on = await admin("PUT", `/api/agents/${agent}/eval-gate`, { suite: "math" });
      assert.equal(on.status, 200, JSON.stringify(on.body));

      const canary = await owner("PUT", `/api/agents/${agent}/canary`, { version: 2, share: 0.999 });
      assert.equal(canary.status, 409, JSON.stringify(canary.body));
      assert.equal(canary.body.error.code, "version.gate");
      assert.match(canary.body.error.message, /version 2 has no passed evaluation by suite math/);
      assert.equal((await owner("GET", `/api/agents/${agent}/canary`)).body.canary, null);

      const run = await owner("POST", `/api/agents/${agent}/runs`, {
        kind: "agent",
        input: "hi",
        version: 2,
      });
      assert.equal(run.status, 409, JSON.stringify(run.body));
      assert.equal(run.body.error.code, "version.gate");
      assert.match(run.body.error.message, /version 2 has no passed evaluation/);
      const runs = await owner("GET", `/api/agents/${agent}/runs`);
      assert.deepEqual(runs.body.items, [], "no run was made");

      // a version that passed may take a canary's share
      const passed = await owner("PUT", `/api/agents/${agent}/canary`, { version: 3, share: 0.5 });
      assert.equal(passed.status, 200, JSON.stringify(passed.body));
      assert.equal(passed.body.canary.version, 3);
      assert.equal((await owner("PUT", `/api/agents/${agent}/canary`, {})).body.canary, null);
    });

    test("only an owner turns the gate off; each change is in the gate's history with its author", async () => {
      const refused = await admin("PUT", `/api/agents/${agent}/eval-gate`, { suite: null });
      assert.equal(refused.status, 403, JSON.stringify(refused.body));
      assert.equal(refused.body.error.code, "access.denied");
      assert.equal((await admin("GET", `/api/agents/${agent}/eval-gate`)).body.eval_gate, "math");

      const off = await owner("PUT", `/api/agents/${agent}/eval-gate`, { suite: null });
      assert.deepEqual(off.body, { agent_id: agent, eval_gate: null });
      // off, the gate guards nothing: a canary of version 2 starts
      const canary = await admin("PUT", `/api/agents/${agent}/canary`, { version: 2, share: 0.1 });
      assert.equal(canary.status, 200, JSON.stringify(canary.body));

      const view = await admin("GET", `/api/agents/${agent}/eval-gate`);
      assert.equal(view.status, 200, JSON.stringify(view.body));
      assert.equal(view.body.eval_gate, null);
      assert.deepEqual(
        view.body.history.map((h: { revision: number; eval_gate: string | null; by: string }) => [
          h.revision,
          h.eval_gate,
          h.by,
        ]),
        [
          [1, "math", ADMIN],
          [2, null, OWNER],
        ],
      );
      assert.ok(view.body.history.every((h: { at: string }) => !Number.isNaN(Date.parse(h.at))));
    });

    test("an admin cannot change an open gate's suite, nor rewrite the suite it names; an owner can, and each is in the history", async () => {
      const gate = () => owner("GET", `/api/agents/${agent}/eval-gate`);
      assert.equal((await admin("PUT", `/api/agents/${agent}/eval-gate`, { suite: "math" })).status, 200);
      const easy = await admin("POST", `/api/agents/${agent}/evals`, {
        name: "easy",
        cases: [{ input: "hi", expect: { regex: "." } }],
        pass_rate: 0,
      });
      assert.equal(easy.status, 201, JSON.stringify(easy.body));
      const historyBefore = (await gate()).body.history;

      // another suite, by either way to set it
      const swap = await admin("PUT", `/api/agents/${agent}/eval-gate`, { suite: "easy" });
      assert.equal(swap.status, 403, JSON.stringify(swap.body));
      assert.equal(swap.body.error.code, "access.denied");
      assert.match(swap.body.error.message, /only an owner changes the suite/);
      const patched = await admin("PATCH", `/api/agents/${agent}`, { eval_gate: "easy" });
      assert.equal(patched.status, 403, JSON.stringify(patched.body));
      // the gate's own suite rewritten to ask nothing
      const rewrite = await admin("POST", `/api/agents/${agent}/evals`, {
        name: "math",
        cases: [{ input: "hi", expect: { regex: "." } }],
        pass_rate: 0,
      });
      assert.equal(rewrite.status, 403, JSON.stringify(rewrite.body));
      assert.match(rewrite.body.error.message, /only an owner rewrites the suite math/);
      const suites = (await admin("GET", `/api/agents/${agent}/evals`)).body.items;
      assert.equal(suites.find((x: { name: string }) => x.name === "math").pass_rate, 1, "unchanged");
      assert.equal((await gate()).body.eval_gate, "math");
      assert.deepEqual((await gate()).body.history, historyBefore, "nothing refused is in the history");
      // a suite the gate does not name is anyone's to rewrite
      assert.equal(
        (
          await admin("POST", `/api/agents/${agent}/evals`, {
            name: "easy",
            cases: [{ input: "hi", expect: { regex: "." } }],
            pass_rate: 0,
          })
        ).status,
        201,
      );

      // the owner changes the suite, then rewrites it: both are revisions by the owner
      assert.equal((await owner("PUT", `/api/agents/${agent}/eval-gate`, { suite: "easy" })).status, 200);
      // version 2 passed "easy" as it was
      await t.server.store.db.insert(schema.evalRuns).values({
        id: "evr_passed2",
        orgId: org,
        agentId: agent,
        suiteId: easy.body.id,
        suiteName: "easy",
        version: 2,
        status: "passed",
        passRate: 1,
        cases: [],
        startedBy: ADMIN,
        endedAt: new Date(),
      });
      const before = await owner("PUT", `/api/agents/${agent}/canary`, { version: 2, share: 0.2 });
      assert.equal(before.status, 200, JSON.stringify(before.body));
      const hard = await owner("POST", `/api/agents/${agent}/evals`, {
        name: "easy",
        cases: [{ input: "What is 2+2?", expect: { equals: "4" } }],
        pass_rate: 1,
      });
      assert.equal(hard.status, 201, JSON.stringify(hard.body));
      // what passed the suite before its rewrite no longer passes the gate
      const after = await owner("PUT", `/api/agents/${agent}/canary`, { version: 2, share: 0.3 });
      assert.equal(after.status, 409, JSON.stringify(after.body));
      assert.equal(after.body.error.code, "version.gate");
      const history = (await gate()).body.history;
      assert.deepEqual(
        history
          .slice(historyBefore.length)
          .map((h: { eval_gate: string | null; by: string }) => [h.eval_gate, h.by]),
        [
          ["easy", OWNER],
          ["easy", OWNER],
        ],
      );
    });
  });
