import assert from "node:assert/strict";
import { test } from "node:test";
import { byPolicy, compilePolicy, matchEntry, rulesAllow, rulesFor, targetOf } from "./policy.js";

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

test("targets are normalised: every spelling of an address is that address", () => {
  for (const h of ["127.1", "2130706433", "0x7f000001", "[::ffff:127.0.0.1]", "127.0.0.1."])
    assert.equal(target(h, 80).host, "127.0.0.1", h);
  assert.equal(target("EXAMPLE.com.", 80).host, "example.com");
  // an IPv4 network written as IPv6 matches its IPv4 addresses
  assert.equal(matchEntry(policy(["::ffff:10.0.0.0/104"]), target("10.1.2.3", 80)), "::ffff:10.0.0.0/104");
  assert.equal(matchEntry(policy(["2130706433"]), target("127.0.0.1", 80)), undefined);
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

test("network.ask: a host outside the list that ask names is held, never one it does not name; the deny list and rules come first", () => {
  const named = compilePolicy({ allow: ["pkg.test:443"], ask: ["*.example.com", "api.example.org:8443"] });
  const plain = { method: "GET", path: "/" };
  assert.deepEqual(byPolicy(named, target("pkg.test", 443), null), { ok: true, by: "pkg.test:443" });
  assert.deepEqual(byPolicy(named, target("a.example.com", 443), null), { ok: true, by: "ask", ask: true });
  assert.deepEqual(byPolicy(named, target("api.example.org", 8443), plain), {
    ok: true,
    by: "ask",
    ask: true,
  });
  for (const [h, port] of [
    ["example.com", 443],
    ["evilexample.com", 443],
    ["api.example.org", 443],
    ["pkg.test", 80],
    ["93.184.216.34", 443],
  ] as const) {
    const d = byPolicy(named, target(h, port), null);
    assert.equal(d.ok, false, `${h}:${port}`);
    assert.match(d.ok ? "" : d.reason, /not in the agent's network allow list/);
  }
  // "*" as the whole of ask or one of its entries: every host outside the list
  for (const ask of ["*", ["*"], ["x.test", "*"]] as const) {
    const all = compilePolicy({ allow: [], ask: ask === "*" ? ask : [...ask] });
    assert.deepEqual(byPolicy(all, target("anything.test", 80), plain), { ok: true, by: "ask", ask: true });
    assert.deepEqual(byPolicy(all, target("10.1.2.3", 5432), null), { ok: true, by: "ask", ask: true });
  }
  // the organisation's deny list bounds ask as it bounds allow: refused, nobody asked
  const bounded = compilePolicy({ allow: [], ask: "*" }, ["*.evil.test"]);
  const denied = byPolicy(bounded, target("a.evil.test", 443), null);
  assert.equal(denied.ok, false);
  assert.match(denied.ok ? "" : denied.reason, /deny list/);
  // rules narrowing a host under ask: a tunnel is refused, a plain request outside them too
  const ruled = compilePolicy({
    allow: [],
    ask: ["api.example.com"],
    rules: [{ host: "api.example.com", methods: ["GET"], paths: ["/v1/"] }],
  });
  assert.equal(byPolicy(ruled, target("api.example.com", 443), null).ok, false);
  assert.equal(byPolicy(ruled, target("api.example.com", 80), { method: "POST", path: "/v1/x" }).ok, false);
  assert.deepEqual(byPolicy(ruled, target("api.example.com", 80), { method: "GET", path: "/v1/x" }), {
    ok: true,
    by: "ask",
    ask: true,
  });
  // no ask: nothing is held
  assert.equal(byPolicy(compilePolicy({ allow: [] }), target("a.example.com", 443), null).ok, false);
});
