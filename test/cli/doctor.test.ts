// `warren doctor` looks at the server it is pointed at, not only at this host: a real server
// (trusted-header mode, PGlite) answers ready and takes the caller; a URL nothing answers on,
// or a caller the server refuses, is said so and, the server being named, exits 1.
import assert from "node:assert/strict";
import net from "node:net";
import { after, before, describe, test } from "node:test";
import { runWarren } from "../support/cli.js";
import { startTestServer, type TestServer } from "../support/server.js";

/** A loopback port nothing listens on (taken, then let go). */
async function deadPort(): Promise<number> {
  const s = net.createServer();
  await new Promise<void>((r) => s.listen(0, "127.0.0.1", r));
  const port = (s.address() as net.AddressInfo).port;
  await new Promise((r) => s.close(r));
  return port;
}

describe("warren doctor and the server it is pointed at", () => {
  let t: TestServer;
  before(async () => {
    t = await startTestServer({ listen: true, env: { AUTH_MODE: "trusted-header" } });
  });
  after(async () => {
    await t?.close();
  });

  test("a ready server that takes the caller is reported ready, with the caller's organisations", async () => {
    const r = await runWarren(["doctor"], { url: t.url, as: "doc@example.com" });
    assert.match(r.stdout, new RegExp(`server at ${t.url!.replace(/[.]/g, "\\.")}: ready`));
    assert.match(r.stdout, /member of 0 organisation/);
    // the host's own checks are printed too
    assert.match(r.stdout, /warren (can start|would refuse to start)/);
    if (/warren can start/.test(r.stdout)) assert.equal(r.code, 0, r.output);
  });

  test("a caller the server refuses is told why, and doctor fails", async () => {
    const r = await runWarren(["doctor"], { url: t.url });
    assert.match(r.stdout, /ready, but it refuses you: auth\.required/);
    assert.equal(r.code, 1);
  });

  test("a named server that does not answer is said so, and doctor fails", async () => {
    const url = `http://127.0.0.1:${await deadPort()}`;
    const r = await runWarren(["doctor"], { url, as: "doc@example.com" });
    assert.match(r.stdout, new RegExp(`server at ${url.replace(/[.]/g, "\\.")}: not answering`));
    assert.equal(r.code, 1);
  });
});
