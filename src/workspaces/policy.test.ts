import assert from "node:assert/strict";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { test } from "node:test";
import { loadPolicy, parsePolicy, PolicyError } from "./policy.js";

test("the policy file's workspace classes, by one schema", () => {
  const p = parsePolicy(
    "workspace_classes:\n  private_scratch:\n    description: own\n    workspace_scope: per-agent\n  shared:\n    workspace_scope: per-flow-instance\npermission_bundles: {}\n",
    "/p.yaml",
  );
  assert.deepEqual(Object.fromEntries(p.classes), {
    private_scratch: { description: "own", workspace_scope: "per-agent" },
    shared: { description: "", workspace_scope: "per-flow-instance" },
  });
  assert.equal(parsePolicy("", "/p.yaml").classes.size, 0);
  const bad = [
    ["workspace_classes:\n  x:\n    workspace_scope: global\n", /workspace_classes\.x\.workspace_scope/],
    ["workspace_classes:\n  x:\n    workspace_scope: per-agent\n    size: 3\n", /workspace_classes\.x/],
    ["workspace_classes:\n  Bad Name:\n    workspace_scope: per-agent\n", /workspace_classes/],
    ["workspace_classes: [1, 2\n", /is not YAML \(line \d+\)/],
  ] as const;
  for (const [text, re] of bad)
    assert.throws(
      () => parsePolicy(text, "/p.yaml"),
      (e: Error) => e instanceof PolicyError && re.test(e.message) && e.message.includes("/p.yaml"),
    );
});

test("the default file may be absent; a file WARREN_POLICY names may not", async () => {
  const dir = await mkdtemp(path.join(os.tmpdir(), "warren-policy-"));
  try {
    const file = path.join(dir, "policy.yaml");
    assert.deepEqual(loadPolicy(file, false), { file: null, classes: new Map() });
    assert.throws(() => loadPolicy(file, true), /cannot be read/);
    await writeFile(file, "workspace_classes:\n  a:\n    workspace_scope: per-agent\n");
    assert.equal(loadPolicy(file, true).classes.get("a")?.workspace_scope, "per-agent");
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
