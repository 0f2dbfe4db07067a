// The organisation's network deny list (its guardrails, written by owners and admins) bounds
// every sandbox policy: the egress proxy refuses a host on it, or a host that resolves to an
// address in a CIDR on it, even when the agent's own policy allows it. Connections are handed
// to the server's bridges as boxd would; the upstreams are the egress suite's, on loopback.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { AgentSpec } from "../../src/contract/spec.js";
import { newId } from "../../src/ids.js";
import { startTestServer, type TestServer } from "../support/server.js";
import { startUpstreams, TEST_NAMES, type Upstreams } from "./upstreams.js";
import { bridgeFront, type BridgeFront } from "../support/bridge.js";
import { orgAndMachine } from "../support/org.js";

describe("the organisation's network deny list", () => {
  let t: TestServer;
  let up: Upstreams;
  let front: BridgeFront | undefined;
  let org: { id: string };
  let machine: { id: string };
  let a: { id: string; uid: number };

  before(async () => {
    up = await startUpstreams();
    t = await startTestServer({
      env: { WARREN_EGRESS_PRIVATE_ALLOW: `127.0.0.1:${up.httpPort}` },
      egressHosts: Object.fromEntries(TEST_NAMES.map((n) => [n, ["127.0.0.1"]])),
    });
    ({ org, machine } = await orgAndMachine(t.call, "deny"));
    a = (await t.call("POST", "/api/agents", { org_id: org.id, machine_id: machine.id, name: "a" })).body;
    const allow = [`pkg.test:${up.httpPort}`, `api.example.com:${up.httpPort}`];
    const set = await t.call("PATCH", `/api/agents/${a.id}`, { sandbox_policy: { network: { allow } } });
    assert.equal(set.status, 200, JSON.stringify(set.body));
    front = await bridgeFront(t, machine.id);
  });
  after(async () => {
    await front?.close();
    await t?.close();
    await up?.close();
  });

  /** A plain HTTP request through the proxy, as the agent's program would send it. */
  const get = async (host: string): Promise<string> => {
    return front!.bridged(
      a.uid,
      `GET http://${host}:${up.httpPort}/hello HTTP/1.1\r\nHost: ${host}:${up.httpPort}\r\nConnection: close\r\n\r\n`,
    );
  };
  const guardrails = (body: unknown) => t.call("PUT", `/api/orgs/${org.id}/guardrails`, body);

  test("a host on the list is refused though the agent's policy allows it; others still pass", async () => {
    assert.match(await get("api.example.com"), /^HTTP\/1.1 200[^]*hello from api.example.com/);
    const set = await guardrails({ network_deny: ["api.example.com"] });
    assert.equal(set.status, 200, JSON.stringify(set.body));
    assert.deepEqual(set.body.network_deny, ["api.example.com"]);
    assert.equal(set.body.tool_policy, "", "what the body leaves out is kept");
    const seen = up.seen.length;
    const refused = await get("api.example.com");
    assert.match(refused, /^HTTP\/1.1 403[^]*api.example.com:\d+ is on the organisation's network deny list/);
    assert.equal(up.seen.length, seen, "nothing reached the upstream");
    assert.match(await get("pkg.test"), /^HTTP\/1.1 200[^]*hello from pkg.test/);
    const rec = await t.call("GET", `/api/agents/${a.id}/egress?decision=refused`);
    assert.equal(rec.body.items[0].host, "api.example.com");
    assert.match(rec.body.items[0].reason, /deny list/);
  });

  test("a CIDR on the list refuses every name that resolves into it", async () => {
    const set = await guardrails({ network_deny: ["127.0.0.0/8"] });
    assert.equal(set.status, 200, JSON.stringify(set.body));
    assert.match(
      await get("pkg.test"),
      /^HTTP\/1.1 403[^]*pkg.test resolves to an address on the organisation's network deny list \(127.0.0.0\/8\)/,
    );
    assert.equal((await guardrails({ network_deny: [] })).status, 200);
    assert.match(await get("pkg.test"), /^HTTP\/1.1 200/);
  });

  test("what the server fetches for the agent (its http tool) is bounded by the list too", async () => {
    const runId = newId("run");
    const set = await t.server.tools.open({
      runId,
      via: "loop",
      workload: await t.server.workloads.openAgent(a.id, { run: { id: runId } }),
      spec: AgentSpec.parse({
        kind: "assistant",
        model: { provider: "script", name: "s.json" },
        tools: [{ type: "http", name: "api", base_url: `http://127.0.0.1:${up.httpPort}`, methods: ["GET"] }],
        tool_policy: '@id("all") permit(principal, action, resource);',
      }),
      signal: new AbortController().signal,
      record: async () => {},
    });
    try {
      const ok = await set.call("api", { method: "GET", path: "/hello" });
      assert.match(ok.output, /hello from/);
      // every spelling of the address, in the list as an address, a CIDR and with a port
      for (const deny of [
        ["127.0.0.1"],
        ["127.0.0.0/8"],
        [`127.0.0.1:${up.httpPort}`],
        ["::ffff:127.0.0.1"],
      ]) {
        assert.equal((await guardrails({ network_deny: deny })).status, 200);
        const seen = up.seen.length;
        const refused = await set.call("api", { method: "GET", path: "/hello" });
        assert.match(refused.output, /on the organisation's network deny list/, `${deny}: ${refused.output}`);
        assert.equal(up.seen.length, seen, `${deny}: nothing reached the upstream`);
      }
      assert.equal((await guardrails({ network_deny: ["10.0.0.0/8"] })).status, 200);
      assert.match((await set.call("api", { method: "GET", path: "/hello" })).output, /hello from/);
    } finally {
      await set.close();
      await guardrails({ network_deny: [] });
    }
  });

  test("an entry that is not a host, a domain, an address or a CIDR is refused with its place", async () => {
    const r = await guardrails({ network_deny: ["pkg.test", "not a host"] });
    assert.equal(r.status, 400);
    assert.equal(r.body.error.code, "request.invalid");
    assert.match(r.body.error.message, /^network_deny\.1: "not a host"/);
  });
});
