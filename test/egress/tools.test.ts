// Common tools in a real box reach upstreams only through the egress proxy, unchanged: curl
// (HTTP and HTTPS through CONNECT), git clone over HTTPS, pip download, npm view. Upstreams
// are servers on this host's loopback under test names the proxy resolves from its table.
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { boxSkipReason } from "../box/fixture.js";
import { startTestServer, type TestServer } from "../support/server.js";
import { startUpstreams, TEST_NAMES, type Upstreams } from "./upstreams.js";

describe("tools through the egress proxy", { skip: boxSkipReason() ?? false }, () => {
  let t: TestServer;
  let up: Upstreams;
  let agent: { id: string };
  const CA = "/data/egress-ca.pem";

  before(async () => {
    up = await startUpstreams();
    // the upstreams are on this host's loopback: the operator's bound holds their two ports
    t = await startTestServer({
      env: { WARREN_EGRESS_PRIVATE_ALLOW: `127.0.0.1:${up.httpPort},127.0.0.1:${up.httpsPort}` },
      egressHosts: Object.fromEntries(TEST_NAMES.map((n) => [n, ["127.0.0.1"]])),
    });
    fs.writeFileSync(path.join(t.stateRoot, "data", "egress-ca.pem"), up.ca, { mode: 0o644 });
    const org = (await t.call("POST", "/api/orgs", { name: "egress" })).body;
    const m = (await t.call("POST", "/api/machines", { org_id: org.id, name: "m", memory_mib: 1024 })).body;
    const ports = [up.httpPort, up.httpsPort];
    agent = (await t.call("POST", "/api/agents", { org_id: org.id, machine_id: m.id, name: "a" })).body;
    const allow = ports.map((p) => `pkg.test:${p}`);
    const set = await t.call("PATCH", `/api/agents/${agent.id}`, { sandbox_policy: { network: { allow } } });
    assert.equal(set.status, 200, JSON.stringify(set.body));
    assert.ok(agent.id, JSON.stringify(agent));
  });
  after(async () => {
    await t?.server.runtime.stopAll("test over");
    await t?.close();
    await up?.close();
  });

  const sh = async (command: string, timeout_ms = 60_000) => {
    const r = await t.call("POST", `/api/agents/${agent.id}/exec`, { command, timeout_ms });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    return r.body as { exit_code: number; stdout: string; stderr: string };
  };

  test("curl: plain HTTP and HTTPS through a CONNECT tunnel", async () => {
    const r = await sh(
      `curl -sS --fail http://pkg.test:${up.httpPort}/hello && curl -sS --fail --cacert ${CA} https://pkg.test:${up.httpsPort}/hello`,
    );
    assert.equal(r.exit_code, 0, r.stderr);
    assert.equal(r.stdout, `hello from pkg.test:${up.httpPort}\nhello from pkg.test:${up.httpsPort}\n`);
  });

  test("curl through SOCKS5 (the proxy resolves the name)", async () => {
    const r = await sh(
      `curl -sS --fail --proxy socks5h://127.0.0.1:3128 http://pkg.test:${up.httpPort}/hello && ` +
        `curl -sS --fail --proxy socks5h://127.0.0.1:3128 --cacert ${CA} https://pkg.test:${up.httpsPort}/hello`,
    );
    assert.equal(r.exit_code, 0, r.stderr);
    assert.equal(r.stdout, `hello from pkg.test:${up.httpPort}\nhello from pkg.test:${up.httpsPort}\n`);
  });

  test("git clone https://", async () => {
    const r = await sh(
      `GIT_SSL_CAINFO=${CA} git clone -q https://pkg.test:${up.httpsPort}/repo.git r && cat r/README && rm -rf r`,
    );
    assert.equal(r.exit_code, 0, r.stderr);
    assert.equal(r.stdout, "cloned through the egress proxy\n");
  });

  test("pip download", async () => {
    const r = await sh(
      `python3 -m pip download -q --no-deps --no-cache-dir --disable-pip-version-check --cert ${CA} ` +
        `--index-url https://pkg.test:${up.httpsPort}/simple/ -d dl demo && ls dl && rm -rf dl`,
    );
    assert.equal(r.exit_code, 0, r.stderr);
    assert.equal(r.stdout, "demo-1.0-py3-none-any.whl\n");
  });

  test("npm view", async () => {
    const r = await sh(
      `NPM_CONFIG_CAFILE=${CA} npm view demo description --registry https://pkg.test:${up.httpsPort}/npm/ --no-update-notifier`,
    );
    assert.equal(r.exit_code, 0, r.stderr);
    assert.equal(r.stdout.trim(), "served on loopback");
  });

  test("every request is recorded, readable through the API", async () => {
    type Item = { decision: string; host: string; port: number; method?: string };
    let items: Item[] = [];
    // a tunnel is recorded as it closes, which follows the command's end by a moment
    for (let i = 0; i < 50 && items.length < 7; i++) {
      const r = await t.call("GET", `/api/agents/${agent.id}/egress?limit=500`);
      assert.equal(r.status, 200, JSON.stringify(r.body));
      items = r.body.items as Item[];
      if (items.length < 7) await new Promise((res) => setTimeout(res, 100));
    }
    assert.ok(items.length >= 7, JSON.stringify(items));
    assert.ok(
      items.every((i) => i.decision === "allowed" && i.host === "pkg.test"),
      JSON.stringify(items),
    );
    assert.ok(items.some((i) => i.method === "GET" && i.port === up.httpPort));
    assert.ok(items.some((i) => i.method === undefined && i.port === up.httpsPort));
  });
});
