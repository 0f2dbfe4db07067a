// Settings' machine picker in a real browser (Debian's chromium, driven by playwright-core)
// against a real `warren serve`: the owner picks the other machine, sees its reserved-disk bar
// with the agent's cap on it, moves the agent, and finds it on the other machine's page (and
// its header naming that machine). No run is asked for, so no box starts.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { startWebApp, type WebApp } from "./fixture.js";
import { newAgent } from "../support/org.js";

describe("moving an agent in the app", () => {
  let web: WebApp;
  let m1: { id: string };
  let m2: { id: string };
  let agent: { id: string };
  const api = (method: string, url: string, body?: object) => web.api(method, url, body);

  before(async () => {
    web = await startWebApp("move");
    const org = (await api("POST", "/api/orgs", { name: "Movers" })).body;
    m1 = (await api("POST", "/api/machines", { org_id: org.id, name: "first", max_workspace_mib: 4096 }))
      .body;
    // one machine with no room for the agent's cap, one with room and another agent on it
    await api("POST", "/api/machines", { org_id: org.id, name: "tiny", max_workspace_mib: 200 });
    m2 = (await api("POST", "/api/machines", { org_id: org.id, name: "roomy", max_workspace_mib: 8192 }))
      .body;
    await api("POST", "/api/agents", {
      org_id: org.id,
      machine_id: m2.id,
      name: "neighbour",
      max_workspace_mib: 2048,
    });
    agent = await newAgent(
      api,
      { org_id: org.id, machine_id: m1.id },
      { name: "traveller", max_workspace_mib: 1024 },
    );
  });
  after(async () => {
    await web?.stop();
  });

  test("pick the machine with the disk bar, move, see the agent on the other machine", async () => {
    const page = await web.person();
    await page.goto(`${web.base}/agents/${agent.id}/settings`);
    const picker = page.getByTestId("move-agent");
    const select = picker.locator('select[name="move_machine"]');
    await select.waitFor();
    const options = await select.locator("option").allTextContents();
    assert.equal(options.length, 2, `the other machines only: ${options.join(" | ")}`);
    assert.ok(!options.some((o) => o.startsWith("first")), "not the machine it lives on");

    await select.selectOption({ label: options.find((o) => o.startsWith("roomy"))! });
    // the chosen machine's bar: the other agent's 2048 MiB reserved, this agent's 1024 MiB on it
    await picker.getByTestId("move-reserved-bar").waitFor();
    await picker.getByTestId("move-disk-line").getByText(/roomy/).waitFor();
    assert.match((await picker.getByTestId("move-others-mib").textContent()) ?? "", /2,048 MiB/);
    assert.match((await picker.getByTestId("move-mine-mib").textContent()) ?? "", /1,024 MiB/);
    assert.equal(
      await page.locator('input[name="max_workspace_mib"]').count(),
      1,
      "Settings' own Max disk stays the one field of its name",
    );
    await web.shot(page, "move-picker");

    await picker.getByRole("button", { name: "Move agent" }).click();
    // moved: the picker now offers the machine it left, and the API says where it lives
    await page
      .locator('select[name="move_machine"] option', { hasText: "first" })
      .waitFor({ state: "attached" });
    const now = (await api("GET", `/api/agents/${agent.id}`)).body;
    assert.equal(now.machine_id, m2.id);
    await page.getByRole("link", { name: "roomy" }).first().waitFor();
    await web.shot(page, "move-moved");

    await page.goto(`${web.base}/machines/${m2.id}`);
    await page.getByRole("link", { name: "traveller" }).waitFor();
    await page.goto(`${web.base}/machines/${m1.id}`);
    await page.getByText("Agents on this machine").waitFor();
    assert.equal(
      await page.getByRole("link", { name: "traveller" }).count(),
      0,
      "gone from the first machine",
    );
  });

  test("a machine without room is refused with why, and the agent stays", async () => {
    const page = await web.person();
    await page.goto(`${web.base}/agents/${agent.id}/settings`);
    const picker = page.getByTestId("move-agent");
    const select = picker.locator('select[name="move_machine"]');
    await select.waitFor();
    const options = await select.locator("option").allTextContents();
    await select.selectOption({ label: options.find((o) => o.startsWith("tiny"))! });
    await picker.getByRole("button", { name: "Move agent" }).click();
    await picker.getByText(/does not fit/).waitFor();
    assert.equal((await api("GET", `/api/agents/${agent.id}`)).body.machine_id, m2.id);
  });
});
