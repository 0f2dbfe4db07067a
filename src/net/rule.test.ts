import assert from "node:assert/strict";
import { test } from "node:test";
import { parseConfig } from "../config/index.js";
import { AddressRule, normaliseHost, overlaps, type Host } from "./rule.js";

const ip = (h: Host | null) => (h?.kind === "ip" ? h.text : h?.kind === "name" ? `name:${h.name}` : null);

test("every spelling of a loopback address normalises to it", () => {
  for (const s of [
    "127.0.0.1",
    "127.1",
    "2130706433",
    "0x7f000001",
    "0x7f.0.0.1",
    "0177.0.0.1",
    "127.0.0.1.",
    "[::ffff:127.0.0.1]",
    "::ffff:7f00:1",
    "[::ffff:7f00:1]",
  ])
    assert.equal(ip(normaliseHost(s)), "127.0.0.1", s);
  assert.equal(ip(normaliseHost("[::1]")), "::1");
  assert.equal(ip(normaliseHost("0")), "0.0.0.0");
  assert.equal(ip(normaliseHost("[::]")), "::");
  assert.equal(ip(normaliseHost("LocalHost.")), "name:localhost");
  assert.equal(ip(normaliseHost("Example.COM")), "name:example.com");
});

test("malformed hosts are refused", () => {
  for (const s of [
    "",
    "a b",
    "evil\0.com",
    "user@host",
    "a/b",
    "4294967296",
    "1.2.3.4.5",
    "[1.2.3.4]",
    "ex%41mple.com",
  ])
    assert.equal(normaliseHost(s), null, JSON.stringify(s));
});

/** The rule of a server on 127.0.0.1:8080, its host's interface 192.0.2.7, under an operator's bound. */
const serverRule = () => {
  const config = parseConfig({ WARREN_EGRESS_PRIVATE_ALLOW: "10.1.0.0/16,127.0.0.1:11434" });
  return new AddressRule({
    bound: config.WARREN_EGRESS_PRIVATE_ALLOW,
    own: { listening: () => [{ address: [127, 0, 0, 1], port: 8080 }] },
    interfaces: () => [[192, 0, 2, 7]],
  });
};

/** The bytes of an address, given in one of its spellings. */
const ipBytes = (s: string) => {
  const h = normaliseHost(s);
  assert.ok(h?.kind === "ip", s);
  return h.bytes;
};

test("the rule: never, own endpoints, the operator's bound, public", () => {
  const rule = serverRule();
  const judge = (s: string, port: number) => rule.judge(ipBytes(s), port).ok;
  assert.equal(judge("127.0.0.1", 11434), true);
  assert.equal(judge("127.1", 11435), false);
  assert.equal(judge("127.0.0.1", 8080), false);
  assert.equal(judge("127.0.0.2", 8080), false, "another loopback address of the server's port");
  assert.equal(judge("10.1.2.3", 5432), true);
  assert.equal(judge("10.2.0.1", 80), false);
  assert.equal(judge("169.254.169.254", 80), false);
  assert.equal(judge("[fd00:ec2::254]", 80), false);
  assert.equal(judge("0.0.0.0", 11434), false);
  assert.equal(judge("[::]", 80), false);
  assert.equal(judge("192.0.2.7", 443), false, "the host's own interface address");
  assert.equal(judge("93.184.216.34", 443), true);
  assert.equal(judge("[::ffff:169.254.169.254]", 80), false);
  assert.equal(judge("[64:ff9b::a9fe:a9fe]", 80), false, "NAT64 of the metadata address");
});

test("ranges overlap when one holds the other", () => {
  assert.equal(overlaps({ bytes: [0, 0, 0, 0], bits: 1 }, { bytes: [10, 0, 0, 0], bits: 8 }), true);
  assert.equal(overlaps({ bytes: [128, 0, 0, 0], bits: 1 }, { bytes: [10, 0, 0, 0], bits: 8 }), false);
});

test("policy entries: what no policy may hold, and the operator's bound", async () => {
  const { parseNetworkEntry } = await import("../contract/policy.js");
  const config = parseConfig({ WARREN_EGRESS_PRIVATE_ALLOW: "10.1.0.0/16,127.0.0.1:11434,127.0.0.0/8" });
  const rule = new AddressRule({
    bound: config.WARREN_EGRESS_PRIVATE_ALLOW,
    own: { listening: () => [{ address: [127, 0, 0, 1], port: 8080 }] },
    interfaces: () => [[203, 0, 113, 7]],
  });
  const problem = (text: string) => {
    const e = parseNetworkEntry(text);
    assert.ok(typeof e !== "string", `${text}: ${typeof e === "string" ? e : ""}`);
    return rule.entryProblem(e);
  };
  for (const ok of [
    "example.com",
    "*.example.com:443",
    "93.184.216.34",
    "1.0.0.0/8",
    "10.1.2.0/24",
    "10.1.0.0/16",
    "127.0.0.1:11434",
    "127.0.0.5:9000",
    "[2001:db8::1]:443",
    "2001:db8::/32",
  ])
    assert.equal(problem(ok), null, ok);
  for (const [bad, why] of [
    ["127.0.0.1:8080", /the warren server's own endpoint \(port 8080\)/],
    ["127.0.0.9:8080", /own endpoint/],
    ["127.0.0.0/8", /own endpoint \(port 8080\)[^]*name the ports/],
    ["203.0.113.7:8080", /own endpoint/],
    ["203.0.113.7:443", /this host's own address \(203\.0\.113\.7:443\) outside the operator's bound/],
    ["203.0.113.0/24", /own endpoint \(port 8080\)/],
    ["169.254.169.254", /link-local \(metadata\) address \(169\.254\.0\.0\/16\)/],
    ["169.254.0.0/16", /link-local/],
    ["[fd00:ec2::254]", /metadata/],
    ["::ffff:169.254.169.254", /link-local/],
    ["0.0.0.0/1", /wider than a \/8/],
    ["128.0.0.0/1", /wider than a \/8/],
    ["0.0.0.0/8", /unspecified/],
    ["224.0.0.0/8", /multicast/],
    ["10.0.0.0/8", /private addresses \(10\.0\.0\.0\/8\) outside the operator's bound/],
    ["10.2.0.1", /private address \(10\.2\.0\.1\) outside/],
    ["8.0.0.0/7", /wider than a \/8/],
    ["[::1]:443", /loopback address \(\[::1\]:443\) outside/],
    ["[::1]", /own endpoint/],
    ["fc00::/7", /wider than a \/32/],
    ["fd12::/32", /private addresses \(fd12::\/32\) outside/],
    ["::/96", /IPv4 addresses written as IPv6|unspecified/],
    ["64:ff9b::/32", /IPv4 addresses written as IPv6/],
    ["localhost:11434", /names this host/],
    ["*.app.localhost", /names this host/],
  ] as const) {
    const p = problem(bad);
    assert.ok(p !== null && why.test(p), `${bad}: ${p}`);
  }
  // addresses in other spellings are not host names: the schema refuses them
  for (const s of ["0x7f000001", "127.1", "2130706433", "a.0x10", "example.com."])
    assert.equal(typeof parseNetworkEntry(s), "string", s);
  assert.match(
    rule.entryProblem({ kind: "host", host: "0x7f000001" }) ?? "",
    /spells the address 127\.0\.0\.1/,
  );
});

test("an IPv6 address that carries a refused IPv4 (6to4, Teredo, NAT64, mapped) is refused like it, in every spelling", () => {
  const rule = serverRule();
  const judge = (s: string, port: number) => rule.judge(ipBytes(s), port);
  // 169.254.169.254 (the metadata address) carried every way
  for (const s of [
    // 6to4: the IPv4 in bits 16..47
    "2002:a9fe:a9fe::",
    "2002:a9fe:a9fe::1",
    "2002:A9FE:A9FE::1",
    "2002:a9fe:a9fe:0000:0000:0000:0000:0001",
    "[2002:a9fe:a9fe:1:2:3:4:5]",
    // Teredo: the client's IPv4 is the last 32 bits, inverted (56 01 56 01)
    "2001:0:4136:e378:8000:63bf:5601:5601",
    "2001:0000:4136:E378:8000:63BF:5601:5601",
    "2001::5601:5601",
    "2001:0:4136:e378:8000:63bf:86.1.86.1",
    // NAT64, well-known prefix and local-use prefix (a /96 and a /48 of it)
    "64:ff9b::a9fe:a9fe",
    "64:FF9B::169.254.169.254",
    "0064:ff9b:0000:0000:0000:0000:a9fe:a9fe",
    "64:ff9b:1::a9fe:a9fe",
    "64:ff9b:1::169.254.169.254",
    "64:ff9b:1:a9fe:a9:fe00::",
    // mapped and compatible
    "::ffff:169.254.169.254",
    "::FFFF:A9FE:A9FE",
    "0:0:0:0:0:ffff:a9fe:a9fe",
    "[::169.254.169.254]",
  ]) {
    const v = judge(s, 80);
    assert.equal(v.ok, false, s);
    assert.match(v.ok ? "" : v.reason, /169\.254\.169\.254[^]*link-local/, s);
  }
  // a loopback or private IPv4 carried is refused outside the bound, reached inside it
  for (const [s, port, ok] of [
    ["2002:7f00:1::", 11434, true],
    ["2002:7f00:1::", 80, false],
    ["2002:7f00:1::", 8080, false],
    ["2001:0:4136:e378:8000:63bf:80ff:fffe", 11434, true],
    ["2001:0:4136:e378:8000:63bf:80ff:fffe", 22, false],
    ["64:ff9b::7f00:1", 11434, true],
    ["64:ff9b:1::a01:203", 5432, true],
    ["64:ff9b:1::a02:1", 5432, false],
    ["2002:a01:203::", 5432, true],
    ["2002:a02:1::", 5432, false],
    ["2002:c000:207::", 443, false],
    ["2002:0:0::1", 80, false],
    // public IPv4 carried: reached as the IPv4 is
    ["2002:5db8:d822::1", 443, true],
    ["2001:0:4136:e378:8000:63bf:a247:27dd", 443, true],
    ["64:ff9b:1::5db8:d822", 443, true],
    ["2001:db8::1", 443, true],
  ] as const)
    assert.equal(judge(s, port).ok, ok, `${s} port ${port}`);
});

test("a policy entry that is an IPv6 address carrying a refused IPv4, or a range of such, is refused", async () => {
  const { parseNetworkEntry } = await import("../contract/policy.js");
  const config = parseConfig({ WARREN_EGRESS_PRIVATE_ALLOW: "10.1.0.0/16" });
  const rule = new AddressRule({
    bound: config.WARREN_EGRESS_PRIVATE_ALLOW,
    own: { listening: () => [] },
    interfaces: () => [],
  });
  const problem = (text: string) => {
    const e = parseNetworkEntry(text);
    assert.ok(typeof e !== "string", `${text}: ${typeof e === "string" ? e : ""}`);
    return rule.entryProblem(e);
  };
  for (const [bad, why] of [
    ["2002:a9fe:a9fe::1", /carries 169\.254\.169\.254[^]*link-local/],
    ["[2002:A9FE:A9FE::1]:80", /carries 169\.254\.169\.254/],
    ["2001:0:4136:e378:8000:63bf:5601:5601", /carries 169\.254\.169\.254/],
    ["64:ff9b:1::169.254.169.254", /carries 169\.254\.169\.254/],
    ["2002:a02:1::", /carries 10\.2\.0\.1[^]*outside the operator's bound/],
    ["2002::/16", /wider than a \/32/],
    ["2002:a9fe::/32", /carry IPv4 ones/],
    ["2001::/32", /carry IPv4 ones/],
    ["64:ff9b:1::/48", /carry IPv4 ones/],
  ] as const)
    assert.match(problem(bad) ?? "(allowed)", why, bad);
  for (const ok of ["2002:5db8:d822::1", "2002:a01:203::", "2001:db8::/32", "[2001:db8::1]:443"])
    assert.equal(problem(ok), null, ok);
});
