// A JSON body that is not a JSON object (null, an empty body sent as JSON, an array, a number,
// a string, a boolean) is 400 request.invalid on every route that takes an object, decided in
// one place (src/http/route.ts), never read as `{}`: `PUT canary` with null no longer ends the
// canary. No body at all is still `{}` (a route whose fields are all optional).
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { dbLegs } from "../support/db.js";
import { orgWithAgent } from "../support/org.js";
import { startTestServer, type TestServer } from "../support/server.js";

for (const leg of dbLegs)
  describe(`bodies that are not JSON objects, on ${leg.name}`, { skip: leg.skip ?? false }, () => {
    let t: TestServer;
    let agent: string;
    const raw = async (method: "PUT" | "POST" | "PATCH", url: string, payload: string) => {
      const r = await t.inject({ method, url, payload, headers: { "content-type": "application/json" } });
      return { status: r.statusCode, body: r.json<{ error?: { code: string; message: string } }>() };
    };

    before(async () => {
      t = await startTestServer({ leg });
      ({ agent } = await orgWithAgent((method, url, body) => t.call(method, url, body), {
        org: "bodies",
        script: "v1.json",
      }));
      const v2 = await t.call("POST", `/api/agents/${agent}/versions`, {
        model: { provider: "script", name: "v2.json" },
      });
      assert.equal(v2.status, 201, JSON.stringify(v2.body));
    });
    after(async () => {
      await t?.close();
    });

    test("null, an empty JSON body, an array, a number, a string or a boolean is 400; the canary stays", async () => {
      const set = await t.call("PUT", `/api/agents/${agent}/canary`, { version: 2, share: 0.25 });
      assert.equal(set.status, 200, JSON.stringify(set.body));
      for (const [payload, said] of [
        ["null", /not null/],
        ["", /is empty/],
        ["[]", /not an array/],
        ['[{"version": 2}]', /not an array/],
        ["0", /not a number/],
        ['"{}"', /not a string/],
        ["true", /not a boolean/],
      ] as const) {
        const r = await raw("PUT", `/api/agents/${agent}/canary`, payload);
        assert.equal(r.status, 400, `${JSON.stringify(payload)}: ${JSON.stringify(r.body)}`);
        assert.equal(r.body.error?.code, "request.invalid");
        assert.match(r.body.error?.message ?? "", said);
        const canary = (await t.call("GET", `/api/agents/${agent}/canary`)).body.canary;
        assert.deepEqual(
          [canary?.version, canary?.share],
          [2, 0.25],
          `${JSON.stringify(payload)} ended the canary`,
        );
      }
      // the same rule on other routes that take an object
      for (const [method, url] of [
        ["POST", "/api/orgs"],
        ["PATCH", `/api/agents/${agent}`],
        ["POST", `/api/agents/${agent}/runs`],
        ["PUT", `/api/agents/${agent}/eval-gate`],
      ] as const) {
        for (const payload of ["null", "", "[]", "7"]) {
          const r = await raw(method, url, payload);
          assert.equal(
            r.status,
            400,
            `${method} ${url} ${JSON.stringify(payload)}: ${JSON.stringify(r.body)}`,
          );
          assert.equal(r.body.error?.code, "request.invalid");
        }
      }
      // `{}` still ends it, as documented
      const ended = await raw("PUT", `/api/agents/${agent}/canary`, "{}");
      assert.equal(ended.status, 200, JSON.stringify(ended.body));
      assert.equal((await t.call("GET", `/api/agents/${agent}/canary`)).body.canary, null);
    });
  });
