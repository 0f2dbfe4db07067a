// The OIDC sign-in's settings are the configuration's own: a missing or bad one is refused at
// start with the configuration's clear message, not found at the first sign-in.
import assert from "node:assert/strict";
import { test } from "node:test";
import { ConfigError, parseConfig } from "../../src/config/index.js";

const refused = (env: Record<string, string>, why: RegExp) =>
  assert.throws(
    () => parseConfig(env),
    (err: unknown) => err instanceof ConfigError && why.test(err.message),
  );

test("AUTH_MODE=oidc without its issuer or client id is refused, naming what is missing", () => {
  refused(
    { AUTH_MODE: "oidc", WARREN_OIDC_CLIENT_ID: "warren" },
    /WARREN_OIDC_ISSUER: AUTH_MODE=oidc needs WARREN_OIDC_ISSUER and WARREN_OIDC_CLIENT_ID/,
  );
  refused(
    { AUTH_MODE: "oidc", WARREN_OIDC_ISSUER: "https://login.example.com" },
    /WARREN_OIDC_CLIENT_ID: AUTH_MODE=oidc needs/,
  );
});

test("a WARREN_OIDC_ISSUER that is not an http or https URL is refused", () => {
  for (const bad of ["ftp://login.example.com", "login.example.com", "https://"])
    refused(
      { AUTH_MODE: "oidc", WARREN_OIDC_ISSUER: bad, WARREN_OIDC_CLIENT_ID: "warren" },
      /WARREN_OIDC_ISSUER must be an http or https URL/,
    );
});

test("good settings are the configuration's; another mode needs none", () => {
  const c = parseConfig({
    AUTH_MODE: "oidc",
    WARREN_OIDC_ISSUER: "https://login.example.com/realms/a",
    WARREN_OIDC_CLIENT_ID: "warren",
    WARREN_OIDC_CLIENT_SECRET: "",
  });
  assert.equal(c.WARREN_OIDC_ISSUER, "https://login.example.com/realms/a");
  assert.equal(c.WARREN_OIDC_CLIENT_ID, "warren");
  assert.equal(c.WARREN_OIDC_CLIENT_SECRET, undefined);
  assert.equal(c.extraEnv?.WARREN_OIDC_ISSUER, undefined, "not an extension's unknown variable");
  assert.equal(parseConfig({ AUTH_MODE: "trusted-header" }).WARREN_OIDC_ISSUER, undefined);
});
