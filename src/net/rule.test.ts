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

test("the rule: never, own endpoints, the operator's bound, public", () => {
  const config = parseConfig({ WARREN_EGRESS_PRIVATE_ALLOW: "10.1.0.0/16,127.0.0.1:11434" });
  const rule = new AddressRule({
    bound: config.WARREN_EGRESS_PRIVATE_ALLOW,
    own: { listening: () => [{ address: [127, 0, 0, 1], port: 8080 }] },
    interfaces: () => [[192, 0, 2, 7]],
  });
  const judge = (s: string, port: number) => {
    const h = normaliseHost(s);
    assert.ok(h?.kind === "ip");
    return rule.judge(h.bytes, port).ok;
  };
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
