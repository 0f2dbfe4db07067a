// The published JSON Schema of a flow contract (docs/flow-contract.schema.json) is the one the
// server validates with, written by scripts/flow-contract-schema.ts: a stale copy fails here.
// Its problems name the file, the line and the reason.
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { test } from "node:test";
import { flowContractJsonSchema } from "../../src/contract/flow-contract.js";
import { parseContract } from "../../src/flows/contract-files.js";
import { schemaPath } from "../../scripts/flow-contract-schema.js";

test("docs/flow-contract.schema.json is current (node --import tsx scripts/flow-contract-schema.ts)", async () => {
  assert.equal(await readFile(schemaPath, "utf8"), flowContractJsonSchema());
});

test("a contract's problem names its line and reason", () => {
  const policy = {
    file: "p",
    classes: new Map(),
    bundles: new Map([["reader", { description: "", tools: [], hosts: [], secrets: [] }]]),
  };
  const cases: [string, number, RegExp][] = [
    ["name: a\norg: o\nagents:\n  - name: w\n    permission_bundle: reader\n", 0, /./],
    ["name: a\norg: o\nagents: [\n", 4, /not YAML/],
    ["name: a\norg: o\nagents: []\n", 3, /agents: name at least one agent/],
    ["name: a\norg: o\nagents:\n  - name: w\n    permission_bundle: writer\n", 5, /"writer" is not a bundle/],
    ["name: a\norg: o\nshape: round\nagents:\n  - name: w\n    permission_bundle: reader\n", 3, /shape/],
    [
      "name: a\norg: o\nagents:\n  - name: w\n    permission_bundle: reader\nfiles: [../etc/passwd]\n",
      6,
      /files\.0/,
    ],
  ];
  for (const [text, line, reason] of cases) {
    const r = parseContract(text, "a/flow.yaml", policy);
    if (line === 0) {
      assert.equal(r.ok, true, JSON.stringify(r));
      continue;
    }
    assert.equal(r.ok, false, text);
    if (r.ok) continue;
    assert.equal(r.problem.file, "a/flow.yaml");
    assert.equal(r.problem.line, line, `${text}: ${r.problem.reason}`);
    assert.match(r.problem.reason, reason);
  }
});
