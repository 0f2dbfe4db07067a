// The Connections page in a real browser (Debian's chromium, driven by playwright-core) against
// a real `warren serve`, with a real OpenID/OAuth provider library on loopback as the provider:
// the owner registers the provider, connects an account by clicking through the provider's own
// login and consent pages, sees it connected, grants it to an agent and a guild (the page says
// every agent of the guild acts as that account), revokes it and sees why. A member who may
// only read sees the same page without a form.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { boxSkipReason } from "../box/fixture.js";
import { waitFor } from "../conversations/support.js";
import { privateAllow } from "../support/bound.js";
import { startOidcProvider, type TestProvider } from "../support/oidc.js";
import { OWNER, startWebApp, type WebApp } from "./fixture.js";
import { builtins, makeAgent } from "../support/org.js";

const CLIENT_SECRET = "web-conn-client-secret-4f8a2c";
const AUDITOR = "auditor@example.com";

describe("the Connections page", { skip: boxSkipReason() ?? false }, () => {
  let web: WebApp;
  let op: TestProvider;
  let org: { id: string };
  let agent: { id: string };
  let guild: { id: string };
  const api = (method: string, url: string, body?: object) => web.api(method, url, body);
  const connection = (name: string) =>
    waitFor(`the connection ${name}`, async () =>
      (await api("GET", `/api/connections?org_id=${org.id}`)).body.items.find(
        (c: { name: string }) => c.name === name,
      ),
    );

  before(async () => {
    op = await startOidcProvider({ users: { alice: { email: "alice@example.com" } } });
    web = await startWebApp("connections", { WARREN_EGRESS_PRIVATE_ALLOW: privateAllow(op.port) });
    op.serve([
      {
        client_id: "warren-web-conn",
        client_secret: CLIENT_SECRET,
        redirect_uris: [`${web.base}/api/connections/callback`],
      },
    ]);
    org = (await api("POST", "/api/orgs", { name: "Connected" })).body;
    const machine = (await api("POST", "/api/machines", { org_id: org.id, name: "m" })).body;
    const made = await makeAgent(api, { org, machine }, { name: "crm-bot", tools: builtins("run_command") });
    agent = made;
    const g = await api("POST", "/api/guilds", { org_id: org.id, name: "sales" });
    assert.equal(g.status, 201, JSON.stringify(g.body));
    guild = g.body;
    const m = await api("PUT", `/api/orgs/${org.id}/members`, { email: AUDITOR, role: "auditor" });
    assert.equal(m.status, 200, JSON.stringify(m.body));
  });
  after(async () => {
    await web?.stop();
    await op?.close();
  });

  test("register a provider, connect through its login, grant, revoke", async () => {
    const page = await web.person(OWNER);
    await page.goto(`${web.base}/`);
    await page.getByRole("navigation", { name: "main" }).getByRole("link", { name: "Connections" }).click();
    await page.getByRole("heading", { name: "Connections", level: 1 }).waitFor();
    await page.goto(`${web.base}/connections?org=${org.id}`);

    const form = page.getByTestId("provider-new");
    await form.getByLabel("Name").fill("CRM");
    await form.getByLabel("Authorization endpoint").fill(`${op.issuer}/auth`);
    await form.getByLabel("Token endpoint").fill(`${op.issuer}/token`);
    await form.getByLabel(/^Revocation endpoint/).fill(`${op.issuer}/token/revocation`);
    await form.getByLabel("Client id").fill("warren-web-conn");
    await form.getByLabel(/^Client secret/).fill(CLIENT_SECRET);
    await form.getByLabel(/^Scopes/).fill("openid api:read");
    await form.getByRole("button", { name: "Register provider" }).click();
    const row = page.getByTestId("provider-CRM");
    await row.waitFor();
    assert.match(await row.innerText(), /with a client secret/);
    assert.ok(!(await page.content()).includes(CLIENT_SECRET), "the client secret is on the page");

    // connect: the browser goes to the provider's login and consent, then back to warren
    const connect = page.getByTestId("connection-connect");
    await connect.getByLabel(/^Name/).fill("crm");
    await connect.getByRole("button", { name: "Connect" }).click();
    await page.waitForURL((u) => u.origin === op.issuer);
    await page.locator('input[name="login"]').fill("alice");
    await page.locator('input[name="password"]').fill("any");
    await page.locator('button[type="submit"]').click();
    // the consent page
    await page.locator('button[type="submit"]').click();
    await page.waitForURL((u) => u.origin === web.base && u.pathname === "/connections");
    assert.match(new URL(page.url()).search, /connected=cnx_/);
    await page.getByTestId("connection-connected").getByText("Connected crm.").waitFor();
    const crm = page.getByTestId("connection-crm");
    await crm.getByTestId("connection-status").getByText("connected", { exact: true }).waitFor();
    assert.match(await crm.innerText(), /connected by owner@example.com/);
    const c = await connection("crm");
    assert.equal(c.status, "active");
    assert.deepEqual(op.grants, ["authorization_code"]);

    // grant it to the agent, then to the guild: the page says what the guild's grant means
    await crm.getByLabel("grant crm to").selectOption({ label: "agent crm-bot" });
    await crm.getByTestId("connection-grants").getByText("agent crm-bot").waitFor();
    await crm.getByLabel("grant crm to").selectOption({ label: "guild sales" });
    await crm
      .getByTestId("connection-shared")
      .getByText("Every agent of guild sales uses it as owner@example.com's CRM account.")
      .waitFor();
    const granted = await connection("crm");
    assert.deepEqual(granted.grants.map((g: { scope: string; id: string }) => `${g.scope}:${g.id}`).sort(), [
      `agent:${agent.id}`,
      `guild:${guild.id}`,
    ]);
    await web.shot(page, "connections");

    // ungrant the agent
    await crm.getByRole("button", { name: "ungrant crm from agent crm-bot" }).click();
    await waitFor("the agent's grant to go", async () =>
      (await connection("crm")).grants.every((g: { scope: string }) => g.scope !== "agent"),
    );

    // revoke: the status changes and says who and when
    await crm.getByTestId("connection-revoke").click();
    await crm.getByTestId("connection-status").getByText("revoked", { exact: true }).waitFor();
    assert.match(await crm.getByTestId("connection-reason").innerText(), /revoked by owner@example.com/);
    assert.equal((await connection("crm")).status, "revoked");
    await web.shot(page, "connections-revoked");
  });

  test("a member who may only read sees providers and accounts, and no form", async () => {
    const page = await web.person(AUDITOR);
    await page.goto(`${web.base}/connections?org=${org.id}`);
    await page.getByTestId("provider-CRM").waitFor();
    await page.getByTestId("connection-crm").waitFor();
    assert.equal(await page.getByTestId("provider-new").count(), 0);
    assert.equal(await page.getByTestId("connection-connect").count(), 0);
    assert.equal(await page.getByTestId("connection-revoke").count(), 0);
    assert.equal(await page.getByRole("button", { name: "Remove" }).count(), 0);
  });
});
