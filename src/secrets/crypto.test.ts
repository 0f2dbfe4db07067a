import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { test } from "node:test";
import { open, seal, SealError } from "./crypto.js";

test("a value sealed opens under its key and id only, with a fresh nonce each time", () => {
  const key = randomBytes(32);
  const value = Buffer.from("correct horse battery staple");
  const a = seal(key, "sec_aaaaaaaaaaaaaaaa", value);
  const b = seal(key, "sec_aaaaaaaaaaaaaaaa", value);
  assert.notEqual(a, b, "a fresh nonce per value");
  assert.ok(!a.includes(value.toString("base64")));
  assert.deepEqual(open(key, "sec_aaaaaaaaaaaaaaaa", a), value);
  assert.throws(() => open(randomBytes(32), "sec_aaaaaaaaaaaaaaaa", a), SealError, "another key");
  assert.throws(() => open(key, "sec_bbbbbbbbbbbbbbbb", a), SealError, "another row's id");
  const raw = Buffer.from(a.slice(3), "base64");
  raw[20] = raw[20]! ^ 1;
  assert.throws(
    () => open(key, "sec_aaaaaaaaaaaaaaaa", `v1.${raw.toString("base64")}`),
    SealError,
    "changed",
  );
  assert.throws(() => seal(Buffer.alloc(16), "x", value), /32 bytes/);
});
