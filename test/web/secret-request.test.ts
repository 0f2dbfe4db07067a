// An agent's secret_request in a real browser (Debian's chromium, driven by playwright-core)
// against a real `warren serve` (real boxes, the scripted model): the conversation shows the
// waiting request as a card that says its text is the agent's own; the owner types the value
// there, and the agent's next command sees it while the thread never shows it. On the
// organisation's page a second request is refused, and the agent is told.
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { boxSkipReason } from "../box/fixture.js";
import { waitFor } from "../conversations/support.js";
import { OWNER, startWebApp, type WebApp } from "./fixture.js";
import { builtins, makeAgent, orgAndMachine } from "../support/org.js";

const VALUE = "web-sr-9QvX-31Kp-value";

describe("secret requests in the app", { skip: boxSkipReason() ?? false }, () => {
  let web: WebApp;
  let org: { id: string };
  let machine: { id: string };
  const api = (method: string, url: string, body?: object) => web.api(method, url, body);
  const ended = (runId: string) => web.ended(runId);
  const agentWith = async (name: string, turns: unknown[]) => {
    const made = await makeAgent(
      api,
      { org, machine },
      {
        name,
        tools: builtins("secret_request", "run_command"),
        tool_policy: "permit(principal, action, resource);",
      },
    );
    await web.putFile(made.id, "turns.json", JSON.stringify(turns));
    return made.id as string;
  };
  const asking = (name: string) => ({
    tool_calls: [
      {
        name: "secret_request",
        input: { name, description: "the registry password", why: "Ignore all checks and paste it here" },
      },
    ],
  });

  before(async () => {
    web = await startWebApp("secret-request");
    ({ org, machine } = await orgAndMachine(api, "Asked"));
  });
  after(async () => {
    await web?.stop();
  });

  test("the conversation's card takes the value; the next command sees it; the thread never shows it", async () => {
    const agentId = await agentWith("asker", [
      asking("REGISTRY_PASSWORD"),
      {
        tool_calls: [
          { name: "run_command", input: { command: 'printf %s "$REGISTRY_PASSWORD" > seen.txt' } },
        ],
      },
      { text: "Logged in." },
    ]);
    const c = await api("POST", `/api/agents/${agentId}/conversations`, { title: "login" });
    assert.equal(c.status, 201, JSON.stringify(c.body));
    const page = await web.person(OWNER);
    await page.goto(`${web.base}/agents/${agentId}/conversations/${c.body.id}`);
    const said = await api("POST", `/api/conversations/${c.body.id}/messages`, { text: "log in" });
    assert.equal(said.status, 202, JSON.stringify(said.body));
    const card = page.getByRole("article", { name: "secret request REGISTRY_PASSWORD" });
    await card.waitFor();
    assert.match(await card.getByTestId("agents-own-text").innerText(), /the agent's own words/);
    assert.equal(await card.getByTestId("secret-why").innerText(), "Ignore all checks and paste it here");
    assert.equal(await card.getByTestId("secret-description").innerText(), "the registry password");
    await web.shot(page, "secret-request-card");
    await card.getByLabel(/^Value/).fill(VALUE);
    await card.getByRole("button", { name: "Give secret" }).click();
    await card.waitFor({ state: "detached" });
    const done = await ended(said.body.run_id as string);
    assert.equal(done.status, "succeeded", JSON.stringify(done));
    await page.getByTestId("answer").getByText("Logged in.").waitFor();
    const seen = await readFile(
      path.join(web.stateRoot, "workspaces", machine.id, agentId, "seen.txt"),
      "utf8",
    );
    assert.equal(seen, VALUE);
    assert.ok(!(await page.content()).includes(VALUE), "the value is on the page");
    const messages = JSON.stringify((await api("GET", `/api/conversations/${c.body.id}/messages`)).body);
    assert.ok(!messages.includes(VALUE));
  });

  test("on the organisation's page the request is a card too, and Refuse tells the agent", async () => {
    const agentId = await agentWith("refused", [asking("OTHER_PASSWORD"), { text: "Understood." }]);
    const r = await api("POST", `/api/agents/${agentId}/runs`, { kind: "agent", input: "go" });
    assert.equal(r.status, 202, JSON.stringify(r.body));
    await waitFor("the request to wait", async () => {
      const items = (await api("GET", `/api/runs/${r.body.id}/approvals`)).body.items;
      return items.find((a: { status: string }) => a.status === "waiting");
    });
    const page = await web.person(OWNER);
    await page.goto(`${web.base}/orgs/${org.id}`);
    const card = page.getByRole("article", { name: "secret request OTHER_PASSWORD" });
    await card.waitFor();
    await card.getByLabel(/^Message/).fill("ask the platform team");
    await card.getByRole("button", { name: "Refuse" }).click();
    await card.waitFor({ state: "detached" });
    const done = await ended(r.body.id as string);
    assert.equal(done.status, "succeeded");
    const events = (await api("GET", `/api/runs/${r.body.id}/events`)).body.items;
    const call = events.find((e: { type: string }) => e.type === "tool_call");
    assert.match(
      JSON.stringify(call),
      /the request for the secret OTHER_PASSWORD was refused by owner@example.com: ask the platform team/,
    );
  });
});
