// The proxy alone, over loopback sockets standing in for bridged connections: the server's
// own addresses, an upstream that fails, what is recorded.
import assert from "node:assert/strict";
import http from "node:http";
import net from "node:net";
import type { AddressInfo } from "node:net";
import { after, before, test } from "node:test";
import { parseIp } from "../contract/policy.js";
import { compilePolicy } from "./policy.js";
import { EgressProxy, type EgressRecord } from "./proxy.js";

const records: EgressRecord[] = [];
const hosts: Record<string, string> = {
  "own.test": "93.184.216.34",
  "up.test": "127.0.0.1",
};
const proxy = new EgressProxy({
  resolve: (h) => Promise.resolve(hosts[h] ? [parseIp(hosts[h]) as number[]] : []),
  ownAddresses: () => new Set(["93.184.216.34"]),
  maxConnections: 8,
  onRecord: (r) => records.push(r),
});
let front: net.Server;
let upstream: http.Server;
let upPort = 0;
let policy = compilePolicy({ allow: [] });

before(async () => {
  upstream = http.createServer((req, res) => res.end(`up ${req.method} ${req.url}`));
  await new Promise<void>((r) => upstream.listen(0, "127.0.0.1", r));
  upPort = (upstream.address() as AddressInfo).port;
  // each accepted socket stands in for a bridged connection of agent a
  front = net.createServer({ allowHalfOpen: true }, (s) =>
    proxy.serve(s, { agentId: "agt_a", runId: () => "run_1", policy }),
  );
  await new Promise<void>((r) => front.listen(0, "127.0.0.1", r));
});
after(async () => {
  proxy.close();
  await new Promise((r) => front.close(r));
  upstream.closeAllConnections();
  await new Promise((r) => upstream.close(r));
});

/** Sends raw text to the proxy and reads its whole answer. */
function ask(text: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const s = net.connect((front.address() as AddressInfo).port, "127.0.0.1", () => s.write(text));
    let got = "";
    s.on("data", (d: Buffer) => {
      got += d.toString();
      if (got.includes("\r\n\r\n") && /^HTTP\/1.1 200 Connection/.test(got)) s.end();
    });
    s.on("end", () => resolve(got));
    s.on("error", reject);
  });
}

test("a name resolving to one of the server's own addresses is refused unless listed", async () => {
  policy = compilePolicy({ allow: ["own.test:443"] });
  const a = await ask("CONNECT own.test:443 HTTP/1.1\r\nHost: own.test:443\r\n\r\n");
  assert.match(a, /^HTTP\/1.1 403 Forbidden\r\n/);
  assert.match(
    a,
    /own\.test resolves to the server's own address \(93\.184\.216\.34\) not listed as an IP\n$/,
  );
  const r = records.at(-1);
  assert.equal(r?.decision, "refused");
  assert.equal(r?.runId, "run_1");
  assert.equal(r?.host, "own.test");
});

test("a plain request goes to the checked address with its own Host, and is recorded", async () => {
  policy = compilePolicy({ allow: [`up.test:${upPort}`, `127.0.0.1:${upPort}`] });
  const a = await ask(
    `POST http://up.test:${upPort}/x?y=1 HTTP/1.1\r\nHost: up.test:${upPort}\r\nContent-Length: 3\r\nProxy-Authorization: Basic eA==\r\nConnection: close\r\n\r\nabc`,
  );
  assert.match(a, /^HTTP\/1.1 200 OK\r\n/);
  assert.ok(a.endsWith("up POST /x?y=1"), a);
  await new Promise((r) => setTimeout(r, 50));
  const r = records.at(-1);
  assert.equal(r?.decision, "allowed");
  assert.equal(r?.method, "POST");
  assert.equal(r?.path, "/x?y=1");
  assert.equal(r?.bytesOut, 3);
  assert.equal(r?.bytesIn, `up POST /x?y=1`.length);
  assert.equal(r?.reason, `allowed by up.test:${upPort}`);
});

test("an upstream that refuses is a 502, recorded as allowed with the failure", async () => {
  const dead = net.createServer();
  await new Promise<void>((r) => dead.listen(0, "127.0.0.1", r));
  const port = (dead.address() as AddressInfo).port;
  await new Promise((r) => dead.close(r));
  policy = compilePolicy({ allow: [`up.test:${port}`, `127.0.0.1:${port}`] });
  const a = await ask(`CONNECT up.test:${port} HTTP/1.1\r\nHost: up.test:${port}\r\n\r\n`);
  assert.match(a, /^HTTP\/1.1 502 Bad Gateway\r\n/);
  assert.match(a, /the upstream failed: ECONNREFUSED/);
  await new Promise((r) => setTimeout(r, 50));
  assert.match(records.at(-1)?.reason ?? "", /allowed by up\.test:\d+; the upstream failed: ECONNREFUSED/);
});

test("open mode allows any name whose address may be reached, and a malformed CONNECT is a 400", async () => {
  policy = compilePolicy({ mode: "open", allow: [`127.0.0.1:${upPort}`] });
  const a = await ask(
    `GET http://up.test:${upPort}/o HTTP/1.1\r\nHost: up.test:${upPort}\r\nConnection: close\r\n\r\n`,
  );
  assert.ok(a.endsWith("up GET /o"), a);
  await new Promise((r) => setTimeout(r, 50));
  assert.equal(records.at(-1)?.reason, "allowed by open mode");
  policy = compilePolicy({ mode: "open", allow: [] });
  const loop = await ask(`CONNECT up.test:${upPort} HTTP/1.1\r\n\r\n`);
  assert.match(loop, /resolves to a loopback address/);
  const bad = await ask("CONNECT nonsense HTTP/1.1\r\nHost: x\r\n\r\n");
  assert.match(bad, /^HTTP\/1.1 400 Bad Request\r\n/);
});
