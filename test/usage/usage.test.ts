// Usage over time on a real server with real boxes, on PGlite and on PostgreSQL: assistant runs
// through the scripted Anthropic server on loopback and command runs; the organisation's
// figures (and one agent's) equal the sums of the runs' receipts, step by step and in all; bad
// spans and steps are 400 `request.invalid` naming the field (who may read them: test/access).
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { boxSkipReason } from "../box/fixture.js";
import { runAgent, scriptedAssistant } from "../support/agent-runs.js";
import { privateAllow } from "../support/bound.js";
import { dbLegs } from "../support/db.js";
import { startFakeAnthropic, type FakeModelServer } from "../support/fake-models.js";
import { runEnded } from "../conversations/support.js";
import { startTestServer, type TestServer } from "../support/server.js";
import { modelKey } from "../support/org.js";

const KEY = "sk-ant-test-5d1e8a7c3b2f";
// $1 per 1000 tokens in or out: dollars easy to see
const PRICES = JSON.stringify({ "anthropic:*": { input_per_mtok: 1000, output_per_mtok: 1000 } });
const close = (a: number, b: number) => Math.abs(a - b) < 1e-6;

for (const leg of dbLegs) {
  describe(`usage over time on ${leg.name}`, { skip: leg.skip ?? boxSkipReason() ?? false }, () => {
    let t: TestServer;
    let anth: FakeModelServer;
    let org: string;
    let machine: string;
    const agents: string[] = [];
    const runs: any[] = [];

    before(async () => {
      anth = await startFakeAnthropic();
      anth.script([
        { tool_calls: [{ name: "run_command", input: { command: "echo hi" } }] },
        { text: "Done." },
      ]);
      t = await startTestServer({
        leg,
        env: { WARREN_MODEL_PRICES: PRICES, WARREN_EGRESS_PRIVATE_ALLOW: privateAllow(anth) },
      });
      org = (await t.call("POST", "/api/orgs", { name: "counted" })).body.id;
      machine = (await t.call("POST", "/api/machines", { org_id: org, name: "m" })).body.id;
      await modelKey(t.call, org, [anth], KEY);
      for (const name of ["one", "two"]) {
        const a = await t.call("POST", "/api/agents", {
          org_id: org,
          machine_id: machine,
          name,
          ...scriptedAssistant(anth.baseUrl),
        });
        assert.equal(a.status, 201, JSON.stringify(a.body));
        agents.push(a.body.id);
      }
    });
    after(async () => {
      await t?.close();
      await anth?.close();
    });

    test("the figures are the sums of the runs' receipts, in all, per step and per agent", async () => {
      for (const [i, agent] of [agents[0]!, agents[1]!, agents[0]!].entries()) {
        const { run } = await runAgent(t, agent, `count ${i}`);
        assert.equal(run.status, "succeeded", JSON.stringify(run));
        runs.push(run);
      }
      const cmd = await t.call("POST", `/api/agents/${agents[1]}/runs`, {
        kind: "command",
        command: "i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done; head -c 300000 /dev/zero > big.bin",
      });
      assert.equal(cmd.status, 202, JSON.stringify(cmd.body));
      runs.push(await runEnded(t, cmd.body.id));
      assert.equal(runs[3].status, "succeeded", JSON.stringify(runs[3]));

      const sum = (rs: any[], k: string) => rs.reduce((s, r) => s + (r.receipt[k] ?? 0), 0);
      const since = new Date(Date.now() - 3600_000).toISOString();
      const until = new Date(Date.now() + 60_000).toISOString();
      const whole = await t.call("GET", `/api/orgs/${org}/usage?since=${since}&until=${until}&step=1m`);
      assert.equal(whole.status, 200, JSON.stringify(whole.body));
      const u = whole.body;
      assert.equal(u.series.length, 61);
      assert.equal(u.step_s, 60);
      assert.equal(u.agent_id, null);
      assert.ok(sum(runs, "tokens_in") > 0 && sum(runs, "usd") > 0 && sum(runs, "cpu_seconds") > 0);
      assert.equal(u.totals.execs, 4);
      assert.equal(u.totals.tokens_in, sum(runs, "tokens_in"));
      assert.equal(u.totals.tokens_out, sum(runs, "tokens_out"));
      assert.ok(close(u.totals.usd, sum(runs, "usd")), `${u.totals.usd} vs ${sum(runs, "usd")}`);
      assert.ok(close(u.totals.cpu_seconds, sum(runs, "cpu_seconds")));
      // every run in the step it ended in (the run's ended_at, which the server steps by)
      for (const k of ["tokens_in", "tokens_out", "usd", "cpu_seconds", "execs"]) {
        const byStep = new Map<string, number>();
        for (const r of runs) {
          const i = Math.floor((Date.parse(r.ended_at) - Date.parse(since)) / 60_000);
          const at = new Date(Date.parse(since) + i * 60_000).toISOString();
          byStep.set(at, (byStep.get(at) ?? 0) + (k === "execs" ? 1 : (r.receipt[k] ?? 0)));
        }
        for (const p of u.series) assert.ok(close(p[k], byStep.get(p.at) ?? 0), `${k} at ${p.at}: ${p[k]}`);
      }
      // the disk after the runs: the home that holds big.bin measured
      const disks = u.series.filter((p: any) => p.disk_mib !== null);
      assert.ok(disks.length > 0 && disks.every((p: any) => p.disk_mib >= 0));
      assert.ok(u.series.some((p: any) => p.execs === 0 && p.disk_mib === null));

      const one = await t.call(
        "GET",
        `/api/orgs/${org}/usage?since=${since}&until=${until}&step=1h&agent=${agents[0]}`,
      );
      assert.equal(one.status, 200, JSON.stringify(one.body));
      const mine = runs.filter((r) => r.agent_id === agents[0]);
      assert.equal(one.body.agent_id, agents[0]);
      assert.equal(one.body.totals.execs, 2);
      assert.equal(one.body.totals.tokens_in, sum(mine, "tokens_in"));
      assert.ok(close(one.body.totals.usd, sum(mine, "usd")));

      // a span before the runs counts nothing; the default span is the last day
      const before = await t.call("GET", `/api/orgs/${org}/usage?until=${since}`);
      assert.equal(before.body.totals.execs, 0);
      assert.equal(before.body.series.length, 60);
      const day = await t.call("GET", `/api/orgs/${org}/usage`);
      assert.equal(day.body.totals.execs, 4);
    });

    test("bad spans and steps are 400 request.invalid naming the field; another organisation's is 404", async () => {
      for (const [q, field] of [
        ["since=2026-12-02T10:00:00Z&until=2026-12-02T09:00:00Z", /^since: must be before until/],
        ["since=2026-12-02T10:00:00Z&until=2026-12-02T10:00:00Z", /^since/],
        ["since=yesterday", /since/],
        ["step=0", /step/],
        ["step=5w", /step/],
        ["step=1s", /^step: cuts the span into 86400 steps, more than 1000/],
        ["since=2020-01-01T00:00:00Z&step=1h", /^step: cuts the span/],
        ["agent=bob", /agent/],
        ["colour=red", /colour|unrecognized/i],
      ] as const) {
        const r = await t.call("GET", `/api/orgs/${org}/usage?${q}`);
        assert.equal(r.status, 400, `${q}: ${JSON.stringify(r.body)}`);
        assert.equal(r.body.error.code, "request.invalid");
        assert.match(r.body.error.message, field, q);
      }
      const other = await t.call("GET", `/api/orgs/org_0000000000000000/usage`);
      assert.equal(other.status, 404);
    });
  });
}
