import assert from "node:assert/strict";
import { test } from "node:test";
import { BoundedOutput } from "./output.js";

test("keeps output up to its limit, counts all of it, says when it cut", () => {
  const o = new BoundedOutput(5);
  o.push(Buffer.from("abc"));
  assert.equal(o.truncated, false);
  o.push(Buffer.from("defg"));
  o.push(Buffer.from("h"));
  assert.equal(o.text(), "abcde");
  assert.equal(o.total, 8);
  assert.equal(o.truncated, true);
  const exact = new BoundedOutput(3);
  exact.push(Buffer.from("xyz"));
  assert.equal(exact.truncated, false);
  assert.equal(exact.text(), "xyz");
});
