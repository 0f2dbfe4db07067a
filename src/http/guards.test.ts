import assert from "node:assert/strict";
import { test } from "node:test";
import { hostAllowed, isStateChange, originAllowed } from "./guards.js";

test("hosts: loopback names and PUBLIC_BASE_URL only", () => {
  for (const h of [
    "127.0.0.1:8080",
    "localhost",
    "localhost:80",
    "[::1]:8080",
    "127.9.9.9",
    "app.localhost:1",
  ]) {
    assert.equal(hostAllowed(h, undefined), true, h);
  }
  for (const h of [
    undefined,
    "",
    "evil.com",
    "10.0.0.1:8080",
    "127.0.0.1.evil.com",
    "[::2]",
    "a b",
    "x@127.0.0.1",
  ]) {
    assert.equal(hostAllowed(h, undefined), false, String(h));
  }
  assert.equal(hostAllowed("warren.example.com", "https://warren.example.com"), true);
  assert.equal(hostAllowed("warren.example.com:443", "https://warren.example.com"), true);
  assert.equal(hostAllowed("other.example.com", "https://warren.example.com"), false);
});

test("origins: same site or none", () => {
  assert.equal(originAllowed(undefined, "127.0.0.1:8080", undefined), true);
  assert.equal(originAllowed("http://127.0.0.1:8080", "127.0.0.1:8080", undefined), true);
  assert.equal(originAllowed("http://localhost:8080", "127.0.0.1:8080", undefined), true);
  assert.equal(originAllowed("http://localhost:9999", "127.0.0.1:8080", undefined), false);
  assert.equal(originAllowed("https://evil.com", "127.0.0.1:8080", undefined), false);
  assert.equal(originAllowed("null", "127.0.0.1:8080", undefined), false);
  assert.equal(
    originAllowed("https://warren.example.com", "warren.example.com", "https://warren.example.com"),
    true,
  );
  assert.equal(
    originAllowed("https://evil.example.com", "warren.example.com", "https://warren.example.com"),
    false,
  );
  assert.equal(isStateChange("GET"), false);
  assert.equal(isStateChange("post"), true);
});
