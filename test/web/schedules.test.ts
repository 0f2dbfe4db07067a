// The agent's Schedules tab in a real browser (Debian's chromium, driven by playwright-core)
// against a real `warren serve` (the built CLI, trusted-header mode, real boxes): a schedule
// made from the form, run now, paused and resumed, deleted.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { boxSkipReason } from "../box/fixture.js";
import { OWNER, startWebApp, type WebApp } from "./fixture.js";

let app: WebApp;
let base = "";
const api = (method: string, url: string, body?: object) => app.api(method, url, body);

before(async () => {
  app = await startWebApp("schedules");
  base = app.base;
});

after(async () => {
  await app?.stop();
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

    const page = await app.person(OWNER, { size: { width: 1280, height: 800 } });
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
