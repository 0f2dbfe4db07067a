import assert from "node:assert/strict";
import { test } from "node:test";
import { modelName } from "./mcp.js";

test("MCP tools' names for the model: <server>__<tool>, only what providers accept, unique", () => {
  const taken = new Set<string>();
  assert.equal(modelName("docs", "search", taken), "docs__search");
  assert.equal(modelName("docs", "get.page", taken), "docs__get_page");
  assert.equal(modelName("docs", "get page", taken), "docs__get_page_2");
  const long = modelName("docs", "x".repeat(100), taken);
  assert.equal(long.length, 64);
  assert.equal(modelName("docs", "x".repeat(100), taken).length, 64);
  assert.equal(taken.size, 5);
  for (const n of taken) assert.match(n, /^[A-Za-z0-9_-]{1,64}$/);
});
