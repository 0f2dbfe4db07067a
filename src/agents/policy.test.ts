import assert from "node:assert/strict";
import { test } from "node:test";
import {
  networkEntryProblem,
  parseIp,
  parseNetworkEntry,
  SandboxPolicy as sandboxPolicySchema,
} from "../contract/policy.js";
import { fileAccessOf } from "./policy.js";

test("network entries: the allowed forms", () => {
  for (const ok of [
    "example.com",
    "api.example.com:443",
    "*.example.com",
    "*.example.com:8443",
    "1.2.3.4:80",
    "localhost",
    "10.0.0.0/8",
    "192.168.1.7/32",
    "::1",
    "[2001:db8::1]:443",
    "2001:db8::/32",
    "[::ffff:10.1.2.3]",
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
    "01.2.3.4",
    "10.0.0.0/33",
    "10.0.0.0/0",
    "::/0",
    "1.2.3.4/x",
    "[::1",
    "[::1]x",
    "1::2::3",
    "[1.2.3.4]",
    "example.com.",
  ]) {
    assert.notEqual(networkEntryProblem(bad), null, bad);
  }
});

test("network entries parse to what the proxy matches", () => {
  assert.deepEqual(parseNetworkEntry("*.Example.com:443"), {
    kind: "below",
    domain: "example.com",
    port: 443,
  });
  assert.deepEqual(parseNetworkEntry("10.1.0.0/16"), { kind: "ip", bytes: [10, 1, 0, 0], bits: 16 });
  assert.deepEqual(parseIp("::ffff:1.2.3.4")?.slice(10), [255, 255, 1, 2, 3, 4]);
  assert.deepEqual(parseIp("2001:db8::1"), [32, 1, 13, 184, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]);
  assert.equal(parseIp("1:2:3:4:5:6:7:8:9"), null);
});

test("network mode and rules", () => {
  const ok = sandboxPolicySchema.parse({
    network: {
      mode: "open",
      allow: [],
      rules: [{ host: "api.example.com", methods: ["GET"], paths: ["/v1/"] }],
    },
  });
  assert.equal(ok.network.mode, "open");
  for (const bad of [
    { mode: "everything" },
    { rules: [{ host: "*" }] },
    { rules: [{ host: "api.example.com:443" }] },
    { rules: [{ host: "x.com", methods: ["get"] }] },
    { rules: [{ host: "x.com", paths: ["v1"] }] },
    { rules: [{ host: "x.com", extra: 1 }] },
  ])
    assert.equal(sandboxPolicySchema.safeParse({ network: bad }).success, false, JSON.stringify(bad));
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

test('network.ask: host patterns as in allow, or "*" (alone or as an entry); nothing else', () => {
  for (const ask of ["*", ["*"], ["*.example.com", "api.example.org:8443", "10.0.0.0/8"], []])
    assert.equal(
      sandboxPolicySchema.safeParse({ network: { allow: [], ask } }).success,
      true,
      JSON.stringify(ask),
    );
  for (const ask of [
    "all",
    "*.example.com",
    ["*.com"],
    ["https://api.example.com/"],
    ["ex ample.com"],
    [""],
    Array.from({ length: 129 }, (_, i) => `h${i}.example.com`),
  ])
    assert.equal(
      sandboxPolicySchema.safeParse({ network: { allow: [], ask } }).success,
      false,
      JSON.stringify(ask),
    );
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
