import assert from "node:assert/strict";
import { test } from "node:test";
import { bodyText, bounded } from "./impl.js";

test("bodies: text as is, anything else by its type and size", () => {
  assert.equal(bodyText("text/html; charset=utf-8", Buffer.from("<p>hi</p>")), "<p>hi</p>");
  assert.equal(bodyText("application/json", Buffer.from('{"a":1}')), '{"a":1}');
  assert.equal(bodyText("application/vnd.api+json", Buffer.from("{}")), "{}");
  assert.equal(bodyText("", Buffer.from("plain")), "plain");
  assert.equal(bodyText("image/png", Buffer.alloc(10)), "[10 bytes of image/png, not shown]");
  assert.equal(bodyText("text/plain", Buffer.from([104, 0, 105])), "[3 bytes of text/plain, not shown]");
});

test("answers are cut at a limit on a character boundary, saying how much was left", () => {
  assert.equal(bounded("short", 10), "short");
  assert.equal(bounded("abcdefghijkl", 5), "abcde\n[... 7 more bytes not shown]");
  assert.equal(bounded("ééé", 3), "é\n[... 4 more bytes not shown]");
});
