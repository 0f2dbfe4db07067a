import assert from "node:assert/strict";
import { test } from "node:test";
import { envelopeOf, errorFromAnswer, isWarrenApiError, WarrenApiError } from "./errors.js";

test("the envelope gives status, code and message", () => {
  const err = errorFromAnswer(
    409,
    "Conflict",
    '{"error":{"code":"machine.not_empty","message":"delete its agents first"}}',
  );
  assert.ok(err instanceof WarrenApiError && err instanceof Error);
  assert.ok(isWarrenApiError(err));
  assert.equal(err.name, "WarrenApiError");
  assert.equal(err.status, 409);
  assert.equal(err.code, "machine.not_empty");
  assert.equal(err.message, "delete its agents first");
});

test("a body that is not the envelope gives http.<status> and a short excerpt", () => {
  const html = errorFromAnswer(502, "Bad Gateway", "<html>\n  <body>upstream down</body>\n</html>");
  assert.equal(html.code, "http.502");
  assert.equal(html.status, 502);
  assert.equal(html.message, "Bad Gateway: <html> <body>upstream down</body> </html>");
  assert.equal(errorFromAnswer(500, "", "").message, "the server answered without an error envelope");
  assert.ok(errorFromAnswer(500, "x", "y".repeat(5000)).message.length < 250);
  assert.equal(errorFromAnswer(404, "Not Found", '{"error":"plain"}').code, "http.404");
  assert.equal(errorFromAnswer(404, "Not Found", '{"error":{"code":""}}').code, "http.404");
});

test("envelopeOf accepts only {error: {code: string}}", () => {
  assert.deepEqual(envelopeOf({ error: { code: "x.y", message: "m" } }), { code: "x.y", message: "m" });
  assert.deepEqual(envelopeOf({ error: { code: "x.y" } }), { code: "x.y", message: "x.y" });
  for (const v of [null, 1, "s", [], {}, { error: null }, { error: { code: 5 } }])
    assert.equal(envelopeOf(v), null);
});
