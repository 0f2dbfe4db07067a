// The canary for new conversations: a new conversation goes to the canary's version by the
// same sticky rule as runs (its routing key, by default its own id), and keeps that version
// for its whole life: every turn runs it, even after the canary ended, and so do its forks.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { bucketOf } from "../../src/versions/service.js";
import { boxSkipReason } from "../box/fixture.js";
import { putHomeFile, TERMINAL_STATUSES } from "../support/agent-runs.js";
import { orgWithAgent } from "../support/org.js";
import { startTestServer, type TestServer } from "../support/server.js";
import { waitFor } from "../conversations/support.js";

const SHARE = 0.5;
const said = (text: string) => JSON.stringify({ turns: Array.from({ length: 8 }, () => ({ text })) });

describe("the canary of conversations", { skip: boxSkipReason() ?? false }, () => {
  let t: TestServer;
  let agent: { id: string };

  /** Posts a message and answers the turn's run once it ended, with the agent's answer. */
  const turn = async (conversationId: string, text: string) => {
    const posted = await t.call("POST", `/api/conversations/${conversationId}/messages`, { text });
    assert.equal(posted.status, 202, JSON.stringify(posted.body));
    const run = await waitFor("the turn to end", async () => {
      const r = (await t.call("GET", `/api/runs/${posted.body.run_id}`)).body;
      return TERMINAL_STATUSES.includes(r.status) ? r : null;
    });
    assert.equal(run.status, "succeeded", JSON.stringify(run));
    const items = (await t.call("GET", `/api/conversations/${conversationId}/messages`)).body.items;
    const answer = items.find((m: any) => m.role === "agent" && m.run_id === run.id);
    return { run, answer: answer?.text as string | undefined };
  };

  before(async () => {
    t = await startTestServer();
    ({ agentBody: agent } = await orgWithAgent((method, url, body) => t.call(method, url, body), {
      org: "canary-talk",
      name: "talker",
      script: "one.json",
    }));
    await putHomeFile(t, agent.id, "one.json", said("from one"));
    await putHomeFile(t, agent.id, "two.json", said("from two"));
  });
  after(async () => {
    await t?.close();
  });

  test("new conversations go to the canary by routing key and keep its version for their whole life", async () => {
    const current = (await t.call("GET", `/api/agents/${agent.id}`)).body.spec_version as number;
    const written = await t.call("POST", `/api/agents/${agent.id}/versions`, {
      model: { provider: "script", name: "two.json" },
    });
    assert.equal(written.status, 201, JSON.stringify(written.body));
    const canaryVersion = written.body.version as number;
    assert.notEqual(canaryVersion, current);
    const set = await t.call("PUT", `/api/agents/${agent.id}/canary`, {
      version: canaryVersion,
      share: SHARE,
    });
    assert.equal(set.status, 200, JSON.stringify(set.body));

    // the same rule as runs: a key's bucket under the share goes to the canary, the same key twice the same way
    const expected = (key: string) => (bucketOf(agent.id, key) < SHARE ? canaryVersion : null);
    let onCanary = 0;
    for (let i = 0; i < 40; i++) {
      const key = `customer-${i}`;
      const c = await t.call("POST", `/api/agents/${agent.id}/conversations`, { routing_key: key });
      assert.equal(c.status, 201, JSON.stringify(c.body));
      assert.equal(c.body.spec_version, expected(key), `key ${key}`);
      const again = await t.call("POST", `/api/agents/${agent.id}/conversations`, { routing_key: key });
      assert.equal(again.body.spec_version, c.body.spec_version, "sticky: the same key, the same version");
      if (c.body.spec_version === canaryVersion) onCanary++;
    }
    assert.ok(onCanary >= 8 && onCanary <= 32, `about half of 40 keys on the canary, got ${onCanary}`);
    // without a key, the conversation's own id is its key
    const keyless = await Promise.all(
      Array.from({ length: 12 }, () => t.call("POST", `/api/agents/${agent.id}/conversations`, {})),
    );
    for (const c of keyless) assert.equal(c.body.spec_version, expected(c.body.id), c.body.id);

    let k = 0;
    while (expected(`pick-${k}`) === null) k++;
    const canaryKey = `pick-${k}`;
    k = 0;
    while (expected(`pick-${k}`) !== null) k++;
    const currentKey = `pick-${k}`;
    const onIt = (await t.call("POST", `/api/agents/${agent.id}/conversations`, { routing_key: canaryKey }))
      .body;
    const off = (await t.call("POST", `/api/agents/${agent.id}/conversations`, { routing_key: currentKey }))
      .body;
    assert.equal(onIt.spec_version, canaryVersion);
    assert.equal(off.spec_version, null);

    const first = await turn(onIt.id, "hello");
    assert.equal(first.run.version, canaryVersion);
    assert.equal(first.answer, "from two");
    const other = await turn(off.id, "hello");
    assert.equal(other.run.version, current);
    assert.equal(other.answer, "from one");

    // the canary ends: the conversation it took keeps its version; a new one runs the current
    const ended = await t.call("PUT", `/api/agents/${agent.id}/canary`, {});
    assert.equal(ended.body.canary, null);
    const later = await turn(onIt.id, "and again");
    assert.equal(later.run.version, canaryVersion, "kept for the conversation's whole life");
    assert.equal(later.answer, "from two");
    assert.equal((await t.call("GET", `/api/conversations/${onIt.id}`)).body.spec_version, canaryVersion);
    const listed = (await t.call("GET", `/api/agents/${agent.id}/conversations`)).body.items;
    assert.equal(listed.find((c: any) => c.id === onIt.id).spec_version, canaryVersion);
    // a fork keeps its source's version: the canary's after the canary ended, none for the other
    const forked = await t.call("POST", `/api/conversations/${onIt.id}/fork`, {});
    assert.equal(forked.status, 201, JSON.stringify(forked.body));
    assert.equal(forked.body.spec_version, canaryVersion);
    const onFork = await turn(forked.body.id, "on the fork");
    assert.equal(onFork.run.version, canaryVersion);
    assert.equal(onFork.answer, "from two");
    const offFork = (await t.call("POST", `/api/conversations/${off.id}/fork`, {})).body;
    assert.equal(offFork.spec_version, null);
    assert.equal((await turn(offFork.id, "on the other fork")).answer, "from one");
    const fresh = await t.call("POST", `/api/agents/${agent.id}/conversations`, { routing_key: canaryKey });
    assert.equal(fresh.body.spec_version, null, "no canary: a new conversation runs the current version");

    const bad = await t.call("POST", `/api/agents/${agent.id}/conversations`, { routing_key: "" });
    assert.equal(bad.status, 400);
    assert.equal(bad.body.error.code, "request.invalid");
  });
});
