import assert from "node:assert/strict";
import { test } from "node:test";
import { networkEntryProblem, SandboxPolicy as sandboxPolicySchema } from "../contract/policy.js";
import { fileAccessOf } from "./policy.js";

test("network entries: the allowed forms", () => {
  for (const ok of [
    "example.com",
    "api.example.com:443",
    "*.example.com",
    "*.example.com:8443",
    "1.2.3.4:80",
    "localhost",
  ]) {
    assert.equal(networkEntryProblem(ok), null, ok);
  }
});

test("network entries: the refused forms", () => {
  for (const bad of [
    "*",
    "*.com",
    "*:443",
    "a.*.com",
    "example.com:0",
    "example.com:70000",
    "",
    " x.com",
    "ex ample.com",
    "300.1.1.1:80",
    "-bad.com",
    "example.com:http",
  ]) {
    assert.notEqual(networkEntryProblem(bad), null, bad);
  }
});

test("policy schema defaults and strictness", () => {
  assert.deepEqual(sandboxPolicySchema.parse({}), { files: { read: [], write: [] }, network: { allow: [] } });
  assert.equal(sandboxPolicySchema.safeParse({ files: { read: ["relative"] } }).success, false);
  assert.equal(sandboxPolicySchema.safeParse({ files: { read: ["/a/../etc"] } }).success, false);
  assert.equal(sandboxPolicySchema.safeParse({ other: 1 }).success, false);
  assert.equal(sandboxPolicySchema.safeParse({ files: { read: [`/a/${"n".repeat(256)}`] } }).success, false);
  assert.equal(sandboxPolicySchema.safeParse({ files: { write: [`/a/${"n".repeat(255)}`] } }).success, true);
  assert.equal(sandboxPolicySchema.safeParse({ network: { allow: ["*"] } }).success, false);
});

test("a command's file access: the system, its home, /tmp and /dev, then the policy", () => {
  const empty = sandboxPolicySchema.parse({});
  const a = fileAccessOf(empty, { home: "/home/a", shared: false });
  assert.deepEqual(a.write, ["/home/a", "/tmp", "/dev"]);
  for (const p of ["/usr", "/etc", "/proc", "/data", "/opt/warren/contracts"])
    assert.ok(a.read.includes(p), p);
  assert.ok(!a.read.includes("/home") && !a.read.includes("/agent") && !a.read.includes("/"));
  const run = fileAccessOf(empty, { home: "/home/a", shared: true, agentDir: true });
  assert.ok(run.read.includes("/home") && run.read.includes("/agent"));
  const p = sandboxPolicySchema.parse({ files: { read: ["/home/b/pub", "/usr"], write: ["/home/b/drop"] } });
  const withPolicy = fileAccessOf(p, { home: "/home/a", shared: false });
  assert.ok(withPolicy.read.includes("/home/b/pub"));
  assert.equal(withPolicy.read.filter((x) => x === "/usr").length, 1, "no duplicates");
  assert.deepEqual(withPolicy.write, ["/home/a", "/tmp", "/dev", "/home/b/drop"]);
});
