import assert from "node:assert/strict";
import { test } from "node:test";
import { parseNetworkEntry } from "../contract/policy.js";
import { inRanges } from "./own.js";

const ranges = (...texts: string[]) =>
  texts.map((t) => {
    const e = parseNetworkEntry(t);
    if (typeof e === "string" || e.kind !== "ip")
      throw new Error(`${t}: ${typeof e === "string" ? e : "not an IP"}`);
    return { bytes: e.bytes, bits: e.bits };
  });

test("a peer in the trusted ranges, IPv4-mapped IPv6 as IPv4", () => {
  const r = ranges("127.0.0.1/32", "::1/128", "10.1.0.0/16");
  for (const yes of ["127.0.0.1", "::ffff:127.0.0.1", "::1", "10.1.200.3", "::ffff:10.1.0.1"])
    assert.equal(inRanges(yes, r), true, yes);
  for (const no of ["127.0.0.2", "10.2.0.1", "::2", "192.168.1.1", "", undefined, "localhost"])
    assert.equal(inRanges(no, r), false, String(no));
  assert.equal(inRanges("10.0.0.5", ranges("::ffff:10.0.0.0/104")), true);
  assert.equal(inRanges("127.0.0.1", []), false);
});
