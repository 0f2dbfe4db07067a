// Versions you can see and pin: listed and read whole (sandbox policy included), written
// without becoming current, run by number, promoted and rolled back; a run keeps its
// version's sandbox policy for its whole life (a change during a run does not reach it);
// a canary sends about its share of runs to its version, sticky by routing key.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { boxSkipReason } from "../box/fixture.js";
import { startUpstreams, type Upstreams } from "../egress/upstreams.js";
import { startTestServer, type TestServer } from "../support/server.js";

const until = async <T>(what: string, fn: () => Promise<T | undefined>, ms = 60_000): Promise<T> => {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
};

describe("versions", { skip: boxSkipReason() ?? false }, () => {
  let t: TestServer;
  let up: Upstreams;
  let agent: { id: string };
  let allow: string;

  const ended = (runId: string) =>
    until(`run ${runId} to end`, async () => {
      const r = await t.call("GET", `/api/runs/${runId}`);
      return ["queued", "running"].includes(r.body.status) ? undefined : r.body;
    });
  /** A command run that prints what the proxy answered for a GET of the upstream's /hello. */
  const FETCH = (port: number) =>
    `curl -s -o /dev/null -w '%{http_code}\\n' --max-time 10 http://pkg.test:${port}/hello`;

  before(async () => {
    up = await startUpstreams();
    t = await startTestServer({
      // the canary's share is read over 200 runs queued at once: past the default queue bound
      env: { WARREN_EGRESS_PRIVATE_ALLOW: `127.0.0.1:${up.httpPort}`, WARREN_QUEUE_PER_AGENT: "250" },
      egressHosts: { "pkg.test": ["127.0.0.1"] },
    });
    const org = (await t.call("POST", "/api/orgs", { name: "versions" })).body;
    const m = (await t.call("POST", "/api/machines", { org_id: org.id, name: "m" })).body;
    agent = (await t.call("POST", "/api/agents", { org_id: org.id, machine_id: m.id, name: "a" })).body;
    allow = `pkg.test:${up.httpPort}`;
  });
  after(async () => {
    await t?.close();
    await up?.close();
  });

  test("versions are listed and read whole; one is written without becoming current, run by number, promoted, rolled back", async () => {
    const p1 = await t.call("PATCH", `/api/agents/${agent.id}`, {
      sandbox_policy: { network: { allow: [allow] } },
    });
    assert.equal(p1.status, 200, JSON.stringify(p1.body));
    assert.equal(p1.body.spec_version, 1, "a sandbox policy change writes a version");
    const p2 = await t.call("PATCH", `/api/agents/${agent.id}`, { instructions: "two" });
    assert.equal(p2.body.spec_version, 2);

    const list = await t.call("GET", `/api/agents/${agent.id}/versions`);
    assert.equal(list.status, 200, JSON.stringify(list.body));
    assert.deepEqual(
      list.body.items.map((v: any) => [v.version, v.current, v.created_by]),
      [
        [1, false, "operator@localhost"],
        [2, true, "operator@localhost"],
      ],
    );
    const v1 = await t.call("GET", `/api/agents/${agent.id}/versions/1`);
    assert.equal(v1.status, 200, JSON.stringify(v1.body));
    assert.deepEqual(v1.body.sandbox_policy.network.allow, [allow]);
    assert.equal(v1.body.instructions, "");
    assert.equal(v1.body.kind, "command");
    assert.equal((await t.call("GET", `/api/agents/${agent.id}/versions/9`)).status, 404);

    // written beside the current one: the agent still runs version 2
    const w = await t.call("POST", `/api/agents/${agent.id}/versions`, {
      instructions: "three",
      sandbox_policy: { network: { allow: [] } },
    });
    assert.equal(w.status, 201, JSON.stringify(w.body));
    assert.deepEqual(w.body, { version: 3 });
    const a = await t.call("GET", `/api/agents/${agent.id}`);
    assert.equal(a.body.spec_version, 2);
    assert.equal(a.body.instructions, "two");
    assert.deepEqual(a.body.sandbox_policy.network.allow, [allow]);

    // run by number: version 3's policy (no network), while the current one (2) still reaches
    const byNumber = await t.call("POST", `/api/agents/${agent.id}/runs`, {
      kind: "command",
      command: FETCH(up.httpPort),
      version: 3,
    });
    assert.equal(byNumber.status, 202, JSON.stringify(byNumber.body));
    assert.equal(byNumber.body.version, 3);
    const r3 = await ended(byNumber.body.id);
    assert.equal(r3.output.trim(), "403", "version 3 allows no host");
    const current = await t.call("POST", `/api/agents/${agent.id}/runs`, {
      kind: "command",
      command: FETCH(up.httpPort),
    });
    assert.equal(current.body.version, 2);
    assert.equal((await ended(current.body.id)).output.trim(), "200");
    const missing = await t.call("POST", `/api/agents/${agent.id}/runs`, {
      kind: "command",
      command: "true",
      version: 42,
    });
    assert.equal(missing.status, 400);
    assert.equal(missing.body.error.code, "request.invalid");

    // promoted, then rolled back
    const promote = await t.call("PUT", `/api/agents/${agent.id}/current`, { version: 3 });
    assert.equal(promote.status, 200, JSON.stringify(promote.body));
    assert.equal(promote.body.current, true);
    let now = (await t.call("GET", `/api/agents/${agent.id}`)).body;
    assert.equal(now.spec_version, 3);
    assert.deepEqual(now.sandbox_policy.network.allow, []);
    assert.equal(now.instructions, "three");
    const back = await t.call("PUT", `/api/agents/${agent.id}/current`, { version: 2 });
    assert.equal(back.status, 200);
    now = (await t.call("GET", `/api/agents/${agent.id}`)).body;
    assert.equal(now.spec_version, 2);
    assert.deepEqual(now.sandbox_policy.network.allow, [allow]);
    assert.equal((await t.call("PUT", `/api/agents/${agent.id}/current`, { version: 77 })).status, 404);
  });

  test("a run keeps its version's sandbox policy: a change during the run does not reach it", async () => {
    await t.call("PUT", `/api/agents/${agent.id}/current`, { version: 2 });
    const gate = "policy-gate";
    const started = await t.call("POST", `/api/agents/${agent.id}/runs`, {
      kind: "command",
      command: [
        `${FETCH(up.httpPort)} > first`,
        `cat first`,
        `while [ ! -e ${gate} ]; do sleep 0.05; done`,
        FETCH(up.httpPort),
      ].join("\n"),
      timeout_s: 120,
    });
    assert.equal(started.status, 202, JSON.stringify(started.body));
    await until("the run's first fetch", async () => {
      const f = await t.inject({ method: "GET", url: `/api/agents/${agent.id}/files/first` });
      return f.statusCode === 200 && f.body.trim() !== "" ? true : undefined;
    });
    // the network is taken away while the run goes on: a new version, made current
    const changed = await t.call("PATCH", `/api/agents/${agent.id}`, {
      sandbox_policy: { network: { allow: [] } },
    });
    assert.equal(changed.status, 200, JSON.stringify(changed.body));
    assert.equal(changed.body.spec_version, 4);
    const put = await t.inject({
      method: "PUT",
      url: `/api/agents/${agent.id}/files/${gate}`,
      payload: "go",
    });
    assert.equal(put.statusCode, 204);
    const run = await ended(started.body.id);
    assert.equal(run.status, "succeeded", JSON.stringify(run));
    assert.deepEqual(
      run.output.trim().split("\n"),
      ["200", "200"],
      "both fetches ran under version 2's policy",
    );
    assert.equal(run.version, 2);

    // the next run takes the change
    const next = await t.call("POST", `/api/agents/${agent.id}/runs`, {
      kind: "command",
      command: FETCH(up.httpPort),
    });
    assert.equal(next.body.version, 4);
    assert.equal((await ended(next.body.id)).output.trim(), "403");
  });

  test("a canary at 0.3 takes about 30% of 200 runs, sticky by routing key; stats side by side; ended in one call", async () => {
    const canary = await t.call("PUT", `/api/agents/${agent.id}/canary`, { version: 3, share: 0.3 });
    assert.equal(canary.status, 200, JSON.stringify(canary.body));
    assert.equal(canary.body.canary.version, 3);
    const bad = await t.call("PUT", `/api/agents/${agent.id}/canary`, { version: 3, share: 1 });
    assert.equal(bad.status, 400);
    const versions = new Map<string, number>();
    const ids: string[] = [];
    for (let i = 0; i < 200; i++) {
      const key = `user-${i % 100}`;
      const r = await t.call("POST", `/api/agents/${agent.id}/runs`, {
        kind: "command",
        argv: ["/bin/true"],
        routing_key: key,
      });
      assert.equal(r.status, 202, JSON.stringify(r.body));
      ids.push(r.body.id);
      const seen = versions.get(key);
      if (seen !== undefined) assert.equal(r.body.version, seen, `routing key ${key} stays on one version`);
      versions.set(key, r.body.version);
    }
    for (const id of ids) await ended(id);
    const onCanary = [...versions.values()].filter((v) => v === 3).length;
    assert.ok(onCanary >= 15 && onCanary <= 45, `about 30 of 100 keys on the canary, got ${onCanary}`);
    assert.ok([...versions.values()].every((v) => v === 3 || v === 4));
    const listed = await t.call("GET", `/api/agents/${agent.id}/versions`);
    assert.equal(listed.body.items.find((v: any) => v.version === 3).canary_share, 0.3);

    const stats = (await t.call("GET", `/api/agents/${agent.id}/canary`)).body;
    const by = new Map(stats.stats.map((s: any) => [s.version, s]));
    assert.equal((by.get(3) as any).runs, onCanary * 2);
    assert.equal((by.get(4) as any).runs, 200 - onCanary * 2);
    assert.equal((by.get(3) as any).failures, 0);

    const end = await t.call("PUT", `/api/agents/${agent.id}/canary`, {});
    assert.equal(end.status, 200);
    assert.equal(end.body.canary, null);
    const after = await t.call("POST", `/api/agents/${agent.id}/runs`, {
      kind: "command",
      argv: ["/bin/true"],
      routing_key: "user-0",
    });
    assert.equal(after.body.version, 4);
    await ended(after.body.id);
  });
});
