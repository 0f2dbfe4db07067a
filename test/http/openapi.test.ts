// The checked-in OpenAPI document is the one the server serves (regenerate it with
// `node --import tsx scripts/openapi.ts`).
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { test } from "node:test";
import { currentDocument, documentPath } from "../../scripts/openapi.js";

test("docs/openapi.json matches the served document", async () => {
  const served = await currentDocument();
  const checkedIn = await readFile(documentPath, "utf8");
  assert.equal(
    checkedIn,
    served,
    "docs/openapi.json is stale: run `node --import tsx scripts/openapi.ts` and commit it",
  );
  const doc = JSON.parse(served) as { paths: Record<string, unknown> };
  for (const p of [
    "/api/orgs",
    "/api/machines/{id}/stop",
    "/api/agents/{id}/exec",
    "/api/agents/{id}/runs",
    "/api/runs/{id}/events",
    "/api/agents/{id}/files/{path}",
    "/api/agents/{id}/usage",
  ]) {
    assert.ok(doc.paths[p], `${p} is documented`);
  }
});
