// Who may do what with connections (AUTH_MODE=trusted-header): only owners and admins register
// a provider; a viewer connects, grants and revokes nothing; a stranger learns nothing (404);
// and a member who comes back from the provider with another member's state is refused before
// any code is exchanged (the provider's token endpoint hears nothing), the connection failed
// with why. Every refusal leaves what it aimed at as it was.
import assert from "node:assert/strict";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, describe, test } from "node:test";
import { dbLegs } from "../support/db.js";
import { asMember } from "../support/org.js";
import { startTestServer, type TestServer } from "../support/server.js";

const OWNER = "owner@example.com";
const EDITOR = "editor@example.com";
const VIEWER = "viewer@example.com";
const STRANGER = "stranger@example.org";
const CLIENT_SECRET = "access-client-secret-5e1c9a";

for (const leg of dbLegs)
  describe(`connections access on ${leg.name}`, { skip: leg.skip ?? false }, () => {
    let t: TestServer;
    let provider: http.Server;
    let providerUrl: string;
    // every request the provider's endpoints got
    const heard: string[] = [];
    let org: string;
    let providerId: string;
    const as = asMember(() => t);
    const host = { host: "127.0.0.1:8080" };
    const asWithHost = (email: string) => (method: string, url: string, body?: unknown) =>
      t.call(method, url, body, { "x-forwarded-email": email, ...host });

    before(async () => {
      provider = http.createServer((req, res) => {
        heard.push(`${req.method} ${req.url}`);
        res.writeHead(400, { "content-type": "application/json" });
        res.end(JSON.stringify({ error: "invalid_grant" }));
      });
      await new Promise<void>((r) => provider.listen(0, "127.0.0.1", r));
      providerUrl = `http://127.0.0.1:${(provider.address() as AddressInfo).port}`;
      t = await startTestServer({
        leg,
        env: {
          AUTH_MODE: "trusted-header",
          WARREN_EGRESS_PRIVATE_ALLOW: providerUrl.slice("http://".length),
        },
      });
      const owner = as(OWNER);
      org = (await owner("POST", "/api/orgs", { name: "conn-access" })).body.id;
      for (const [email, role] of [
        [EDITOR, "editor"],
        [VIEWER, "viewer"],
      ] as const) {
        const m = await owner("PUT", `/api/orgs/${org}/members`, { email, role });
        assert.equal(m.status, 200, JSON.stringify(m.body));
      }
    });
    after(async () => {
      await t?.close();
      provider?.closeAllConnections();
      await new Promise((r) => provider?.close(r));
    });

    const providerBody = () => ({
      org_id: org,
      name: "CRM",
      authorization_url: `${providerUrl}/auth`,
      token_url: `${providerUrl}/token`,
      client_id: "warren-conn",
      client_secret: CLIENT_SECRET,
      scopes: ["api:read"],
    });
    const listed = async () =>
      (await as(OWNER)("GET", `/api/connections?org_id=${org}`)).body.items as {
        id: string;
        name: string;
        status: string;
        status_reason: string | null;
        grants: { scope: string; id: string }[];
      }[];

    test("only owners and admins register a provider; a stranger sees none", async () => {
      for (const who of [VIEWER, EDITOR]) {
        const r = await as(who)("POST", "/api/connections/providers", providerBody());
        assert.equal(r.status, 403, `${who}: ${JSON.stringify(r.body)}`);
        assert.equal(r.body.error.code, "access.denied");
      }
      assert.deepEqual((await as(OWNER)("GET", `/api/connections/providers?org_id=${org}`)).body.items, []);
      const p = await as(OWNER)("POST", "/api/connections/providers", providerBody());
      assert.equal(p.status, 201, JSON.stringify(p.body));
      providerId = p.body.id;
      const seen = await as(VIEWER)("GET", `/api/connections/providers?org_id=${org}`);
      assert.equal(seen.status, 200);
      assert.deepEqual(
        seen.body.items.map((x: { id: string }) => x.id),
        [providerId],
      );
      assert.ok(!JSON.stringify(seen.body).includes(CLIENT_SECRET));
      const stranger = await as(STRANGER)("GET", `/api/connections/providers?org_id=${org}`);
      assert.equal(stranger.status, 404, JSON.stringify(stranger.body));
    });

    test("a viewer cannot connect an account: nothing is made", async () => {
      const r = await asWithHost(VIEWER)("POST", "/api/connections", {
        provider_id: providerId,
        name: "crm",
      });
      assert.equal(r.status, 403, JSON.stringify(r.body));
      assert.equal(r.body.error.code, "access.denied");
      assert.deepEqual(await listed(), []);
    });

    test("another member back from the provider with the editor's state is refused before any exchange", async () => {
      const started = await asWithHost(EDITOR)("POST", "/api/connections", {
        provider_id: providerId,
        name: "crm",
      });
      assert.equal(started.status, 201, JSON.stringify(started.body));
      const state = new URL(started.body.authorize_url).searchParams.get("state")!;
      heard.length = 0;
      const q = new URLSearchParams({ code: "a-code-of-the-viewer", state });
      const r = await asWithHost(VIEWER)("GET", `/api/connections/callback?${q}`);
      assert.equal(r.status, 400, JSON.stringify(r.body));
      assert.equal(r.body.error.code, "connection.refused");
      assert.match(r.body.error.message, /started by another member/);
      assert.deepEqual(heard, [], "the provider heard of the code");
      const [c] = await listed();
      assert.equal(c?.status, "expired");
      assert.match(
        c?.status_reason ?? "",
        /viewer@example\.com came back from the provider, not the member who started/,
      );
      // the state is spent: the editor coming back with it is refused too, still without an exchange
      const again = await asWithHost(EDITOR)("GET", `/api/connections/callback?${q}`);
      assert.equal(again.status, 400);
      assert.equal(again.body.error.code, "connection.refused");
      assert.deepEqual(heard, []);
    });

    test("a viewer neither grants nor revokes a connection; a stranger does not see it", async () => {
      const started = await asWithHost(EDITOR)("POST", "/api/connections", {
        provider_id: providerId,
        name: "crm2",
        grants: [{ scope: "org", id: org }],
      });
      assert.equal(started.status, 201, JSON.stringify(started.body));
      const id = started.body.connection.id as string;
      const before = (await listed()).find((c) => c.id === id);
      const grant = await as(VIEWER)("PUT", `/api/connections/${id}/grants`, { grants: [] });
      assert.equal(grant.status, 403, JSON.stringify(grant.body));
      const revoke = await as(VIEWER)("POST", `/api/connections/${id}/revoke`);
      assert.equal(revoke.status, 403, JSON.stringify(revoke.body));
      assert.deepEqual(
        (await listed()).find((c) => c.id === id),
        before,
      );
      for (const [method, url] of [
        ["GET", `/api/connections/${id}`],
        ["POST", `/api/connections/${id}/revoke`],
        ["PUT", `/api/connections/${id}/grants`],
      ] as const) {
        const r = await as(STRANGER)(method, url, method === "PUT" ? { grants: [] } : undefined);
        assert.equal(r.status, 404, `${method} ${url}: ${JSON.stringify(r.body)}`);
      }
      assert.deepEqual(
        (await listed()).find((c) => c.id === id),
        before,
      );
      assert.deepEqual(heard, [], "the provider heard nothing");
    });
  });
