import assert from "node:assert/strict";
import http from "node:http";
import net from "node:net";
import { after, before, test } from "node:test";
import { parseConfig } from "../config/index.js";
import { addressRefusedIn, createConnector } from "./connector.js";
import { OwnEndpoints } from "./own.js";
import { parseOutboundProxy, type OutboundProxy } from "./proxy.js";
import { AddressRule } from "./rule.js";
import { startConnectProxy, type ConnectProxy } from "../../test/support/connect-proxy.js";

// a target on loopback (inside the operator's bound) and a CONNECT proxy on loopback that
// records every tunnel it is asked for
let target: http.Server;
let targetPort = 0;
let proxy: ConnectProxy;
let proxyPort = 0;
const own = new OwnEndpoints();

before(async () => {
  target = http.createServer((req, res) => {
    res.writeHead(200, { "content-type": "application/json" });
    res.end(
      JSON.stringify({ url: req.url, host: req.headers.host, auth: req.headers.authorization ?? null }),
    );
  });
  await new Promise<void>((r) => target.listen(0, "127.0.0.1", r));
  targetPort = (target.address() as net.AddressInfo).port;
  proxy = await startConnectProxy();
  proxyPort = proxy.port;
});

after(async () => {
  target.closeAllConnections();
  await new Promise((r) => target.close(r));
  await proxy.close();
});

const connector = (p: OutboundProxy | undefined) =>
  createConnector({
    rule: new AddressRule({
      bound: parseConfig({ WARREN_EGRESS_PRIVATE_ALLOW: `127.0.0.1:${targetPort}` })
        .WARREN_EGRESS_PRIVATE_ALLOW,
      own,
    }),
    own,
    proxy: p,
    lookup: async (name) =>
      name === "tool.test" ? ["127.0.0.1"] : name === "metadata.test" ? ["169.254.169.254"] : [],
  });

function proxyAt(raw: string): OutboundProxy {
  const p = parseOutboundProxy(raw);
  assert.ok(typeof p !== "string", typeof p === "string" ? p : "");
  return p;
}

test("with an outbound proxy, a tool's fetch goes through it, tunnelled to the address the rule checked", async () => {
  proxy.tunnels.length = 0;
  const f = connector(proxyAt(`http://warren:s3cret@127.0.0.1:${proxyPort}`));
  const r = await f(`http://tool.test:${targetPort}/api?q=1`, { headers: { authorization: "Bearer t" } });
  assert.equal(r.status, 200);
  assert.deepEqual(await r.json(), { url: "/api?q=1", host: `tool.test:${targetPort}`, auth: "Bearer t" });
  // the proxy saw the call: a tunnel to the checked address (not a name it would resolve again)
  assert.deepEqual(proxy.tunnels, [
    {
      authority: `127.0.0.1:${targetPort}`,
      auth: `Basic ${Buffer.from("warren:s3cret").toString("base64")}`,
    },
  ]);
});

test("with an outbound proxy, a target the address rule refuses is refused before the proxy hears of it", async () => {
  proxy.tunnels.length = 0;
  const f = connector(proxyAt(`http://127.0.0.1:${proxyPort}`));
  for (const url of [
    "http://169.254.169.254/latest/meta-data/",
    "http://metadata.test/",
    `http://127.0.0.1:${proxyPort}/`,
  ]) {
    const err = await f(url).then(
      () => null,
      (e: unknown) => e,
    );
    assert.ok(addressRefusedIn(err), `${url}: ${String(err)}`);
  }
  assert.deepEqual(proxy.tunnels, []);
});

test("without the proxy nothing goes through it; a proxy that is down fails the fetch saying so", async () => {
  proxy.tunnels.length = 0;
  const r = await connector(undefined)(`http://tool.test:${targetPort}/plain`);
  assert.equal(r.status, 200);
  assert.deepEqual(proxy.tunnels, []);
  const closed = net.createServer();
  await new Promise<void>((r) => closed.listen(0, "127.0.0.1", r));
  const port = (closed.address() as net.AddressInfo).port;
  await new Promise((r) => closed.close(r));
  const err = await connector(proxyAt(`http://127.0.0.1:${port}`))(`http://tool.test:${targetPort}/`).then(
    () => null,
    (e: unknown) => e,
  );
  assert.match(
    String((err as Error & { cause?: Error }).cause?.message),
    /outbound proxy .* could not be reached/,
  );
});

test("WARREN_OUTBOUND_PROXY is checked with the configuration", () => {
  assert.equal(
    parseConfig({ WARREN_OUTBOUND_PROXY: "http://proxy.internal:3128" }).WARREN_OUTBOUND_PROXY,
    "http://proxy.internal:3128",
  );
  assert.throws(() => parseConfig({ WARREN_OUTBOUND_PROXY: "socks5://proxy:1080" }), /WARREN_OUTBOUND_PROXY/);
  assert.throws(() => parseConfig({ WARREN_OUTBOUND_PROXY: "not a url" }), /WARREN_OUTBOUND_PROXY/);
});
