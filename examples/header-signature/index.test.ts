// The header-signature identity mode, loaded from outside src/ through WARREN_EXTENSIONS into
// a real server: a signed email is that person; a missing, stale, forged or re-addressed
// signature is 401 auth.required; without its key the server refuses to start.
import assert from "node:assert/strict";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { startTestServer, type TestServer } from "../../test/support/server.js";
import { sign } from "./index.js";

const extension = path.join(path.dirname(fileURLToPath(import.meta.url)), "index.js");
const key = "k".repeat(40);

describe("the header-signature identity mode (an extension)", () => {
  let t: TestServer;
  before(async () => {
    t = await startTestServer({
      env: { WARREN_EXTENSIONS: extension, AUTH_MODE: "header-signature", WARREN_HEADER_SIGNATURE_KEY: key },
    });
  });
  after(async () => t?.close());

  const signed = (email: string, o: { at?: number; key?: string; as?: string } = {}) => {
    const at = String(o.at ?? Math.floor(Date.now() / 1000));
    return {
      "x-warren-user": o.as ?? email,
      "x-warren-timestamp": at,
      "x-warren-signature": sign(o.key ?? key, email, at),
    };
  };

  test("a signed request is the person it names", async () => {
    const org = await t.call("POST", "/api/orgs", { name: "signed" }, signed("ada@example.com"));
    assert.equal(org.status, 201, JSON.stringify(org.body));
    const members = await t.call(
      "GET",
      `/api/orgs/${org.body.id}/members`,
      undefined,
      signed("ada@example.com"),
    );
    assert.equal(members.status, 200, JSON.stringify(members.body));
    assert.deepEqual(
      members.body.items.map((m: { email: string }) => m.email),
      ["ada@example.com"],
    );
  });

  test("unsigned, stale, forged and re-addressed requests are refused", async () => {
    const cases: Record<string, string>[] = [
      {},
      { "x-warren-user": "ada@example.com" },
      signed("ada@example.com", { at: Math.floor(Date.now() / 1000) - 3600 }),
      signed("ada@example.com", { key: "x".repeat(40) }),
      signed("ada@example.com", { as: "root@example.com" }),
      { ...signed("ada@example.com"), "x-warren-signature": "zz" },
    ];
    for (const headers of cases) {
      const r = await t.call("GET", "/api/orgs", undefined, headers);
      assert.equal(r.status, 401, JSON.stringify({ headers, body: r.body }));
      assert.equal(r.body.error.code, "auth.required");
      assert.doesNotMatch(JSON.stringify(r.body), new RegExp(key), "the key is never answered");
    }
    // a write under a forged or re-addressed signature is refused and makes nothing: the person
    // it named, signing for real, has no organisation
    for (const headers of [
      signed("eve@example.com", { key: "x".repeat(40) }),
      signed("ada@example.com", { as: "eve@example.com" }),
    ]) {
      const r = await t.call("POST", "/api/orgs", { name: "forged" }, headers);
      assert.equal(r.status, 401, JSON.stringify(r.body));
    }
    const eve = await t.call("GET", "/api/orgs", undefined, signed("eve@example.com"));
    assert.equal(eve.status, 200, JSON.stringify(eve.body));
    assert.deepEqual(eve.body.items, []);
  });

  test("without its key, or unnamed in WARREN_EXTENSIONS, the start is refused with the fix", async () => {
    await assert.rejects(
      startTestServer({ env: { WARREN_EXTENSIONS: extension, AUTH_MODE: "header-signature" } }),
      /WARREN_HEADER_SIGNATURE_KEY/,
    );
    await assert.rejects(
      startTestServer({ env: { AUTH_MODE: "no-such-mode" } }),
      /AUTH_MODE must be one of compat-cookie, trusted-header.*header-signature/,
    );
  });
});
