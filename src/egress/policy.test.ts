import assert from "node:assert/strict";
import { test } from "node:test";
import { parseIp } from "../contract/policy.js";
import {
  addressClass,
  addressListed,
  compilePolicy,
  formatIp,
  matchEntry,
  rulesAllow,
  rulesFor,
  targetOf,
} from "./policy.js";

const policy = (allow: string[], rules?: { host: string; methods?: string[]; paths?: string[] }[]) =>
  compilePolicy({ allow, ...(rules ? { rules } : {}) });
const target = (host: string, port: number) => {
  const t = targetOf(host, port);
  assert.ok(t, host);
  return t;
};

test("a name entry matches that name and port only; a wildcard only names below its domain", () => {
  const p = policy(["example.com:443", "*.example.org", "10.0.0.0/8", "[2001:db8::1]:443"]);
  assert.equal(matchEntry(p, target("example.com", 443)), "example.com:443");
  assert.equal(matchEntry(p, target("EXAMPLE.com.", 443)), "example.com:443");
  assert.equal(matchEntry(p, target("example.com", 80)), undefined);
  assert.equal(matchEntry(p, target("www.example.com", 443)), undefined);
  assert.equal(matchEntry(p, target("a.example.org", 80)), "*.example.org");
  assert.equal(matchEntry(p, target("a.b.example.org", 80)), "*.example.org");
  for (const h of ["example.org", "evilexample.org", "example.org.evil.test"])
    assert.equal(matchEntry(p, target(h, 80)), undefined, h);
  assert.equal(matchEntry(p, target("10.200.1.1", 5432)), "10.0.0.0/8");
  assert.equal(matchEntry(p, target("11.0.0.1", 5432)), undefined);
  assert.equal(matchEntry(p, target("[2001:db8:0::1]", 443)), "[2001:db8::1]:443");
  // a name never matches an IP entry's address, nor an IP a name entry
  assert.equal(matchEntry(policy(["1.2.3.4"]), target("one.test", 80)), undefined);
  assert.equal(matchEntry(policy(["example.com"]), target("93.184.216.34", 80)), undefined);
});

test("targets: malformed hosts and ports are refused", () => {
  for (const [h, p] of [
    ["*.example.com", 80],
    ["exa mple.com", 80],
    ["example.com", 0],
    ["example.com", 70000],
    ["a:b", 80],
    ["", 80],
  ] as const)
    assert.equal(targetOf(h, p), null, `${h}:${p}`);
});

test("address classes: loopback, private, link-local and mapped IPv4 are never public", () => {
  const cls = (a: string) => addressClass(parseIp(a) ?? []);
  assert.equal(cls("127.0.0.1"), "a loopback");
  assert.equal(cls("10.1.2.3"), "a private");
  assert.equal(cls("172.31.0.1"), "a private");
  assert.equal(cls("172.32.0.1"), null);
  assert.equal(cls("192.168.0.1"), "a private");
  assert.equal(cls("169.254.169.254"), "a link-local");
  assert.equal(cls("100.64.0.1"), "a private (shared)");
  assert.equal(cls("0.0.0.0"), "an unspecified");
  assert.equal(cls("224.0.0.1"), "a multicast");
  assert.equal(cls("93.184.216.34"), null);
  assert.equal(cls("::1"), "a loopback");
  assert.equal(cls("::"), "an unspecified");
  assert.equal(cls("fe80::1"), "a link-local");
  assert.equal(cls("fd00::1"), "a private");
  assert.equal(cls("::ffff:127.0.0.1"), "a loopback");
  assert.equal(cls("64:ff9b::10.0.0.1"), "a private");
  assert.equal(cls("2606:4700::1111"), null);
});

test("an address listed as an IP (for its port) may be reached", () => {
  const p = policy(["127.0.0.1:8080", "10.0.0.0/8"]);
  assert.equal(addressListed(p, [127, 0, 0, 1], 8080), true);
  assert.equal(addressListed(p, [127, 0, 0, 1], 8081), false);
  assert.equal(addressListed(p, [10, 9, 9, 9], 1), true);
  assert.equal(addressListed(p, [192, 168, 0, 1], 1), false);
});

test("formatIp writes the shortest IPv6 form", () => {
  for (const a of ["::1", "2001:db8::1", "fe80::", "::", "1:2:3:4:5:6:7:8", "1::5:6:7:8"])
    assert.equal(formatIp(parseIp(a) ?? []), a);
  assert.equal(formatIp([1, 2, 3, 4]), "1.2.3.4");
});

test("rules narrow methods and path prefixes; dot segments never pass", () => {
  const p = policy(["api.test"], [{ host: "api.test", methods: ["GET"], paths: ["/v1/"] }]);
  const rules = rulesFor(p, target("api.test", 80));
  assert.equal(rules.length, 1);
  assert.equal(rulesFor(p, target("other.test", 80)).length, 0);
  assert.equal(rulesAllow(rules, "GET", "/v1/items?x=1"), true);
  assert.equal(rulesAllow(rules, "POST", "/v1/items"), false);
  assert.equal(rulesAllow(rules, "GET", "/v2/items"), false);
  for (const path of ["/v1/../admin", "/v1/%2e%2e/admin", "/v1/%2E./admin", "/v1/./x", "/v1/..%2fadmin"])
    assert.equal(rulesAllow(rules, "GET", path), false, path);
  assert.equal(rulesAllow([], "DELETE", "/anything"), true);
});
