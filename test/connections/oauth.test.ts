// Connections end to end on loopback, with a real OpenID/OAuth provider library as the
// provider: a member connects an account (PKCE, the state checked, a wrong or replayed state
// refused, the provider refusing a replayed code), an agent's http tool uses the connection and
// the resource server sees the bearer while no box environment, stored record or model request
// holds it, the token is refreshed before it expires, and a revoked connection's next call is
// refused with why. A guild's connection is used by an MCP tool of every agent of the guild as
// that account, refused to an agent it is not granted to and used by it once granted by name
// (an agent grant). The server's outbound proxy (WARREN_OUTBOUND_PROXY) carries the code
// exchange, the refresh and the tools' calls.
import assert from "node:assert/strict";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, describe, test } from "node:test";
import { boxSkipReason } from "../box/fixture.js";
import { eventsOfType, runAgent, scriptedAssistant } from "../support/agent-runs.js";
import { privateAllow } from "../support/bound.js";
import { dbLegs } from "../support/db.js";
import { startFakeAnthropic, type FakeModelServer } from "../support/fake-models.js";
import { signInAtProvider, startOidcProvider, type TestProvider } from "../support/oidc.js";
import { startTestServer, type TestServer } from "../support/server.js";
import { tablesHolding } from "../support/store-scan.js";
import { modelKey } from "../support/org.js";
import { startMcpServer, type TestMcpServer } from "../support/mcp.js";
import { startConnectProxy, type ConnectProxy } from "../support/connect-proxy.js";

const CLIENT_SECRET = "conn-client-secret-7b1f0e9d2c";

/** A resource server on loopback: it records each Authorization and echoes it back (the answer must be redacted). */
async function resourceServer(): Promise<{
  url: string;
  port: number;
  seen: string[];
  close(): Promise<void>;
}> {
  const seen: string[] = [];
  const srv = http.createServer((req, res) => {
    const auth = req.headers.authorization ?? "";
    seen.push(auth);
    res.writeHead(200, { "content-type": "application/json" });
    res.end(JSON.stringify({ you_sent: auth, user: "alice" }));
  });
  await new Promise<void>((r) => srv.listen(0, "127.0.0.1", r));
  const port = (srv.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    seen,
    close: () => new Promise<void>((r) => (srv.closeAllConnections(), srv.close(() => r()))),
  };
}

for (const leg of dbLegs) {
  describe(`connections on ${leg.name}`, { skip: leg.skip ?? boxSkipReason() ?? false }, () => {
    let t: TestServer;
    let op: TestProvider;
    let rs: Awaited<ReturnType<typeof resourceServer>>;
    let anth: FakeModelServer;
    let mcp: TestMcpServer;
    let out: ConnectProxy;
    let machine: string;
    let firstCallback: URL;
    let org: string;
    let agent: string;
    let providerId: string;
    let connectionId: string;
    // the server's log, at debug: no line may hold a token
    const logLines: string[] = [];
    // every refresh token the provider issues (the test that makes the provider refuse one destroys them)
    const refreshTokens: { destroy(): Promise<void> }[] = [];
    const get = async (path: string) => {
      const r = await fetch(`${t.url}${path}`, { redirect: "manual" });
      return { status: r.status, location: r.headers.get("location"), body: await r.text() };
    };

    before(async () => {
      op = await startOidcProvider({ users: { alice: { email: "alice@example.com" } }, accessTtl: 30 });
      rs = await resourceServer();
      anth = await startFakeAnthropic();
      mcp = await startMcpServer();
      out = await startConnectProxy();
      t = await startTestServer({
        leg,
        listen: true,
        env: {
          WARREN_EGRESS_PRIVATE_ALLOW: privateAllow(op.port, rs.port, mcp, anth),
          WARREN_OUTBOUND_PROXY: out.url,
          LOG_LEVEL: "debug",
        },
        logDestination: { write: (line) => void logLines.push(line) },
      });
      op.serve([
        {
          client_id: "warren-conn",
          client_secret: CLIENT_SECRET,
          redirect_uris: [`${t.url}/api/connections/callback`],
        },
      ]);
      op.provider.on("refresh_token.saved", (rt: { destroy(): Promise<void> }) => refreshTokens.push(rt));
      org = (await t.call("POST", "/api/orgs", { name: "conn" })).body.id;
      machine = (await t.call("POST", "/api/machines", { org_id: org, name: "m" })).body.id;
      await modelKey(t.call, org, [anth], "sk-ant-conn-test-1234");
      const base = scriptedAssistant(anth.baseUrl);
      const a = await t.call("POST", "/api/agents", {
        org_id: org,
        machine_id: machine,
        name: "a",
        ...base,
        tools: [
          ...base.tools,
          { type: "http", name: "api", base_url: `${rs.url}/v1/`, methods: ["GET"], connection: "crm" },
        ],
      });
      assert.equal(a.status, 201, JSON.stringify(a.body));
      agent = a.body.id;
    });

    after(async () => {
      await t?.close();
      await op?.close();
      await rs?.close();
      await anth?.close();
      await mcp?.close();
      await out?.close();
    });

    test("an owner registers a provider; its client secret is never answered", async () => {
      const p = await t.call("POST", "/api/connections/providers", {
        org_id: org,
        name: "CRM",
        issuer: op.issuer,
        authorization_url: `${op.issuer}/auth`,
        token_url: `${op.issuer}/token`,
        revocation_url: `${op.issuer}/token/revocation`,
        client_id: "warren-conn",
        client_secret: CLIENT_SECRET,
        scopes: ["openid", "api:read"],
      });
      assert.equal(p.status, 201, JSON.stringify(p.body));
      assert.equal(p.body.has_client_secret, true);
      assert.ok(!JSON.stringify(p.body).includes(CLIENT_SECRET));
      providerId = p.body.id;
      const bad = await t.call("POST", "/api/connections/providers", {
        org_id: org,
        name: "x",
        token_url: "ftp://x",
      });
      assert.equal(bad.status, 400);
      assert.equal(bad.body.error.code, "request.invalid");
    });

    test("a member connects an account: PKCE and state; a wrong or replayed state is refused", async () => {
      const started = await t.call(
        "POST",
        "/api/connections",
        { provider_id: providerId, name: "crm", grants: [{ scope: "org", id: org }] },
        { host: new URL(t.url!).host },
      );
      assert.equal(started.status, 201, JSON.stringify(started.body));
      assert.equal(started.body.connection.status, "pending");
      const auth = new URL(started.body.authorize_url);
      assert.equal(auth.searchParams.get("code_challenge_method"), "S256");
      assert.ok(auth.searchParams.get("code_challenge"));
      assert.ok(auth.searchParams.get("state"));
      connectionId = started.body.connection.id;

      const back = await signInAtProvider(auth.href, "alice");
      assert.equal(back.pathname, "/api/connections/callback");
      const state = back.searchParams.get("state")!;
      assert.equal(state, auth.searchParams.get("state"));

      // a state the server never gave is refused before anything is exchanged
      const wrong = new URL(back);
      wrong.searchParams.set("state", "not-the-state");
      const w = await get(wrong.pathname + wrong.search);
      assert.equal(w.status, 400, w.body);
      assert.equal(JSON.parse(w.body).error.code, "connection.refused");
      assert.equal((await t.call("GET", `/api/connections/${connectionId}`)).body.status, "pending");

      out.tunnels.length = 0;
      const ok = await get(back.pathname + back.search);
      assert.equal(ok.status, 303, ok.body);
      // the code exchange went out through the server's outbound proxy, to the provider
      assert.deepEqual(
        out.tunnels.map((x) => x.authority),
        [`127.0.0.1:${op.port}`],
      );
      firstCallback = back;
      assert.equal(ok.location, `/connections?connected=${connectionId}`);
      const c = (await t.call("GET", `/api/connections/${connectionId}`)).body;
      assert.equal(c.status, "active");
      assert.equal(c.connected_by, "operator@localhost");
      assert.ok(c.expires_at && Date.parse(c.expires_at) > Date.now());
      assert.match(c.shared, /every agent of the organisation acts as operator@localhost's CRM account/);
      assert.deepEqual(op.grants, ["authorization_code"]);

      // the same answer again (a replayed code): its state is used, refused; nothing is exchanged
      const again = await get(back.pathname + back.search);
      assert.equal(again.status, 400, again.body);
      assert.match(JSON.parse(again.body).error.message, /unknown or was used already/);
      assert.deepEqual(op.grants, ["authorization_code"]);
    });

    test("the used code replayed under another member's fresh state is refused by the provider (PKCE)", async () => {
      const other = await t.call(
        "POST",
        "/api/connections",
        { provider_id: providerId, name: "crm-replay", grants: [] },
        { host: new URL(t.url!).host },
      );
      assert.equal(other.status, 201, JSON.stringify(other.body));
      const replay = new URL(firstCallback);
      replay.searchParams.set("state", new URL(other.body.authorize_url).searchParams.get("state")!);
      const r = await get(replay.pathname + replay.search);
      assert.equal(r.status, 400, r.body);
      assert.equal(JSON.parse(r.body).error.code, "connection.refused");
      const c = (await t.call("GET", `/api/connections/${other.body.connection.id}`)).body;
      assert.equal(c.status, "expired", JSON.stringify(c));
      assert.match(c.status_reason, /invalid_grant/);
      // no token was issued for it
      assert.deepEqual(op.grants, ["authorization_code"]);
    });

    test("an http tool uses the connection: the provider's resource sees the bearer, refreshed before expiry; nothing else holds it", async () => {
      anth.script([
        { tool_calls: [{ name: "api", input: { method: "GET", path: "me" } }] },
        {
          tool_calls: [
            { name: "run_command", input: { command: "env; cat /proc/self/environ | tr '\\0' '\\n'" } },
          ],
        },
        { text: "Done." },
      ]);
      anth.requests.length = 0;
      out.tunnels.length = 0;
      const { run, events } = await runAgent(t, agent, "who am I at the CRM?");
      assert.equal(run.status, "succeeded", JSON.stringify(run));
      // the refresh and the tool's call went out through the server's outbound proxy
      const through = out.tunnels.map((x) => x.authority);
      assert.ok(through.includes(`127.0.0.1:${op.port}`), JSON.stringify(through));
      assert.ok(through.includes(`127.0.0.1:${rs.port}`), JSON.stringify(through));
      // the token lives 30 s, less than the refresh margin: refreshed before the call
      assert.deepEqual(op.grants, ["authorization_code", "refresh_token"]);
      const sent = rs.seen.at(-1)!;
      assert.match(sent, /^Bearer \S+$/);
      const token = sent.slice("Bearer ".length);
      const found = await op.provider.AccessToken.find(token);
      assert.ok(found && !found.isExpired, "the resource server got a live access token of the provider");
      const c = (await t.call("GET", `/api/connections/${connectionId}`)).body;
      assert.ok(Date.parse(c.refreshed_at) > Date.now() - 60_000);

      // the tool's answer echoed the bearer: redacted
      const calls = eventsOfType(events, "tool_call");
      const api = calls.find((e) => e.tool === "api");
      assert.ok(api, JSON.stringify(calls).slice(0, 2000));
      // the model got the answer (alice), with the echoed bearer redacted
      const told = JSON.stringify(anth.requests);
      assert.match(told, /alice/);
      // not in the model's requests (its context), the run's events, the box's environment
      assert.ok(!JSON.stringify(anth.requests).includes(token), "the model never saw the token");
      assert.ok(!JSON.stringify(events).includes(token), "no event holds the token");
      const cmd = calls.find((e) => e.tool === "run_command");
      assert.ok(cmd && !JSON.stringify(cmd).includes(token));
      // nor any stored row in any table, in the clear
      assert.deepEqual(await tablesHolding(t, token), [], "a table holds the token");
      // nor the server's log: the token is redacted from it as a secret value is, whoever logs it
      t.server.logger.warn({ probe: `Bearer ${token}` }, "a line that would hold the token");
      const probe = logLines.find((l) => l.includes("a line that would hold the token"));
      assert.ok(probe, "the probe line was logged");
      assert.ok(
        logLines.length > 1 && !logLines.some((l) => l.includes(token)),
        "a log line holds the token",
      );
    });

    test("a revoked connection's next call is refused with why", async () => {
      // the connection's access token now (the last the resource server saw) is live at the provider
      const current = rs.seen.at(-1)!.slice("Bearer ".length);
      assert.ok(await op.provider.AccessToken.find(current), "the current access token is live");
      const r = await t.call("POST", `/api/connections/${connectionId}/revoke`);
      assert.equal(r.status, 200, JSON.stringify(r.body));
      assert.equal(r.body.status, "revoked");
      assert.match(r.body.status_reason, /revoked by operator@localhost/);
      // revoked at the provider too (it has a revocation endpoint)
      assert.equal(await op.provider.AccessToken.find(current), undefined, "the provider still honours it");
      const before = rs.seen.length;
      anth.script([
        { tool_calls: [{ name: "api", input: { method: "GET", path: "me" } }] },
        { text: "Done." },
      ]);
      anth.requests.length = 0;
      const { events } = await runAgent(t, agent, "again");
      const api = eventsOfType(events, "tool_call").find((e) => e.tool === "api");
      assert.match(JSON.stringify(api), /the connection crm was revoked by operator@localhost/);
      assert.match(
        JSON.stringify(anth.requests.at(-1)),
        /the connection crm was revoked by operator@localhost/,
      );
      assert.equal(rs.seen.length, before, "nothing reached the resource server");
    });

    test("a refresh the provider refuses marks the connection expired with why; the next call is refused with it", async () => {
      // connected again under the same name (a revoked connection's name is free)
      const started = await t.call(
        "POST",
        "/api/connections",
        { provider_id: providerId, name: "crm", grants: [{ scope: "org", id: org }] },
        { host: new URL(t.url!).host },
      );
      assert.equal(started.status, 201, JSON.stringify(started.body));
      const back = await signInAtProvider(started.body.authorize_url, "alice");
      assert.equal((await get(back.pathname + back.search)).status, 303);
      const id = started.body.connection.id as string;
      assert.equal((await t.call("GET", `/api/connections/${id}`)).body.status, "active");
      // the provider forgets every refresh token it gave: the next refresh is refused (invalid_grant)
      assert.ok(refreshTokens.length > 0, "the provider issued a refresh token");
      for (const rt of refreshTokens.splice(0)) await rt.destroy();
      const before = rs.seen.length;
      anth.script([
        { tool_calls: [{ name: "api", input: { method: "GET", path: "me" } }] },
        { text: "Done." },
      ]);
      const first = await runAgent(t, agent, "who am I?");
      // the access token lives 30 s, within the refresh margin: the call refreshes first, and fails
      const c = (await t.call("GET", `/api/connections/${id}`)).body;
      assert.equal(c.status, "expired", JSON.stringify(c));
      assert.match(c.status_reason, /the refresh at .* failed: invalid_grant/);
      const call = eventsOfType(first.events, "tool_call").find((e) => e.tool === "api");
      assert.match(
        JSON.stringify(call),
        /the connection crm expired: the refresh at .* failed: invalid_grant/,
      );
      assert.equal(rs.seen.length, before, "nothing reached the resource server");

      anth.script([
        { tool_calls: [{ name: "api", input: { method: "GET", path: "me" } }] },
        { text: "Done." },
      ]);
      anth.requests.length = 0;
      const second = await runAgent(t, agent, "again");
      const again = eventsOfType(second.events, "tool_call").find((e) => e.tool === "api");
      // refused with the same reason, without asking the provider again
      assert.ok(JSON.stringify(again).includes(c.status_reason.replace(/"/g, '\\"')), JSON.stringify(again));
      assert.match(JSON.stringify(anth.requests.at(-1)), /the connection crm expired: the refresh at/);
      // no refresh was tried again: the reason (with its time) is the first one
      assert.equal((await t.call("GET", `/api/connections/${id}`)).body.status_reason, c.status_reason);
      assert.equal(rs.seen.length, before);
    });

    test("a guild's connection: an MCP tool of an agent of the guild uses it as that account; an agent outside is refused", async () => {
      const guild = (await t.call("POST", "/api/guilds", { org_id: org, name: "sales" })).body;
      const base = scriptedAssistant(anth.baseUrl);
      const mk = async (name: string, tools: object[]) => {
        const r = await t.call("POST", "/api/agents", {
          org_id: org,
          machine_id: machine,
          name,
          ...base,
          tools: [...base.tools, ...tools],
        });
        assert.equal(r.status, 201, JSON.stringify(r.body));
        return r.body.id as string;
      };
      const member = await mk("seller", [{ type: "mcp", name: "crm", url: mcp.url, connection: "team" }]);
      const outsider = await mk("outsider", [
        { type: "http", name: "api", base_url: `${rs.url}/v1/`, methods: ["GET"], connection: "team" },
      ]);
      assert.equal(
        (await t.call("POST", `/api/guilds/${guild.id}/agents`, { agent_id: member })).status,
        204,
      );

      const started = await t.call(
        "POST",
        "/api/connections",
        { provider_id: providerId, name: "team", grants: [{ scope: "guild", id: guild.id }] },
        { host: new URL(t.url!).host },
      );
      assert.equal(started.status, 201, JSON.stringify(started.body));
      const back = await signInAtProvider(started.body.authorize_url, "alice");
      assert.equal((await get(back.pathname + back.search)).status, 303);
      const c = (await t.call("GET", `/api/connections/${started.body.connection.id}`)).body;
      assert.equal(c.status, "active");
      assert.equal(c.shared, `every agent of guild ${guild.id} acts as operator@localhost's CRM account`);

      // the guild's agent: its MCP server is listed and called with the connection's bearer
      mcp.headers.length = 0;
      anth.script([{ tool_calls: [{ name: "crm__echo", input: { text: "hello" } }] }, { text: "Done." }]);
      anth.requests.length = 0;
      const { run, events } = await runAgent(t, member, "say hello at the CRM");
      assert.equal(run.status, "succeeded", JSON.stringify(run));
      const echo = eventsOfType(events, "tool_call").find((e) => e.tool === "crm__echo");
      assert.match(JSON.stringify(echo), /echo: hello/);
      assert.ok(mcp.headers.length > 0, "the MCP server was reached");
      // each request carried a bearer of the provider for alice's account (the token lives 30 s,
      // within the refresh margin, so each use is refreshed first: one token per request)
      const tokens = mcp.headers.map((h) => {
        assert.match(String(h.authorization), /^Bearer \S+$/);
        return String(h.authorization).slice("Bearer ".length);
      });
      for (const token of tokens) {
        const found = await op.provider.AccessToken.find(token);
        assert.ok(found, "the MCP server got an access token of the provider");
        assert.equal(found.accountId, "alice");
        assert.ok(!JSON.stringify(anth.requests).includes(token), "the model never saw the token");
        assert.ok(!JSON.stringify(events).includes(token), "no event holds the token");
      }
      const last = await op.provider.AccessToken.find(tokens.at(-1));
      assert.ok(!last.isExpired, "the last call's token is live");

      // an agent outside the guild: not granted, refused with why; nothing reached the resource
      const seen = rs.seen.length;
      anth.script([
        { tool_calls: [{ name: "api", input: { method: "GET", path: "me" } }] },
        { text: "Done." },
      ]);
      const refused = await runAgent(t, outsider, "who am I?");
      const call = eventsOfType(refused.events, "tool_call").find((e) => e.tool === "api");
      assert.match(JSON.stringify(call), /the connection team is not granted to this agent/);
      assert.equal(rs.seen.length, seen, "nothing reached the resource server");

      // granted to that agent by name, its next call goes out with the connection's bearer
      const granted = await t.call("PUT", `/api/connections/${started.body.connection.id}/grants`, {
        grants: [
          { scope: "guild", id: guild.id },
          { scope: "agent", id: outsider },
        ],
      });
      assert.equal(granted.status, 200, JSON.stringify(granted.body));
      anth.script([
        { tool_calls: [{ name: "api", input: { method: "GET", path: "me" } }] },
        { text: "Done." },
      ]);
      const used = await runAgent(t, outsider, "who am I now?");
      assert.equal(used.run.status, "succeeded", JSON.stringify(used.run));
      assert.equal(rs.seen.length, seen + 1);
      const bearer = rs.seen.at(-1)!.slice("Bearer ".length);
      assert.equal((await op.provider.AccessToken.find(bearer))?.accountId, "alice");
    });
  });
}
