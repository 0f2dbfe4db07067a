import assert from "node:assert/strict";
import http from "node:http";
import net from "node:net";
import { after, before, test } from "node:test";
import zlib from "node:zlib";
import { parseConfig } from "../config/index.js";
import { addressRefusedIn, createConnector } from "./connector.js";
import { OwnEndpoints } from "./own.js";
import { AddressRule } from "./rule.js";
import { LOOPBACK_SPELLINGS } from "../../test/support/spellings.js";

let allowed: http.Server;
let allowedPort = 0;
let recorder: net.Server;
let recorderPort = 0;
let connections = 0;
const own = new OwnEndpoints();

before(async () => {
  recorder = net.createServer((s) => {
    connections++;
    s.destroy();
  });
  await new Promise<void>((r) => recorder.listen(0, "::", r));
  recorderPort = (recorder.address() as net.AddressInfo).port;
  allowed = http.createServer((req, res) => {
    const u = new URL(req.url ?? "/", "http://x");
    if (u.pathname === "/to") {
      res.writeHead(Number(u.searchParams.get("status") ?? 302), {
        location: u.searchParams.get("url") ?? "/",
      });
      res.end();
      return;
    }
    if (u.pathname === "/gzip") {
      res.writeHead(200, { "content-encoding": "gzip", "content-type": "text/plain" });
      res.end(zlib.gzipSync("unzipped"));
      return;
    }
    if (u.pathname === "/stream") {
      res.writeHead(200, { "content-type": "text/event-stream" });
      res.write("data: 1\n\n");
      req.once("close", () => res.end());
      return;
    }
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      res.writeHead(201, { "content-type": "application/json", "set-cookie": ["a=1", "b=2"] });
      res.end(
        JSON.stringify({
          method: req.method,
          url: req.url,
          host: req.headers.host,
          auth: req.headers.authorization ?? null,
          body: Buffer.concat(chunks).toString(),
        }),
      );
    });
  });
  await new Promise<void>((r) => allowed.listen(0, "127.0.0.1", r));
  allowedPort = (allowed.address() as net.AddressInfo).port;
});

after(async () => {
  allowed.closeAllConnections();
  await new Promise((r) => allowed.close(r));
  await new Promise((r) => recorder.close(r));
});

const connector = () =>
  createConnector({
    rule: new AddressRule({
      bound: parseConfig({ WARREN_EGRESS_PRIVATE_ALLOW: `127.0.0.1:${allowedPort}` })
        .WARREN_EGRESS_PRIVATE_ALLOW,
      own,
    }),
    own,
    lookup: async (name) =>
      name === "allowed.test" ? ["127.0.0.1"] : name === "localhost" ? ["127.0.0.1", "::1"] : [],
  });

test("a fetch inside the bound goes through with its method, body, headers and Host", async () => {
  const f = connector();
  const r = await f(`http://allowed.test:${allowedPort}/x?y=1`, {
    method: "POST",
    body: "hello",
    headers: { authorization: "Bearer k" },
  });
  assert.equal(r.status, 201);
  assert.deepEqual(r.headers.getSetCookie(), ["a=1", "b=2"]);
  assert.deepEqual(await r.json(), {
    method: "POST",
    url: "/x?y=1",
    host: `allowed.test:${allowedPort}`,
    auth: "Bearer k",
    body: "hello",
  });
  assert.equal(await (await f(`http://127.0.0.1:${allowedPort}/gzip`)).text(), "unzipped");
});

test("every spelling of a loopback or refused address is refused with nothing sent", async () => {
  const f = connector();
  const before = connections;
  for (const host of ["127.0.0.1", ...LOOPBACK_SPELLINGS, "0177.0.0.1", "[::]"]) {
    const err = await f(`http://${host}:${recorderPort}/`).then(
      () => null,
      (e: unknown) => e,
    );
    assert.ok(addressRefusedIn(err), `${host}: ${String(err)}`);
  }
  const meta = await f("http://169.254.169.254/latest/meta-data/").catch((e: unknown) => e);
  assert.ok(addressRefusedIn(meta), String(meta));
  assert.equal(connections, before, "no connection reached the recording listener");
});

test("a redirect is followed only through the same check", async () => {
  const f = connector();
  const before = connections;
  const to = encodeURIComponent(`http://127.1:${recorderPort}/`);
  const err = await f(`http://127.0.0.1:${allowedPort}/to?url=${to}`).catch((e: unknown) => e);
  assert.ok(addressRefusedIn(err), String(err));
  assert.equal(connections, before);
  // manual: the redirect is the answer
  const manual = await f(`http://127.0.0.1:${allowedPort}/to?url=${to}`, { redirect: "manual" });
  assert.equal(manual.status, 302);
  // followed inside the bound, the key dropped when the origin changes, a 307 keeping the body
  const here = encodeURIComponent(`http://allowed.test:${allowedPort}/after`);
  const r = await f(`http://127.0.0.1:${allowedPort}/to?status=307&url=${here}`, {
    method: "POST",
    body: "again",
    headers: { authorization: "Bearer k" },
  });
  assert.equal(r.redirected, true);
  assert.deepEqual(await r.json(), {
    method: "POST",
    url: "/after",
    host: `allowed.test:${allowedPort}`,
    auth: null,
    body: "again",
  });
});

test("an answer streams and a signal stops it", async () => {
  const f = connector();
  const ac = new AbortController();
  const r = await f(`http://127.0.0.1:${allowedPort}/stream`, { signal: ac.signal });
  const reader = r.body!.getReader();
  const first = await reader.read();
  assert.equal(Buffer.from(first.value).toString(), "data: 1\n\n");
  ac.abort();
  await assert.rejects(reader.read());
  const already = new AbortController();
  already.abort();
  await assert.rejects(f(`http://127.0.0.1:${allowedPort}/`, { signal: already.signal }), {
    name: "AbortError",
  });
});

test("a connection the connector opened is known as the server's own while it is open", async () => {
  let seen: { address?: string; port?: number } = {};
  const probe = http.createServer((req, res) => {
    seen = { address: req.socket.remoteAddress, port: req.socket.remotePort };
    const mine = own.isOwnConnection(seen.address, seen.port);
    res.end(String(mine));
  });
  await new Promise<void>((r) => probe.listen(0, "127.0.0.1", r));
  const port = (probe.address() as net.AddressInfo).port;
  const f = createConnector({
    rule: new AddressRule({ bound: [{ text: "127.0.0.1", bytes: [127, 0, 0, 1], bits: 32 }], own }),
    own,
  });
  assert.equal(await (await f(`http://127.0.0.1:${port}/`)).text(), "true");
  probe.closeAllConnections();
  await new Promise((r) => probe.close(r));
});
