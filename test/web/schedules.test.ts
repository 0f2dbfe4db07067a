// The agent's Schedules tab in a real browser (Debian's chromium, driven by playwright-core)
// against a real `warren serve` (the built CLI, trusted-header mode, real boxes): a schedule
// made from the form, run now, paused and resumed, deleted.
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { after, before, test } from "node:test";
import { fileURLToPath } from "node:url";
import { chromium, type BrowserContext } from "playwright-core";
import { boxSkipReason } from "../box/fixture.js";
import { builtCli, startServe, type Served } from "../support/serve.js";

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const CHROMIUM = "/usr/bin/chromium";
const OWNER = "owner@example.com";

let serve: Served | undefined;
let base = "";
let stateRoot = "";
let profile = "";
let ctx: BrowserContext | undefined;

async function api(method: string, url: string, body?: object): Promise<any> {
  const r = await fetch(`${base}${url}`, {
    method,
    headers: { "x-forwarded-email": OWNER, ...(body ? { "content-type": "application/json" } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  const text = await r.text();
  return { status: r.status, body: text ? JSON.parse(text) : undefined };
}

before(async () => {
  if (boxSkipReason()) return;
  assert.ok(existsSync(builtCli), "run `npm run build` before the browser tests");
  assert.ok(existsSync(path.join(repo, "dist/web/index.html")), "the app is not built: run `npm run build`");
  assert.ok(existsSync(CHROMIUM), "chromium is missing: scripts/setup.sh installs it");
  stateRoot = await mkdtemp(path.join(os.tmpdir(), "warren-web-sched-"));
  serve = await startServe({ stateRoot });
  base = serve.base;
});

after(async () => {
  await ctx?.close().catch(() => {});
  if (base) {
    const ms = await api("GET", "/api/machines").catch(() => undefined);
    for (const m of ms?.body?.items ?? []) await api("POST", `/api/machines/${m.id}/stop`).catch(() => {});
  }
  await serve?.stop();
  for (const d of [profile, stateRoot]) if (d) await rm(d, { recursive: true, force: true, maxRetries: 3 });
});

test(
  "a schedule from the agent's Schedules tab: made, run now, paused, resumed, deleted",
  { skip: boxSkipReason() ?? false },
  async () => {
    const org = await api("POST", "/api/orgs", { name: "Clock" });
    const machine = await api("POST", "/api/machines", { org_id: org.body.id, name: "tower" });
    const agent = await api("POST", "/api/agents", {
      org_id: org.body.id,
      machine_id: machine.body.id,
      name: "bell",
    });
    assert.equal(agent.status, 201, JSON.stringify(agent.body));
    const agentId = agent.body.id as string;

    profile = await mkdtemp(path.join(os.tmpdir(), "warren-web-profile-"));
    ctx = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM,
      headless: true,
      args: [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        "--disable-background-networking",
      ],
      viewport: { width: 1280, height: 800 },
      extraHTTPHeaders: { "x-forwarded-email": OWNER },
    });
    const page = ctx.pages()[0] ?? (await ctx.newPage());
    await page.goto(`${base}/agents/${agentId}/schedules`);
    await page.getByText(/No schedules\./).waitFor();
    const form = page.getByRole("form", { name: "new schedule" });
    await form.locator('select[name="schedule_mode"]').selectOption("every");
    await form.locator('input[name="schedule_every"]').fill("3600");
    await form.locator('input[name="schedule_command"]').fill("echo dong");
    await form.getByRole("button", { name: "Schedule" }).click();
    const table = page.getByTestId("schedules");
    await table.getByText("every 3600 s").waitFor();
    await table.getByText("echo dong").waitFor();
    const listed = (await api("GET", `/api/agents/${agentId}/schedules`)).body.items;
    assert.equal(listed.length, 1);
    assert.equal(listed[0].every_s, 3600);
    assert.equal(listed[0].kind, "command");
    assert.equal(listed[0].command, "echo dong");

    await table.getByRole("button", { name: "Run now" }).click();
    const started = page.getByRole("status");
    await started.getByRole("link").waitFor();
    const runId = (await started.getByRole("link").innerText()).trim();
    const deadline = Date.now() + 30_000;
    let run: any;
    do {
      run = (await api("GET", `/api/runs/${runId}`)).body;
      if (run.status === "succeeded" || run.status === "failed") break;
      await new Promise((r) => setTimeout(r, 50));
    } while (Date.now() < deadline);
    assert.equal(run.status, "succeeded", JSON.stringify(run));
    assert.equal(run.output, "dong\n");
    assert.equal(run.schedule_id, listed[0].id);

    await table.getByRole("button", { name: "Pause" }).click();
    await table.getByRole("button", { name: "Resume" }).waitFor();
    assert.equal((await api("GET", `/api/schedules/${listed[0].id}`)).body.paused, true);
    await table.getByRole("button", { name: "Resume" }).click();
    await table.getByRole("button", { name: "Pause" }).waitFor();
    await table.getByRole("button", { name: "Delete" }).click();
    await page.getByText(/No schedules\./).waitFor();
    assert.equal((await api("GET", `/api/schedules/${listed[0].id}`)).status, 404);
  },
);
