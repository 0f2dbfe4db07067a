// The OpenAPI document is generated from the contract's schemas, names its shapes as
// components, gives every operation a readable id, covers every route the server serves,
// and the checked-in copy is current (regenerate it with `node --import tsx scripts/openapi.ts`).
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { after, before, test } from "node:test";
import { currentDocument, documentPath } from "../../scripts/openapi.js";
import { startTestServer, type TestServer } from "../support/server.js";

interface Doc {
  openapi: string;
  paths: Record<
    string,
    Record<string, { operationId: string; responses: Record<string, any>; requestBody?: any }>
  >;
  components: { schemas: Record<string, unknown> };
}

let t: TestServer;
before(async () => {
  t = await startTestServer();
});
after(async () => {
  await t.close();
});

test("docs/openapi.json matches the served document", async () => {
  const served = await currentDocument();
  const checkedIn = await readFile(documentPath, "utf8");
  assert.equal(
    checkedIn,
    served,
    "docs/openapi.json is stale: run `node --import tsx scripts/openapi.ts` and commit it with sdk/python/warren (the Python SDK it also writes)",
  );
});

test("every operation has a readable, unique id and named shapes", async () => {
  const doc = (await t.inject({ url: "/api/openapi.json" })).json<Doc>();
  assert.equal(doc.openapi, "3.1.0");
  const ids = new Set<string>();
  const refs: string[] = [];
  const collect = (v: unknown): void => {
    if (Array.isArray(v)) v.forEach(collect);
    else if (v && typeof v === "object")
      for (const [k, x] of Object.entries(v)) {
        if (k === "$ref" && typeof x === "string") refs.push(x);
        else collect(x);
      }
  };
  for (const [p, ops] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(ops)) {
      assert.match(op.operationId, /^[a-z]+(\.[a-z]+)+$/, `${method} ${p}: operationId ${op.operationId}`);
      assert.ok(!ids.has(op.operationId), `${op.operationId} is used twice`);
      ids.add(op.operationId);
      const json = op.requestBody?.content?.["application/json"]?.schema;
      if (json)
        assert.match(json.$ref ?? "", /^#\/components\/schemas\//, `${op.operationId}: body is not named`);
      const [status, ok] = Object.entries(op.responses).find(([s]) => s !== "default") ?? [];
      assert.ok(status && ok, `${op.operationId} has no success answer`);
      const answer = ok.content?.["application/json"]?.schema;
      if (answer)
        assert.match(
          answer.$ref ?? "",
          /^#\/components\/schemas\//,
          `${op.operationId}: answer is not named`,
        );
      // no content: 204, and a redirect (its Location is the answer)
      else if (status !== "204" && !/^30[1-8]$/.test(status))
        assert.ok(ok.content, `${op.operationId} answers ${status} but says nothing of its content`);
    }
  }
  collect(doc);
  for (const ref of refs) {
    const name = ref.replace("#/components/schemas/", "");
    assert.ok(doc.components.schemas[name], `${ref} points at no component`);
  }
  for (const name of ["Agent", "Machine", "Run", "RunReceipt", "ExecResult", "SandboxPolicy", "Error"])
    assert.ok(doc.components.schemas[name], `no component ${name}`);
  for (const id of ["agents.create", "runs.get", "agents.exec", "ports.get", "files.write", "system.health"])
    assert.ok(ids.has(id), `no operation ${id}`);
});

test("every route the server serves is in the document", async () => {
  const doc = (await t.inject({ url: "/api/openapi.json" })).json<Doc>();
  const app = t.server.app;
  // Every documented operation is served ...
  let documented = 0;
  for (const [p, ops] of Object.entries(doc.paths)) {
    const url = p.replace(/\{path\}$/, "*").replace(/\{([A-Za-z_]+)\}/g, ":$1");
    for (const method of Object.keys(ops)) {
      documented++;
      assert.ok(app.hasRoute({ method: method.toUpperCase(), url }), `${method} ${p} is not served`);
    }
  }
  // ... and the server serves no more routes than that (HEAD comes with GET).
  let served = 0;
  for (const m of app.printRoutes().matchAll(/\(([A-Z, ]+)\)/g))
    served += (m[1] ?? "").split(", ").filter((x) => x !== "HEAD").length;
  assert.ok(documented >= 40, `only ${documented} operations`);
  assert.equal(served, documented, "the server serves a route the document lacks");
});
