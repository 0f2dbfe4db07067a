// The proxy alone, over loopback sockets standing in for bridged connections: the address
// rule whatever the policy says, the server's own endpoints, the policy as it is now for
// every request, a re-check that ends a revoked tunnel, what is recorded.
import assert from "node:assert/strict";
import http from "node:http";
import net from "node:net";
import type { AddressInfo } from "node:net";
import { after, before, test } from "node:test";
import { parseIp } from "../contract/policy.js";
import { AddressRule } from "../net/rule.js";
import { compilePolicy } from "./policy.js";
import { EgressProxy, type EgressRecord } from "./proxy.js";

const records: EgressRecord[] = [];
const tracked: net.Socket[] = [];
const hosts: Record<string, string> = {
  "own.test": "93.184.216.34",
  "up.test": "127.0.0.1",
  "meta.test": "169.254.169.254",
};
let upPort = 0;
const rule = new AddressRule({
  // the operator's bound: the upstream's loopback port only (read when judged)
  get bound() {
    return [{ text: "up", bytes: [127, 0, 0, 1], bits: 32, port: upPort }];
  },
  own: { listening: () => [{ address: [93, 184, 216, 34], port: 443 }] },
  interfaces: () => [],
});
const proxy = new EgressProxy({
  resolve: (h) => Promise.resolve(hosts[h] ? [parseIp(hosts[h]) as number[]] : []),
  rule,
  track: (s) => tracked.push(s),
  maxConnections: 8,
  onRecord: (r) => records.push(r),
});
let front: net.Server;
let upstream: http.Server;
let policy = compilePolicy({ allow: [] });

before(async () => {
  upstream = http.createServer((req, res) => res.end(`up ${req.method} ${req.url}`));
  await new Promise<void>((r) => upstream.listen(0, "127.0.0.1", r));
  upPort = (upstream.address() as AddressInfo).port;
  // each accepted socket stands in for a bridged connection of agent a; the policy is read per decision
  front = net.createServer({ allowHalfOpen: true }, (s) =>
    proxy.serve(s, { agentId: "agt_a", runId: () => "run_1", policy: () => Promise.resolve(policy) }),
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
function ask(text: string | Buffer): Promise<string> {
  return new Promise((resolve, reject) => {
    const s = net.connect((front.address() as AddressInfo).port, "127.0.0.1", () => s.write(text));
    let got = "";
    s.on("data", (d: Buffer) => {
      got += d.toString("latin1");
      if (got.includes("\r\n\r\n") && /^HTTP\/1.1 200 Connection/.test(got)) s.end();
    });
    s.on("end", () => resolve(got));
    s.on("error", reject);
  });
}

const until = async (what: string, ok: () => boolean) => {
  for (let i = 0; i < 500 && !ok(); i++) await new Promise((r) => setTimeout(r, 10));
  assert.ok(ok(), what);
};

test("a name resolving to one of the server's own endpoints is refused, whatever the policy lists", async () => {
  policy = compilePolicy({ allow: ["own.test:443", "93.184.216.34:443"] });
  const a = await ask("CONNECT own.test:443 HTTP/1.1\r\nHost: own.test:443\r\n\r\n");
  assert.match(a, /^HTTP\/1.1 403 Forbidden\r\n/);
  assert.match(a, /own\.test resolves to 93\.184\.216\.34:443 is the warren server's own endpoint\n$/);
  const b = await ask("CONNECT 93.184.216.34:443 HTTP/1.1\r\n\r\n");
  assert.match(b, /93\.184\.216\.34:443 is the warren server's own endpoint/);
  const r = records.at(-1);
  assert.equal(r?.decision, "refused");
  assert.equal(r?.runId, "run_1");
  assert.equal(r?.host, "93.184.216.34");
});

test("listed metadata and loopback outside the bound are refused in every spelling", async () => {
  policy = compilePolicy({
    allow: ["meta.test", "169.254.169.254", "127.0.0.0/8", "[::1]", "0.0.0.0/8", "localhost"],
  });
  for (const [target, why] of [
    ["meta.test:80", /meta\.test resolves to 169\.254\.169\.254 is a link-local \(metadata\) address/],
    ["169.254.169.254:80", /169\.254\.169\.254 is a link-local/],
    ["[::ffff:169.254.169.254]:80", /169\.254\.169\.254 is a link-local/],
    ["2130706433:22", /127\.0\.0\.1:22 is a loopback address outside the operator's bound/],
    ["0x7f000001:22", /127\.0\.0\.1:22 is a loopback/],
    ["127.1:22", /127\.0\.0\.1:22 is a loopback/],
    ["[::1]:22", /\[::1\]:22 is a loopback/],
    ["0.0.0.0:22", /0\.0\.0\.0 is an unspecified address/],
    ["LOCALHOST.:22", /localhost resolves to 127\.0\.0\.1:22 is a loopback/],
  ] as const) {
    const a = await ask(`CONNECT ${target} HTTP/1.1\r\n\r\n`);
    assert.match(a, /^HTTP\/1.1 403 Forbidden\r\n/, target);
    assert.match(a, why, target);
  }
  assert.equal(tracked.length, 0, "no upstream socket was opened");
});

test("a plain request goes to the checked address with its own Host, its socket tracked, and is recorded", async () => {
  policy = compilePolicy({ allow: [`up.test:${upPort}`] });
  const a = await ask(
    `POST http://up.test:${upPort}/x?y=1 HTTP/1.1\r\nHost: up.test:${upPort}\r\nContent-Length: 3\r\nProxy-Authorization: Basic eA==\r\nConnection: close\r\n\r\nabc`,
  );
  assert.match(a, /^HTTP\/1.1 200 OK\r\n/);
  assert.ok(a.endsWith("up POST /x?y=1"), a);
  await until("recorded", () => records.at(-1)?.decision === "allowed");
  const r = records.at(-1);
  assert.equal(r?.method, "POST");
  assert.equal(r?.path, "/x?y=1");
  assert.equal(r?.bytesOut, 3);
  assert.equal(r?.bytesIn, `up POST /x?y=1`.length);
  assert.equal(r?.reason, `allowed by up.test:${upPort}`);
  assert.equal(tracked.length, 1);
  assert.equal(tracked[0]?.remotePort ?? upPort, upPort);
});

test("an upstream that refuses is a 502, recorded as allowed with the failure", async () => {
  policy = compilePolicy({ allow: [`up.test:${upPort}`] });
  const saved = upPort;
  const dead = net.createServer();
  await new Promise<void>((r) => dead.listen(0, "127.0.0.1", r));
  upPort = (dead.address() as AddressInfo).port;
  await new Promise((r) => dead.close(r));
  try {
    policy = compilePolicy({ allow: [`up.test:${upPort}`] });
    const a = await ask(`CONNECT up.test:${upPort} HTTP/1.1\r\nHost: up.test:${upPort}\r\n\r\n`);
    assert.match(a, /^HTTP\/1.1 502 Bad Gateway\r\n/);
    assert.match(a, /the upstream failed: ECONNREFUSED/);
    await until("recorded", () => /ECONNREFUSED/.test(records.at(-1)?.reason ?? ""));
    assert.match(records.at(-1)?.reason ?? "", /allowed by up\.test:\d+; the upstream failed: ECONNREFUSED/);
  } finally {
    upPort = saved;
  }
});

test("open mode reaches public addresses only, even inside the bound; a malformed CONNECT is a 400, recorded", async () => {
  policy = compilePolicy({ mode: "open", allow: [] });
  const loop = await ask(`CONNECT up.test:${upPort} HTTP/1.1\r\n\r\n`);
  assert.match(loop, /up\.test resolves to an address that is not public \(127\.0\.0\.1\); open mode/);
  const n = records.length;
  const bad = await ask("CONNECT nonsense HTTP/1.1\r\nHost: x\r\n\r\n");
  assert.match(bad, /^HTTP\/1.1 400 Bad Request\r\n/);
  await until("recorded", () => records.length > n);
  assert.match(records.at(-1)?.reason ?? "", /CONNECT wants host:port/);
  const m = records.length;
  await ask("GET\0 / HTTP/1.1\r\n\r\n");
  await until("a request the parser cannot read is recorded", () => records.length > m);
  assert.match(records.at(-1)?.reason ?? "", /could not read the request \(HPE_/);
});

test("each request on a kept-alive connection is decided by the policy as it is now", async () => {
  policy = compilePolicy({ allow: [`up.test:${upPort}`] });
  const s = net.connect((front.address() as AddressInfo).port, "127.0.0.1");
  let got = "";
  s.on("data", (d: Buffer) => (got += d.toString()));
  const req = `GET http://up.test:${upPort}/k HTTP/1.1\r\nHost: up.test:${upPort}\r\n\r\n`;
  s.write(req);
  await until("the first answer", () => got.endsWith("up GET /k"));
  policy = compilePolicy({ allow: [] });
  s.write(req);
  await until("the second answer", () => /403 Forbidden/.test(got));
  assert.match(got, /is not in the agent's network allow list/);
  s.destroy();
});

test("a re-check ends a live tunnel whose entry was revoked, and records it", async () => {
  policy = compilePolicy({ allow: [`up.test:${upPort}`] });
  const s = net.connect((front.address() as AddressInfo).port, "127.0.0.1");
  let got = "";
  let closed = false;
  s.on("data", (d: Buffer) => (got += d.toString()));
  s.on("close", () => (closed = true));
  s.on("error", () => {});
  s.write(`CONNECT up.test:${upPort} HTTP/1.1\r\n\r\n`);
  await until("the tunnel", () => got.includes("200 Connection Established"));
  s.write(`GET /t HTTP/1.1\r\nHost: up.test\r\n\r\n`);
  await until("an answer through it", () => got.endsWith("up GET /t"));
  assert.deepEqual(proxy.liveAgents(), ["agt_a"]);
  // the same policy: it stays
  proxy.recheck("agt_a", compilePolicy({ allow: [`up.test:${upPort}`, "other.test"] }));
  assert.equal(closed, false);
  proxy.recheck("agt_a", compilePolicy({ allow: ["other.test"] }));
  await until("the tunnel ended", () => closed);
  const ended = records.find(
    (r) => r.decision === "refused" && /ended by a change of the policy/.test(r.reason),
  );
  assert.ok(ended, JSON.stringify(records.slice(-3)));
  assert.match(ended.reason, new RegExp(`up\\.test:${upPort} is not in the agent's network allow list`));
  assert.deepEqual(proxy.liveAgents(), []);
});

test("SOCKS5: a name holding a NUL is refused and recorded (printably); unsupported commands too", async () => {
  policy = compilePolicy({ allow: [] });
  const name = Buffer.from("up.test\0.evil");
  const n = records.length;
  const reply = await ask(
    Buffer.concat([
      Buffer.from([5, 1, 0, 5, 1, 0, 3, name.length]),
      name,
      Buffer.from([upPort >> 8, upPort & 255]),
    ]),
  );
  assert.equal(reply.charCodeAt(3), 8, "address type not supported");
  await until("recorded", () => records.length > n);
  const r = records.at(-1);
  assert.equal(r?.decision, "refused");
  assert.equal(r?.host, "up.test\\x00.evil");
  assert.match(r?.reason ?? "", /is not a host name or an IP/);
  assert.ok(!(r?.reason ?? "").includes("\0"));
  const m = records.length;
  await ask(Buffer.from([5, 1, 0, 5, 2, 0, 1, 1, 2, 3, 4, 0, 80]));
  await until("BIND recorded", () => records.length > m);
  assert.match(records.at(-1)?.reason ?? "", /SOCKS5 command 2 is not supported/);
});
