// The Flows pages in a real browser against a real server with real boxes: an organisation's
// flows and their instances, an instance started from the page, its page with its runs
// (linked), its agents and its workspace, and End (the workspace kept).
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { boxSkipReason } from "../box/fixture.js";
import { waitFor } from "../conversations/support.js";
import { POLICY } from "../workspaces/support.js";
import type { Page } from "playwright-core";
import { startWebApp, type WebApp } from "./fixture.js";

describe("the Flows pages", { concurrency: false, skip: boxSkipReason() ?? false }, () => {
  let app: WebApp;
  let page: Page;
  let base = "";
  /** A JSON call as the owner; anything but 2xx fails the test with the answer. */
  const json = async (method: string, url: string, body?: object): Promise<any> => {
    const r = await app.api(method, url, body);
    assert.ok(r.status < 300, `${method} ${url}: ${r.status} ${r.text}`);
    return r.body;
  };
  let orgId = "";
  let agents: string[] = [];

  before(async () => {
    app = await startWebApp("flows", undefined, (root) =>
      fs.promises.writeFile(path.join(root, "policy.yaml"), POLICY),
    );
    base = app.base;
    page = await app.person();
    orgId = (await json("POST", "/api/orgs", { name: "Mill" })).id;
    const m = await json("POST", "/api/machines", { org_id: orgId, name: "wheel" });
    agents = [];
    for (const name of ["miller", "baker"])
      agents.push(
        (
          await json("POST", "/api/agents", {
            org_id: orgId,
            machine_id: m.id,
            name,
            workspace_class: "shared_instance",
          })
        ).id,
      );
    await json("POST", "/api/flows", { org_id: orgId, name: "bread", agent_ids: agents });
  });
  after(async () => {
    await app?.stop();
  });

  test("an organisation's flows; an instance started from the page", async () => {
    await page.goto(`${base}/orgs/${orgId}`);
    await page.getByRole("link", { name: "Flows" }).click();
    await page.waitForURL(`${base}/orgs/${orgId}/flows`);
    const flow = page.getByTestId("flow");
    await flow.getByRole("heading", { name: "bread" }).waitFor();
    for (const a of agents) await flow.getByRole("link", { name: a }).waitFor();
    await flow.getByText("No instance of this flow yet.").waitFor();
    await flow.getByRole("button", { name: "Start an instance" }).click();
    await page.waitForURL(/\/flow-instances\/fli_[0-9a-z]{16}$/);
    await page.getByText("No run in this instance yet.").waitFor();
  });

  test("an instance's page: its runs linked, its agents, its workspace, End", async () => {
    const instId = new URL(page.url()).pathname.split("/").pop() ?? "";
    const runs: { id: string }[] = [];
    // one after the other: the second agent reads what the first left in the shared workspace
    for (const [n, a] of agents.entries()) {
      const run = await json("POST", `/api/flow-instances/${instId}/runs`, {
        agent_id: a,
        kind: "command",
        command: n === 0 ? "echo flour > /workspace/sack" : "cat /workspace/sack",
      });
      runs.push(run);
      const ended = await waitFor(`run ${n + 1} ended`, async () => {
        const r = await json("GET", `/api/runs/${run.id}`);
        return ["queued", "running"].includes(r.status) ? false : r;
      });
      assert.equal(ended.status, "succeeded", JSON.stringify(ended).slice(0, 600));
    }
    const inst = await json("GET", `/api/flow-instances/${instId}`);
    await page.reload();
    const table = page.getByTestId("instance-runs");
    for (const r of runs) await table.getByRole("link", { name: r.id }).waitFor();
    assert.equal(await table.locator("tbody tr").count(), 2);
    assert.equal(await page.getByTestId("workspace").innerText(), inst.workspace.host_path);
    const facts = page.getByTestId("instance");
    for (const a of agents) await facts.getByRole("link", { name: a }).waitFor();
    await app.shot(page, "flow-instance");

    await page.getByRole("button", { name: "End" }).click();
    await page.getByText("(its workspace is kept)").waitFor();
    assert.equal(await page.getByRole("button", { name: "End" }).count(), 0);
    assert.equal((await json("GET", `/api/flow-instances/${instId}`)).status, "ended");
    assert.equal(fs.readFileSync(path.join(inst.workspace.host_path, "sack"), "utf8"), "flour\n");

    // a run's link opens its page
    const second = runs[1]?.id ?? "";
    await table.getByRole("link", { name: second }).click();
    await page.waitForURL(`${base}/agents/${agents[1]}/runs/${second}`);
    await page.getByText("flour").first().waitFor();

    // the Flows page lists the instance as ended, linked
    await page.goto(`${base}/orgs/${orgId}/flows`);
    const row = page.getByTestId("instances").locator("tbody tr");
    await row.getByText("ended").waitFor();
    await row.getByRole("link", { name: instId }).click();
    await page.waitForURL(`${base}/flow-instances/${instId}`);
  });
});
