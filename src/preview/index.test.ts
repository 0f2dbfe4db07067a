import assert from "node:assert/strict";
import { test } from "node:test";
import { fromBox, parsePreviewHost, PreviewGrants, previewOrigin, toBox } from "./index.js";

const who = { userId: "usr_1", email: "owner@example.com" };
const AGT = "agt_0123456789abcdef";
const OTHER = "agt_fedcba9876543210";

test("a token is spent by its first use, good for a minute, and only for its agent and port", () => {
  let now = 1_000_000;
  const g = new PreviewGrants(() => now);
  const t1 = g.issue(who, AGT, 20003, 7);
  const s1 = g.exchange(t1, AGT, 20003);
  assert.ok(s1);
  assert.equal(g.exchange(t1, AGT, 20003), null, "single use");
  assert.deepEqual(g.viewer(s1, AGT, 20003), { email: who.email, revision: 7 });
  assert.equal(g.viewer(s1, AGT, 20004), null);
  assert.equal(g.viewer(s1, OTHER, 20003), null);
  // a wrong address spends the token
  const t2 = g.issue(who, AGT, 20003, 7);
  assert.equal(g.exchange(t2, OTHER, 20003), null);
  assert.equal(g.exchange(t2, AGT, 20003), null);
  const t3 = g.issue(who, AGT, 20003, 7);
  assert.equal(g.exchange(t3, AGT, 20004), null);
  // expiry: a token after 60 s, a session after an hour
  const t4 = g.issue(who, AGT, 20003, 7);
  now += 60_001;
  assert.equal(g.exchange(t4, AGT, 20003), null);
  const t5 = g.issue(who, AGT, 20003, 7);
  now += 59_000;
  const s5 = g.exchange(t5, AGT, 20003);
  assert.ok(s5);
  now += 3_600_001;
  assert.equal(g.viewer(s5, AGT, 20003), null);
  assert.equal(g.viewer(s1, AGT, 20003), null);
  // a session ended (its viewer's access changed) is gone
  const t6 = g.issue(who, AGT, 20003, 8);
  const s6 = g.exchange(t6, AGT, 20003)!;
  assert.equal(g.viewer(s6, AGT, 20003)?.revision, 8);
  g.end(s6);
  assert.equal(g.viewer(s6, AGT, 20003), null);
});

test("preview hosts: <port>-<agent id> under localhost or the preview domain, nothing else", () => {
  assert.deepEqual(parsePreviewHost(`20003-${AGT}.localhost:3001`, undefined), { port: 20003, agentId: AGT });
  assert.deepEqual(parsePreviewHost(`20003-${AGT}.PREVIEW.example.com`, "preview.example.com"), {
    port: 20003,
    agentId: AGT,
  });
  for (const h of [
    `20003-${AGT}.preview.example.com`, // no domain configured
    `20003-${AGT}.localhost.evil.com`,
    `020003-${AGT}.localhost`,
    `0-${AGT}.localhost`,
    `70000-${AGT}.localhost`,
    `20003-agt_short.localhost`,
    `x.20003-${AGT}.localhost`,
    "localhost:3001",
    "127.0.0.1:3001",
    undefined,
  ])
    assert.equal(parsePreviewHost(h, undefined), null, String(h));
  assert.equal(parsePreviewHost(`20003-${AGT}.evil.example.com`, "preview.example.com"), null);
});

test("the preview's origin: loopback with the listener's port, or the domain with PUBLIC_BASE_URL's scheme", () => {
  assert.equal(
    previewOrigin({ PUBLIC_BASE_URL: undefined, WARREN_PREVIEW_DOMAIN: undefined }, 3001, AGT, 20003),
    `http://20003-${AGT}.localhost:3001`,
  );
  assert.equal(
    previewOrigin(
      { WARREN_PREVIEW_DOMAIN: "p.example.com", PUBLIC_BASE_URL: "https://w.example.com" },
      3001,
      AGT,
      20003,
    ),
    `https://20003-${AGT}.p.example.com`,
  );
  assert.equal(
    previewOrigin(
      { WARREN_PREVIEW_DOMAIN: "p.example.com", PUBLIC_BASE_URL: "http://w.example.com:8080" },
      3001,
      AGT,
      1,
    ),
    `http://1-${AGT}.p.example.com`,
  );
});

test("no credential of the viewer reaches the box, no cookie of the box reaches the browser", () => {
  const sent = toBox(
    {
      accept: "text/html",
      cookie: "a=1",
      authorization: "Bearer x",
      "proxy-authorization": "Basic x",
      "x-forwarded-email": "owner@example.com",
      "x-auth-email": "owner@example.com",
      "x-forwarded-for": "1.2.3.4",
      "x-forwarded-proto": "https",
      forwarded: "for=1.2.3.4",
      host: "x",
      connection: "keep-alive",
      "content-length": "3",
    },
    "x-auth-email",
  );
  assert.deepEqual(sent, { accept: "text/html", "content-length": "3" });
  const back = fromBox({
    "content-type": "text/html",
    "set-cookie": ["a=1; Domain=localhost", "b=2"],
    "transfer-encoding": "chunked",
    "content-length": "9",
  });
  assert.deepEqual(back, { "content-type": "text/html", "x-content-type-options": "nosniff" });
});
