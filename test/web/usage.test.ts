// Usage you can see, in a real browser against a real `warren serve` with real boxes: assistant
// runs through the scripted Anthropic server on loopback and a command run; the organisation's
// dashboard (machines up, runs going, approvals waiting, spend this month) and the usage charts
// of the organisation and of one agent show what the runs' receipts say.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import type { Page } from "playwright-core";
import { privateAllow } from "../support/bound.js";
import { scriptedAssistant } from "../support/agent-runs.js";
import { startFakeAnthropic, type FakeModelServer } from "../support/fake-models.js";
import { OWNER, startWebApp, type WebApp } from "./fixture.js";
import { modelKey } from "../support/org.js";

const PRICES = JSON.stringify({ "anthropic:*": { input_per_mtok: 1000, output_per_mtok: 1000 } });
const ENDED = ["succeeded", "failed", "timed_out", "cancelled", "lost"];

let app: WebApp;
let anth: FakeModelServer;

before(async () => {
  anth = await startFakeAnthropic();
  anth.script([{ tool_calls: [{ name: "run_command", input: { command: "echo hi" } }] }, { text: "Done." }]);
  app = await startWebApp("usage", {
    WARREN_MODEL_PRICES: PRICES,
    WARREN_EGRESS_PRIVATE_ALLOW: privateAllow(anth),
  });
});
after(async () => {
  await app?.stop();
  await anth?.close();
});

/** Polls until `fn` answers something other than undefined; fails past `ms` saying what it waited for. */
async function until<T>(what: string, fn: () => Promise<T | undefined>, ms = 90_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error(`waited ${ms} ms for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe("usage in the app", { concurrency: false }, () => {
  let org = "";
  const agents: string[] = [];
  const runs: any[] = [];
  let page: Page;

  test("real runs leave receipts", async () => {
    org = (await app.api("POST", "/api/orgs", { name: "spenders" })).body.id;
    const machine = (await app.api("POST", "/api/machines", { org_id: org, name: "m" })).body.id;
    await modelKey(app.api, org, [anth], "sk-ant-test-9b3c2d1e0f4a");
    for (const name of ["alpha", "beta"]) {
      const a = await app.api("POST", "/api/agents", {
        org_id: org,
        machine_id: machine,
        name,
        ...scriptedAssistant(anth.baseUrl),
      });
      assert.equal(a.status, 201, a.text);
      agents.push(a.body.id);
    }
    const started = [
      await app.api("POST", `/api/agents/${agents[0]}/runs`, { kind: "agent", input: "one" }),
      await app.api("POST", `/api/agents/${agents[1]}/runs`, { kind: "agent", input: "two" }),
      await app.api("POST", `/api/agents/${agents[0]}/runs`, {
        kind: "command",
        command: "head -c 200000 /dev/urandom | sha256sum",
      }),
    ];
    for (const r of started) {
      assert.equal(r.status, 202, r.text);
      const run = await until(`run ${r.body.id} to end`, async () => {
        const x = (await app.api("GET", `/api/runs/${r.body.id}`)).body;
        return ENDED.includes(x.status) ? x : undefined;
      });
      assert.equal(run.status, "succeeded", JSON.stringify(run));
      runs.push(run);
    }
    assert.ok(runs.every((r) => r.receipt));
  });

  const sum = (rs: any[], k: string) => rs.reduce((s, r) => s + (r.receipt[k] ?? 0), 0);

  test("the organisation's page shows the dashboard: machines up, runs going, approvals waiting, spend", async () => {
    page = await app.person(OWNER, { size: { width: 1280, height: 1000 } });
    await page.goto(`${app.base}/orgs/${org}`);
    const dash = page.getByTestId("dashboard");
    await dash.waitFor();
    const value = (id: string) => dash.getByTestId(`value-${id}`);
    await until("the figures", async () => ((await value("spend").textContent()) !== "…" ? true : undefined));
    const machines = (await app.api("GET", `/api/machines?org_id=${org}`)).body.items;
    const up = machines.filter((m: any) => m.state === "running").length;
    assert.equal(await value("machines").textContent(), String(up));
    assert.equal(await value("runs").textContent(), "0");
    assert.equal(await value("approvals").textContent(), "0");
    const usd = sum(runs, "usd");
    assert.ok(usd > 0);
    assert.equal(await value("spend").textContent(), `$${usd.toFixed(usd < 0.01 ? 4 : 2)}`);
    const tokens = sum(runs, "tokens_in") + sum(runs, "tokens_out");
    assert.match((await dash.getByTestId("tile-spend").textContent()) ?? "", new RegExp(`${tokens} tokens`));
    await app.shot(page, "usage-01-dashboard");
  });

  test("the organisation's usage page draws the runs' receipts as charts", async () => {
    await page.getByRole("link", { name: "Usage", exact: true }).click();
    await page.getByRole("heading", { name: "Usage" }).waitFor();
    const charts = page.getByTestId("usage");
    const total = async (id: string) =>
      Number(await charts.getByTestId(`chart-${id}`).getAttribute("data-total"));
    await charts.getByTestId("chart-tokens").waitFor();
    assert.equal(await total("tokens"), sum(runs, "tokens_in") + sum(runs, "tokens_out"));
    assert.ok(Math.abs((await total("usd")) - sum(runs, "usd")) < 1e-6);
    assert.ok(Math.abs((await total("cpu")) - sum(runs, "cpu_seconds")) < 1e-6);
    assert.equal(await total("execs"), 3);
    // bars drawn: the runs' step(s), each of a height above zero, in an SVG of its own
    const bars = charts.getByTestId("chart-execs").getByTestId("bar");
    assert.ok((await bars.count()) >= 1);
    const heights = await bars.evaluateAll((els) => els.map((e) => Number(e.getAttribute("height"))));
    assert.ok(heights.every((h) => h > 0));
    assert.ok((await charts.getByTestId("chart-disk").getByTestId("point").count()) >= 1);
    await app.shot(page, "usage-02-org-day");
    // the last hour and the last 30 days count the same runs
    for (const span of ["Last hour", "Last 30 days"]) {
      await charts.getByRole("button", { name: span }).click();
      await until(`${span} drawn`, async () =>
        (await charts.getByRole("button", { name: span }).getAttribute("aria-pressed")) === "true" &&
        (await charts.getByTestId("chart-execs").count()) === 1 &&
        (await total("execs")) === 3
          ? true
          : undefined,
      );
    }
    await app.shot(page, "usage-03-org-month");
  });

  test("an agent's usage tab shows only its runs", async () => {
    await page.goto(`${app.base}/agents/${agents[0]}/usage`);
    const charts = page.getByTestId("usage");
    await charts.getByTestId("chart-execs").waitFor();
    const mine = runs.filter((r) => r.agent_id === agents[0]);
    assert.equal(Number(await charts.getByTestId("chart-execs").getAttribute("data-total")), mine.length);
    assert.equal(
      Number(await charts.getByTestId("chart-tokens").getAttribute("data-total")),
      sum(mine, "tokens_in") + sum(mine, "tokens_out"),
    );
    await app.shot(page, "usage-04-agent");
  });
});
