// Egress approvals in real boxes: a sandbox policy's network.ask holds a run's connection to a
// host outside its allow list until a person decides. Allowed: the held request goes through
// (once), and the run reaches the host again without asking (by the same method: another asks
// again); denied: refused and recorded, and not asked again in that run; expired: refused and
// recorded. The upstreams are on this host's loopback.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { boxSkipReason } from "../box/fixture.js";
import { startTestServer, type TestServer } from "../support/server.js";
import { startUpstreams, TEST_NAMES, type Upstreams } from "./upstreams.js";

interface Approval {
  id: string;
  tool: string;
  tool_call_id: string;
  arguments: Record<string, unknown>;
  args_sha256: string;
  status: string;
  message: string | null;
  decided_by?: string;
}

/** Seconds a held connection waits for a decision in this suite. */
const ASK_S = 8;

describe("egress approvals (network.ask)", { skip: boxSkipReason() ?? false }, () => {
  let t: TestServer;
  let up: Upstreams;
  let a: { id: string };

  before(async () => {
    up = await startUpstreams();
    t = await startTestServer({
      env: {
        EGRESS_ASK_TIMEOUT_S: String(ASK_S),
        WARREN_EGRESS_PRIVATE_ALLOW: `127.0.0.1:${up.httpPort},127.0.0.1:${up.httpsPort}`,
      },
      egressHosts: {
        ...Object.fromEntries(
          [...TEST_NAMES, "b.example.com", "m.example.com", "inner.example.com"].map((n) => [
            n,
            ["127.0.0.1"],
          ]),
        ),
        // a name under ask that leads to the cloud's metadata address
        "meta.example.com": ["169.254.169.254"],
      },
    });
    const org = (await t.call("POST", "/api/orgs", { name: "ask" })).body;
    const m = (await t.call("POST", "/api/machines", { org_id: org.id, name: "m", memory_mib: 1024 })).body;
    a = (await t.call("POST", "/api/agents", { org_id: org.id, machine_id: m.id, name: "a" })).body;
    const set = await t.call("PATCH", `/api/agents/${a.id}`, {
      sandbox_policy: {
        network: { allow: [`pkg.test:${up.httpPort}`], ask: ["*.example.com", "example.com"] },
      },
    });
    assert.equal(set.status, 200, JSON.stringify(set.body));
    assert.deepEqual(set.body.sandbox_policy.network.ask, ["*.example.com", "example.com"]);
  });
  after(async () => {
    await t?.server.runtime.stopAll("test over");
    await t?.close();
    await up?.close();
  });

  const until = async <T>(what: string, get: () => Promise<T | undefined>, ms = 60_000): Promise<T> => {
    const end = Date.now() + ms;
    for (;;) {
      const v = await get();
      if (v !== undefined) return v;
      if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  };
  const start = async (command: string): Promise<string> => {
    const r = await t.call("POST", `/api/agents/${a.id}/runs`, { kind: "command", command, timeout_s: 90 });
    assert.equal(r.status, 202, JSON.stringify(r.body));
    return r.body.id as string;
  };
  const approvals = async (runId: string): Promise<Approval[]> =>
    (await t.call("GET", `/api/runs/${runId}/approvals`)).body.items as Approval[];
  const waitingOne = (runId: string, n = 1) =>
    until(`approval ${n} of ${runId}`, async () => {
      const items = await approvals(runId);
      return items.length >= n && items[n - 1]?.status === "waiting" ? items[n - 1] : undefined;
    });
  const ended = (runId: string) =>
    until(
      `the end of ${runId}`,
      async () => {
        const r = await t.call("GET", `/api/runs/${runId}`);
        return ["queued", "running", "waiting"].includes(r.body.status as string) ? undefined : r.body;
      },
      120_000,
    );
  const records = async (host: string) => {
    const r = await t.call("GET", `/api/agents/${a.id}/egress?limit=500`);
    return (r.body.items as { host: string; decision: string; reason: string; run_id?: string }[]).filter(
      (i) => i.host === host,
    );
  };
  const seenBy = (host: string) => up.seen.filter((s) => s.host.startsWith(`${host}:`)).length;
  const decide = (ap: Approval, body: Record<string, unknown>) =>
    t.call("POST", `/api/approvals/${ap.id}`, { args_sha256: ap.args_sha256, ...body });

  test("allowed: the held request goes through once, and the run reaches the host again without asking", async () => {
    const url = `http://api.example.com:${up.httpPort}/hello`;
    const runId = await start(
      `curl -sS -w ' %{http_code}\\n' ${url}; curl -sS -w ' %{http_code}\\n' ${url}; curl -sS -w ' %{http_code}\\n' http://pkg.test:${up.httpPort}/hello`,
    );
    const ap = await waitingOne(runId);
    assert.equal(ap.tool, "egress");
    assert.deepEqual(ap.arguments, { host: "api.example.com", method: "GET", port: up.httpPort });
    assert.equal((await t.call("GET", `/api/runs/${runId}`)).body.status, "waiting");
    assert.equal(seenBy("api.example.com"), 0, "nothing reached the host while it was held");
    const stale = await t.call("POST", `/api/approvals/${ap.id}`, {
      decision: "allow",
      args_sha256: "0".repeat(64),
    });
    assert.equal(stale.status, 409, JSON.stringify(stale.body));
    const allowed = await decide(ap, { decision: "allow" });
    assert.equal(allowed.status, 200, JSON.stringify(allowed.body));
    assert.equal(allowed.body.status, "allowed");
    const run = await ended(runId);
    assert.equal(run.status, "succeeded", JSON.stringify(run));
    assert.equal(
      run.output,
      `hello from api.example.com:${up.httpPort}\n 200\nhello from api.example.com:${up.httpPort}\n 200\nhello from pkg.test:${up.httpPort}\n 200\n`,
    );
    assert.equal(seenBy("api.example.com"), 2, "each of the two requests reached the host once");
    assert.equal((await approvals(runId)).length, 1, "the second request did not ask again");
    const recs = (await records("api.example.com")).filter((r) => r.run_id === runId);
    assert.equal(recs.length, 2);
    for (const r of recs) {
      assert.equal(r.decision, "allowed");
      assert.match(r.reason, /^allowed by .+'s approval for this run/);
    }
    // the allow was this run's: the agent's list is unchanged, and its next run asks again
    const policy = (await t.call("GET", `/api/agents/${a.id}`)).body.sandbox_policy;
    assert.deepEqual(policy.network.allow, [`pkg.test:${up.httpPort}`]);
    const next = await start(`curl -sS -w ' %{http_code}\\n' ${url}`);
    const again = await waitingOne(next);
    assert.notEqual(again.id, ap.id);
    assert.deepEqual(again.arguments, ap.arguments);
    assert.equal((await decide(again, { decision: "deny" })).status, 200);
    assert.match((await ended(next)).output as string, /was denied by [^\n]+\n 403\n$/);
    assert.equal(seenBy("api.example.com"), 2, "the next run's request reached nothing");
  });

  test("a plain request's approval is bound to its method: another method to the same host asks again", async () => {
    const url = `http://m.example.com:${up.httpPort}/hello`;
    const runId = await start(
      `curl -sS -w ' %{http_code}\\n' ${url}; curl -sS -X POST -d x -w ' %{http_code}\\n' ${url}`,
    );
    const get = await waitingOne(runId);
    assert.deepEqual(get.arguments, { host: "m.example.com", method: "GET", port: up.httpPort });
    assert.equal((await decide(get, { decision: "allow" })).status, 200);
    const post = await waitingOne(runId, 2);
    assert.deepEqual(post.arguments, { host: "m.example.com", method: "POST", port: up.httpPort });
    assert.notEqual(post.args_sha256, get.args_sha256);
    assert.equal(seenBy("m.example.com"), 1, "the GET went through; the POST is held");
    assert.equal((await decide(post, { decision: "deny" })).status, 200);
    const run = await ended(runId);
    assert.match(run.output as string, new RegExp(`^hello from m.example.com:${up.httpPort}\\n 200\\n`));
    assert.match(run.output as string, /POST to m\.example\.com:\d+ was denied by [^\n]+\n 403\n$/);
    assert.equal(seenBy("m.example.com"), 1, "the denied POST reached nothing");
  });

  test("denied: the tunnel is refused and recorded, and the run is not asked again", async () => {
    const url = `https://b.example.com:${up.httpsPort}/hello`;
    const runId = await start(
      `for i in 1 2; do curl -sS -k ${url} 2>&1 | head -c 300; echo " exit \${PIPESTATUS[0]}"; done`,
    );
    const ap = await waitingOne(runId);
    assert.deepEqual(ap.arguments, { host: "b.example.com", port: up.httpsPort });
    // add_to_policy goes with an allow only
    const bad = await decide(ap, { decision: "deny", add_to_policy: true });
    assert.equal(bad.status, 400, JSON.stringify(bad.body));
    assert.equal(bad.body.error.code, "request.invalid");
    const denied = await decide(ap, { decision: "deny", message: "not this one" });
    assert.equal(denied.status, 200, JSON.stringify(denied.body));
    const run = await ended(runId);
    // curl: "CONNECT tunnel failed, response 403", twice
    assert.equal((run.output as string).match(/response 403\n exit 56/g)?.length, 2, run.output);
    assert.equal(seenBy("b.example.com"), 0, "nothing reached the host");
    const all = await approvals(runId);
    assert.equal(all.length, 1, "the second attempt was refused without asking");
    assert.equal(all[0]?.status, "denied");
    const recs = (await records("b.example.com")).filter((r) => r.run_id === runId);
    assert.equal(recs.length, 2);
    for (const r of recs) {
      assert.equal(r.decision, "refused");
      assert.match(r.reason, new RegExp(`b.example.com:${up.httpsPort} was denied by .+: not this one`));
    }
  });

  test("expired: no decision within EGRESS_ASK_TIMEOUT_S refuses it; a host not named by ask is never held", async () => {
    const runId = await start(
      `curl -sS -w ' %{http_code}\\n' http://evilexample.com:${up.httpPort}/hello; curl -sS -w ' %{http_code}\\n' http://example.com:${up.httpPort}/hello`,
    );
    const ap = await waitingOne(runId);
    assert.deepEqual(ap.arguments, { host: "example.com", method: "GET", port: up.httpPort });
    const run = await ended(runId);
    assert.match(
      run.output as string,
      /^warren egress: refused: evilexample.com:\d+ is not in the agent's network allow list\n 403\n/,
    );
    assert.match(
      run.output as string,
      /example.com:\d+ was held for a person's approval, which expired: no decision within 8 s\n 403\n$/,
    );
    const [expired] = await approvals(runId);
    assert.equal(expired?.status, "expired");
    assert.equal(expired?.message, `no decision within ${ASK_S} s`);
    assert.equal((await approvals(runId)).length, 1, "evilexample.com asked nobody");
    assert.equal(seenBy("example.com") + seenBy("evilexample.com"), 0);
    const recs = (await records("example.com")).filter((r) => r.run_id === runId);
    assert.equal(recs.length, 1);
    assert.equal(recs[0]?.decision, "refused");
    assert.match(recs[0]?.reason ?? "", /approval, which expired/);
    const late = await decide(ap, { decision: "allow" });
    assert.equal(late.status, 409, "an expired approval cannot be decided");
  });

  test("allowed with add_to_policy: the host joins the agent's allow list as a new version by the decider", async () => {
    const before = (await t.call("GET", `/api/agents/${a.id}/versions`)).body.items.length as number;
    const runId = await start(`curl -sS -w ' %{http_code}\\n' http://example.com:${up.httpPort}/hello`);
    const ap = await waitingOne(runId);
    const allowed = await decide(ap, { decision: "allow", add_to_policy: true });
    assert.equal(allowed.status, 200, JSON.stringify(allowed.body));
    const run = await ended(runId);
    assert.equal(run.output, `hello from example.com:${up.httpPort}\n 200\n`);
    const agent = (await t.call("GET", `/api/agents/${a.id}`)).body;
    assert.deepEqual(agent.sandbox_policy.network.allow, [
      `pkg.test:${up.httpPort}`,
      `example.com:${up.httpPort}`,
    ]);
    const versions = (await t.call("GET", `/api/agents/${a.id}/versions`)).body.items;
    assert.equal(versions.length, before + 1);
    const newest = versions.reduce((x: any, y: any) => (y.version > x.version ? y : x));
    assert.ok(allowed.body.decided_by, JSON.stringify(allowed.body));
    assert.equal(newest.created_by, allowed.body.decided_by, "the new version is the decider's");
    assert.equal(newest.current, true);
    // the next run reaches it by the list: no approval
    const next = await start(`curl -sS -w ' %{http_code}\\n' http://example.com:${up.httpPort}/hello`);
    assert.equal((await ended(next)).output, `hello from example.com:${up.httpPort}\n 200\n`);
    assert.equal((await approvals(next)).length, 0);
  });

  test("a host under ask whose address the address rule refuses is refused at once: nobody is asked", async () => {
    const runId = await start(
      [
        `curl -sS -w ' %{http_code}\\n' http://meta.example.com/latest/meta-data/`,
        // loopback, on a port the operator did not open
        `curl -sS -w ' %{http_code}\\n' http://inner.example.com:9/`,
        `curl -sS -k https://meta.example.com/ 2>&1 | head -c 300; echo " exit \${PIPESTATUS[0]}"`,
      ].join("; "),
    );
    const run = await ended(runId);
    assert.equal(run.status, "succeeded", JSON.stringify(run));
    // two plain requests answered 403 by the proxy, and the tunnel's "response 403"
    assert.equal((run.output as string).match(/ 403\n/g)?.length, 3, run.output);
    assert.match(run.output as string, /response 403\n exit 56\n$/);
    assert.equal((await approvals(runId)).length, 0, "no approval was raised");
    for (const host of ["meta.example.com", "inner.example.com"]) {
      const recs = (await records(host)).filter((r) => r.run_id === runId);
      assert.ok(recs.length > 0, `${host} was recorded`);
      for (const r of recs) {
        assert.equal(r.decision, "refused");
        assert.doesNotMatch(r.reason, /approval/);
      }
    }
  });
});
