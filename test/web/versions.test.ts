// Versions and approvals in a real browser (Debian's chromium, driven by playwright-core)
// against a real `warren serve` (the built CLI, trusted-header mode, real boxes, the scripted
// model): the agent's Versions tab (each version's runs, failures and cost, a version read
// whole, a diff of two, a canary started and ended, the gate's 409 said, then a promotion), and
// waiting approvals on the organisation's page (denied with a message: the tool never ran) and
// on a run's page (a stale decision's 409 said); a conversation the canary took says so.
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { bucketOf } from "../../src/versions/service.js";
import { boxSkipReason } from "../box/fixture.js";
import { waitFor } from "../conversations/support.js";
import { OWNER, startWebApp, type WebApp } from "./fixture.js";
import { builtins, makeAgent, orgAndMachine } from "../support/org.js";

const POLICY = `@id("writes") @approval("required") permit(principal, action, resource == Tool::"write_file");`;

describe("versions and approvals in the app", { skip: boxSkipReason() ?? false }, () => {
  let web: WebApp;
  let org: { id: string };
  let machine: { id: string };

  const api = (method: string, url: string, body?: object) => web.api(method, url, body);
  const ended = (runId: string) => web.ended(runId);
  const putFile = (agentId: string, p: string, data: string) => web.putFile(agentId, p, data);

  before(async () => {
    web = await startWebApp("versions");
    ({ org, machine } = await orgAndMachine(api, "Governed"));
  });
  after(async () => {
    await web?.stop();
  });

  test("the Versions tab: stats side by side, a version read whole, a diff, a canary, the gate's 409, a promotion", async () => {
    const made = await api("POST", "/api/agents", {
      org_id: org.id,
      machine_id: machine.id,
      name: "versioned",
      instructions: "first words",
    });
    assert.equal(made.status, 201, JSON.stringify(made.body));
    const agentId = made.body.id as string;
    assert.equal(made.body.spec_version, 1);
    const v2 = await api("POST", `/api/agents/${agentId}/versions`, {
      instructions: "second words",
      sandbox_policy: { network: { allow: ["example.com:443"] } },
    });
    assert.equal(v2.status, 201, JSON.stringify(v2.body));
    // one run of each version by number: version 2's fails
    for (const [version, command] of [
      [1, "true"],
      [2, "false"],
    ] as const) {
      const r = await api("POST", `/api/agents/${agentId}/runs`, { kind: "command", command, version });
      assert.equal(r.status, 202, JSON.stringify(r.body));
      await ended(r.body.id);
    }

    const page = await web.person(OWNER);
    await page.goto(`${web.base}/agents/${agentId}/versions`);
    const table = page.getByTestId("versions");
    const row = (n: number) => table.locator(`tr[data-version="${n}"]`);
    await row(2).waitFor();
    const cells = async (n: number) => (await row(n).locator("td").allInnerTexts()).map((s) => s.trim());
    const one = await cells(1);
    assert.deepEqual([one[0], one[2], one[3], one[5], one[6]], ["1", OWNER, "current", "1", "0"]);
    const two = await cells(2);
    assert.deepEqual([two[0], two[2], two[3], two[5], two[6]], ["2", OWNER, "", "1", "1"]);
    assert.match(two[7] ?? "", /^\$\d+\.\d{4}$/);

    // a version read whole, sandbox policy included
    await row(2).getByRole("button", { name: "View" }).click();
    const spec = page.getByTestId("version-spec");
    await spec.getByText(/second words/).waitFor();
    assert.match(await spec.innerText(), /example\.com:443/);
    // the diff of versions 1 and 2 (the defaults: the last two)
    const diff = page.getByTestId("version-diff");
    await diff.locator(".d-add", { hasText: "second words" }).waitFor();
    await diff.locator(".d-del", { hasText: "first words" }).waitFor();
    await diff.locator(".d-add", { hasText: "example.com:443" }).waitFor();

    // a canary of version 2 at 30%
    const canary = page.getByRole("form", { name: "canary" });
    await canary.locator('select[name="canary_version"]').selectOption("2");
    await canary.locator('input[name="canary_share"]').fill("0.3");
    await canary.getByRole("button", { name: "Start canary" }).click();
    await page
      .getByTestId("canary-status")
      .getByText(/version 2 takes 30%/)
      .waitFor();
    await row(2).locator("td", { hasText: "30%" }).waitFor();
    const set = (await api("GET", `/api/agents/${agentId}/canary`)).body;
    assert.equal(set.canary.version, 2);
    assert.equal(set.canary.share, 0.3);
    await web.shot(page, "versions-canary");

    // the gate: version 2 has no passed evaluation, so Make current is refused and says why
    const suite = await api("POST", `/api/agents/${agentId}/evals`, {
      name: "smoke",
      cases: [{ input: "hi", expect: { contains: "hello" } }],
      pass_rate: 1,
    });
    assert.equal(suite.status, 201, JSON.stringify(suite.body));
    assert.equal((await api("PUT", `/api/agents/${agentId}/eval-gate`, { suite: "smoke" })).status, 200);
    await row(2).getByRole("button", { name: "Make current" }).click();
    const refused = page.getByTestId("promote-error");
    await refused.getByText("version.gate").waitFor();
    await refused.getByText(/evaluation gate is on/).waitFor();
    assert.equal((await api("GET", `/api/agents/${agentId}`)).body.spec_version, 1);
    await web.shot(page, "versions-gate");

    // the gate off, the canary ended from the page, then version 2 made current
    assert.equal((await api("PUT", `/api/agents/${agentId}/eval-gate`, { suite: null })).status, 200);
    await canary.getByRole("button", { name: "End canary" }).click();
    await page
      .getByTestId("canary-status")
      .getByText(/^No canary/)
      .waitFor();
    assert.equal((await api("GET", `/api/agents/${agentId}/canary`)).body.canary, null);
    await row(2).getByRole("button", { name: "Make current" }).click();
    await row(2).locator("td", { hasText: "current" }).waitFor();
    await row(1).getByRole("button", { name: "Make current" }).waitFor();
    assert.equal((await api("GET", `/api/agents/${agentId}`)).body.spec_version, 2);
  });

  test("approvals: denied with a message from the organisation's page; a stale decision on a run's page says 409", async () => {
    const made = await makeAgent(
      api,
      { org, machine },
      { name: "careful", tools: builtins("write_file"), tool_policy: POLICY },
    );
    const agentId = made.id as string;
    await putFile(
      agentId,
      "turns.json",
      JSON.stringify([
        { tool_calls: [{ name: "write_file", input: { path: "out.txt", content: "from the app" } }] },
        { text: "Done." },
      ]),
    );
    const start = async () => {
      const r = await api("POST", `/api/agents/${agentId}/runs`, { kind: "agent", input: "go" });
      assert.equal(r.status, 202, JSON.stringify(r.body));
      const approval = await waitFor("the run to wait for an approval", async () => {
        const items = (await api("GET", `/api/runs/${r.body.id}/approvals`)).body.items;
        return items.find((a: any) => a.status === "waiting");
      });
      return { runId: r.body.id as string, approval };
    };

    // the organisation's page: the waiting call whole, denied with a message
    const first = await start();
    const page = await web.person(OWNER);
    await page.goto(`${web.base}/orgs/${org.id}`);
    const card = page.getByRole("article", { name: `approval ${first.approval.id}` });
    await card.waitFor();
    assert.match(await card.getByRole("heading").innerText(), /write_file/);
    assert.deepEqual(JSON.parse(await card.getByTestId("arguments").innerText()), {
      path: "out.txt",
      content: "from the app",
    });
    assert.match(await card.getByTestId("arguments").innerText(), /\n {2}"content": "from the app"/);
    assert.equal(await card.getByTestId("policy-version").innerText(), "1");
    assert.equal(await card.getByTestId("sha256").innerText(), first.approval.args_sha256);
    await web.shot(page, "approvals-org");
    await card.locator('input[name="message"]').fill("not on a Friday");
    await card.getByRole("button", { name: "Deny" }).click();
    await card.waitFor({ state: "detached" });
    await page.getByText("No tool call waits for a decision.").waitFor();
    const denied = (await api("GET", `/api/runs/${first.runId}/approvals`)).body.items[0];
    assert.equal(denied.status, "denied");
    assert.equal(denied.message, "not on a Friday");
    assert.equal(denied.decided_by, OWNER);
    assert.equal(denied.args_sha256, first.approval.args_sha256);
    assert.equal((await ended(first.runId)).status, "succeeded");
    const written = await readFile(
      path.join(web.stateRoot, "workspaces", machine.id, agentId, "out.txt"),
      "utf8",
    ).catch(() => null);
    assert.equal(written, null, "a denied call never runs the tool");

    // a run's page: the run waits; someone else decides first, so this page's decision is stale
    const second = await start();
    await page.goto(`${web.base}/agents/${agentId}/runs/${second.runId}`);
    await page
      .getByTestId("run-status")
      .getByText(/^waiting/)
      .waitFor();
    const onRun = page.getByRole("article", { name: `approval ${second.approval.id}` });
    await onRun.getByRole("button", { name: "Allow" }).waitFor();
    // the page keeps showing the call as it was when it was read (a person's page open a while)
    const snapshot = (await api("GET", `/api/runs/${second.runId}/approvals`)).body;
    await page.route(`**/api/runs/${second.runId}/approvals`, (route) => route.fulfill({ json: snapshot }));
    const other = await api("POST", `/api/approvals/${second.approval.id}`, {
      decision: "deny",
      args_sha256: second.approval.args_sha256,
      message: "decided elsewhere",
    });
    assert.equal(other.status, 200, JSON.stringify(other.body));
    await onRun.getByRole("button", { name: "Allow" }).click();
    const stale = page.getByTestId("stale");
    await stale.getByText("approval.stale").waitFor();
    await stale.getByText(/no longer the one waiting/).waitFor();
    await web.shot(page, "approvals-stale");
    await page.unroute(`**/api/runs/${second.runId}/approvals`);
    // read again: the call shows the decision that stood
    await page.reload();
    const decided = page.getByRole("article", { name: `approval ${second.approval.id}` });
    await decided.getByText(/decided elsewhere/).waitFor();
    const after2 = (await api("GET", `/api/runs/${second.runId}/approvals`)).body.items[0];
    assert.equal(after2.status, "denied", "the stale allow changed nothing");
    assert.equal((await ended(second.runId)).status, "succeeded");
  });
  test("a conversation the canary took says its version on its page", async () => {
    const made = await makeAgent(
      api,
      { org, machine },
      { name: "talker", model: { provider: "script", name: "one.json" } },
    );
    const agentId = made.id as string;
    const v2 = await api("POST", `/api/agents/${agentId}/versions`, {
      model: { provider: "script", name: "two.json" },
    });
    assert.equal(
      (await api("PUT", `/api/agents/${agentId}/canary`, { version: v2.body.version, share: 0.5 })).status,
      200,
    );
    let k = 0;
    while (bucketOf(agentId, `key-${k}`) >= 0.5) k++;
    const onCanary = await api("POST", `/api/agents/${agentId}/conversations`, { routing_key: `key-${k}` });
    assert.equal(onCanary.body.spec_version, v2.body.version);
    const page = await web.person(OWNER);
    await page.goto(`${web.base}/agents/${agentId}/conversations/${onCanary.body.id}`);
    await page.getByTestId("conversation-version").getByText(`version ${v2.body.version} (canary)`).waitFor();
    k = 0;
    while (bucketOf(agentId, `key-${k}`) < 0.5) k++;
    const off = await api("POST", `/api/agents/${agentId}/conversations`, { routing_key: `key-${k}` });
    await page.goto(`${web.base}/agents/${agentId}/conversations/${off.body.id}`);
    await page.getByTestId("stream-state").waitFor();
    assert.equal(await page.getByTestId("conversation-version").count(), 0);
  });
});
