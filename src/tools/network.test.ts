import assert from "node:assert/strict";
import { test } from "node:test";
import { isPublicAddress } from "./fetch.js";
import { urlAllowed } from "./network.js";

test("the allow-list: hosts, ports, wildcards and IP addresses", () => {
  const allow = ["example.com", "api.example.org:8443", "*.docs.example.net", "10.1.2.3:8080"];
  const ok = (u: string) => urlAllowed(allow, new URL(u));
  assert.equal(ok("https://example.com/x"), true);
  assert.equal(ok("http://EXAMPLE.com./x"), true);
  assert.equal(ok("https://example.com:8443/x"), false, "no port in the entry: the standard ports only");
  assert.equal(ok("https://sub.example.com/x"), false, "a name is not its subdomains");
  assert.equal(ok("https://api.example.org:8443/v1"), true);
  assert.equal(ok("https://api.example.org/v1"), false);
  assert.equal(ok("https://a.docs.example.net/"), true);
  assert.equal(ok("https://a.b.docs.example.net/"), true);
  assert.equal(ok("https://docs.example.net/"), false, "*.domain is not the domain itself");
  assert.equal(ok("https://evildocs.example.net/"), false);
  assert.equal(ok("http://10.1.2.3:8080/"), true);
  assert.equal(ok("http://10.1.2.3/"), false);
  assert.equal(ok("ftp://example.com/"), false);
  assert.equal(ok("file:///etc/passwd"), false);
  assert.equal(ok("http://[::1]/"), false);
  assert.equal(
    urlAllowed(["*.0.0.1"], new URL("http://127.0.0.1/")),
    false,
    "a wildcard never matches an address",
  );
  assert.equal(urlAllowed([], new URL("https://example.com/")), false);
});

test("public addresses: what a host name may lead to", () => {
  for (const a of ["93.184.216.34", "1.1.1.1", "2606:4700:4700::1111"])
    assert.equal(isPublicAddress(a), true, a);
  for (const a of [
    "127.0.0.1",
    "127.1.2.3",
    "10.0.0.1",
    "172.16.5.4",
    "192.168.1.1",
    "169.254.169.254",
    "100.64.0.1",
    "0.0.0.0",
    "224.0.0.1",
    "::1",
    "::",
    "fe80::1",
    "fd00::1",
    "::ffff:127.0.0.1",
    "::ffff:10.0.0.1",
    "not an address",
  ])
    assert.equal(isPublicAddress(a), false, a);
});
