// Evaluation suites and the gate on a real server: an evaluation runs a version on every case
// as real runs (a scripted model, no key); with the agent's gate on, a version without a
// passed evaluation cannot become current (409 version.gate), one that passed can.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { boxSkipReason } from "../box/fixture.js";
import { putHomeFile } from "../support/agent-runs.js";
import { runWarren } from "../support/cli.js";
import { orgWithAgent } from "../support/org.js";
import { startTestServer, type TestServer } from "../support/server.js";

describe("evaluations and the gate", { skip: boxSkipReason() ?? false }, () => {
  let t: TestServer;
  let agent: { id: string };

  const until = async <T>(what: string, fn: () => Promise<T | undefined>): Promise<T> => {
    const end = Date.now() + 90_000;
    for (;;) {
      const v = await fn();
      if (v !== undefined) return v;
      if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  };
  const answers = (file: string, text: string) =>
    putHomeFile(t, agent.id, file, JSON.stringify({ turns: [{ text }] }));
  const evaluate = async (version: number) => {
    const r = await t.call("POST", `/api/agents/${agent.id}/versions/${version}/evaluate`, { suite: "math" });
    assert.equal(r.status, 202, JSON.stringify(r.body));
    return until("the evaluation to end", async () => {
      const e = await t.call("GET", `/api/eval-runs/${r.body.eval_run_id}`);
      assert.equal(e.status, 200, JSON.stringify(e.body));
      return e.body.status === "running" ? undefined : e.body;
    });
  };

  before(async () => {
    t = await startTestServer({ listen: true });
    ({ agentBody: agent } = await orgWithAgent((method, url, body) => t.call(method, url, body), {
      org: "evals",
      name: "calc",
      script: "v1.json",
    }));
    await answers("v1.json", "The answer is 4.");
    await answers("v2.json", "I think it is five.");
    await answers("v3.json", "The answer is 4, surely.");
  });
  after(async () => {
    await t?.close();
  });

  test("a gate refuses a version without a passed evaluation, then allows one that passed", async () => {
    const suite = await t.call("POST", `/api/agents/${agent.id}/evals`, {
      name: "math",
      cases: [
        { input: "What is 2+2?", expect: { contains: "4" } },
        { input: "And twice 2?", expect: { regex: "answer is \\d" } },
      ],
      pass_rate: 1,
    });
    assert.equal(suite.status, 201, JSON.stringify(suite.body));
    const bad = await t.call("POST", `/api/agents/${agent.id}/evals`, {
      name: "x",
      cases: [{ input: "a", expect: {} }],
      pass_rate: 1,
    });
    assert.equal(bad.status, 400);
    const gate = await t.call("PATCH", `/api/agents/${agent.id}`, { eval_gate: "math" });
    assert.equal(gate.status, 200, JSON.stringify(gate.body));

    const v2 = await t.call("POST", `/api/agents/${agent.id}/versions`, {
      model: { provider: "script", name: "v2.json" },
    });
    assert.equal(v2.body.version, 2);
    const refused = await t.call("PUT", `/api/agents/${agent.id}/current`, { version: 2 });
    assert.equal(refused.status, 409);
    assert.equal(refused.body.error.code, "version.gate");

    const failed = await evaluate(2);
    assert.equal(failed.status, "failed");
    assert.equal(failed.passed, false);
    assert.equal(failed.pass_rate, 0);
    assert.equal(failed.cases.length, 2);
    assert.match(failed.cases[0].reasons.join(" "), /does not contain "4"/);
    const run = (await t.call("GET", `/api/runs/${failed.cases[0].run_id}`)).body;
    assert.equal(run.version, 2, "each case is a real run of the version evaluated");
    assert.equal(run.output, "I think it is five.");
    assert.equal((await t.call("PUT", `/api/agents/${agent.id}/current`, { version: 2 })).status, 409);
    // with the gate on, a change cannot skip it by a PATCH either
    const patch = await t.call("PATCH", `/api/agents/${agent.id}`, { instructions: "be quick" });
    assert.equal(patch.status, 409);
    assert.equal(patch.body.error.code, "version.gate");

    const v3 = await t.call("POST", `/api/agents/${agent.id}/versions`, {
      model: { provider: "script", name: "v3.json" },
    });
    const passed = await evaluate(v3.body.version);
    assert.equal(passed.status, "passed", JSON.stringify(passed));
    assert.equal(passed.passed, true);
    assert.equal(passed.pass_rate, 1);
    const promoted = await t.call("PUT", `/api/agents/${agent.id}/current`, { version: v3.body.version });
    assert.equal(promoted.status, 200, JSON.stringify(promoted.body));
    assert.equal((await t.call("GET", `/api/agents/${agent.id}`)).body.spec_version, 3);

    const off = await t.call("PUT", `/api/agents/${agent.id}/eval-gate`, { suite: null });
    assert.deepEqual(off.body, { agent_id: agent.id, eval_gate: null });
    assert.equal((await t.call("PUT", `/api/agents/${agent.id}/current`, { version: 2 })).status, 200);
  });

  test("`warren evals run AGENT --version N` exits non-zero when the version fails, zero when it passes", async () => {
    const warren = async (argv: string[]) => {
      const r = await runWarren(argv, { url: t.url! });
      return { code: r.code, out: r.output };
    };
    const failing = await warren(["evals", "run", agent.id, "--version", "2"]);
    assert.equal(failing.code, 1, failing.out);
    assert.match(failing.out, /version 2 by math: failed/);
    const passing = await warren(["evals", "run", agent.id, "--version", "3", "--suite", "math"]);
    assert.equal(passing.code, 0, passing.out);
    assert.match(passing.out, /version 3 by math: passed/);
  });
});
