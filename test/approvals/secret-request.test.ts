// secret_request on a real server with a real box: the agent asks for a secret, its run waits
// as for an approval; a person gives the value through the API (POST /api/approvals/:id/secret),
// it becomes a secret granted to that agent and reaches the agent's next command, while the
// transcript, the approval and the records hold only the name. A refusal and an expiry answer
// the agent too. A member who may not write secrets, or a stranger, gives nothing: refused,
// nothing stored, the request still waiting.
import assert from "node:assert/strict";
import fs from "node:fs/promises";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { boxSkipReason } from "../box/fixture.js";
import { eventsOfType, putHomeFile, TERMINAL_STATUSES } from "../support/agent-runs.js";
import { startTestServer, type TestServer } from "../support/server.js";
import { waitFor } from "../conversations/support.js";
import { asMember, builtins, makeAgent } from "../support/org.js";

const VALUE = "sr-value-7Hq2-Lp90-zzTOP";

const requesting = (name: string) => ({
  tool_calls: [
    {
      name: "secret_request",
      input: { name, description: "a deploy token for the staging cluster", why: "to push the release" },
    },
  ],
});

describe("secret_request", { skip: boxSkipReason() ?? false }, () => {
  let t: TestServer;
  let short: TestServer;
  let people: TestServer;
  let n = 0;

  const setUp = async (server: TestServer) => {
    const org = (await server.call("POST", "/api/orgs", { name: `sr${++n}` })).body;
    const machine = (await server.call("POST", "/api/machines", { org_id: org.id, name: "m" })).body;
    return { org, machine };
  };
  const agentWith = async (
    server: TestServer,
    where: { org: { id: string }; machine: { id: string } },
    turns: unknown[],
  ) => {
    const r = await makeAgent(
      server.call,
      { org_id: where.org.id, machine_id: where.machine.id },
      {
        name: `agent${++n}`,
        tools: builtins("secret_request", "run_command"),
        tool_policy: "permit(principal, action, resource);",
      },
    );
    await putHomeFile(server, r.id, "turns.json", JSON.stringify({ turns }));
    return r as { id: string };
  };
  const start = async (server: TestServer, agentId: string) => {
    const r = await server.call("POST", `/api/agents/${agentId}/runs`, { kind: "agent", input: "go" });
    assert.equal(r.status, 202, JSON.stringify(r.body));
    return r.body.id as string;
  };
  const waitingRequest = (server: TestServer, runId: string) =>
    waitFor("the run to wait for a secret", async () => {
      const run = (await server.call("GET", `/api/runs/${runId}`)).body;
      if (run.status !== "waiting") return undefined;
      const a = (await server.call("GET", `/api/runs/${runId}/approvals`)).body.items[0];
      return a?.status === "waiting" ? { run, approval: a } : undefined;
    });
  const ended = (server: TestServer, runId: string) =>
    waitFor("the run to end", async () => {
      const run = (await server.call("GET", `/api/runs/${runId}`)).body;
      return TERMINAL_STATUSES.includes(run.status) ? run : undefined;
    });
  const toolAnswers = async (server: TestServer, runId: string) => {
    const events = (await server.call("GET", `/api/runs/${runId}/events`)).body.items;
    return { events, results: eventsOfType(events, "tool_call") };
  };

  before(async () => {
    t = await startTestServer({ listen: true });
    short = await startTestServer({ listen: true, env: { WARREN_SECRET_REQUEST_WAIT_S: "2" } });
    people = await startTestServer({ listen: true, env: { AUTH_MODE: "trusted-header" } });
  });
  after(async () => {
    await t?.close();
    await short?.close();
    await people?.close();
  });

  test("the run waits; the value given through the API reaches the next command, and only the name is recorded", async () => {
    const where = await setUp(t);
    const a = await agentWith(t, where, [
      requesting("DEPLOY_TOKEN"),
      {
        tool_calls: [
          {
            name: "run_command",
            input: { command: 'printf %s "$DEPLOY_TOKEN" > got.txt; echo "$DEPLOY_TOKEN"' },
          },
        ],
      },
      { text: "Deployed." },
    ]);
    const runId = await start(t, a.id);
    const { run, approval } = await waitingRequest(t, runId);
    assert.equal(run.waiting.reason, "approval");
    assert.equal(approval.tool, "secret_request");
    assert.deepEqual(approval.arguments, {
      name: "DEPLOY_TOKEN",
      description: "a deploy token for the staging cluster",
      why: "to push the release",
    });
    assert.equal(approval.may_decide, true);

    // a bad answer: a value too short, a stale digest, a tool call's approval
    const short = await t.call("POST", `/api/approvals/${approval.id}/secret`, {
      value: "x",
      args_sha256: approval.args_sha256,
    });
    assert.equal(short.status, 400);
    const stale = await t.call("POST", `/api/approvals/${approval.id}/secret`, {
      value: VALUE,
      args_sha256: "0".repeat(64),
    });
    assert.equal(stale.status, 409);
    assert.equal(stale.body.error.code, "approval.stale");

    const given = await t.call("POST", `/api/approvals/${approval.id}/secret`, {
      value: VALUE,
      args_sha256: approval.args_sha256,
    });
    assert.equal(given.status, 200, JSON.stringify(given.body));
    assert.equal(given.body.status, "allowed");
    assert.ok(!JSON.stringify(given.body).includes(VALUE));
    const done = await ended(t, runId);
    assert.equal(done.status, "succeeded", JSON.stringify(done));

    // the value reached the next command of the same run
    const file = path.join(t.stateRoot, "workspaces", where.machine.id, a.id, "got.txt");
    assert.equal(await fs.readFile(file, "utf8"), VALUE);
    // a secret of the organisation, granted to that agent
    const secrets = (await t.call("GET", `/api/secrets?org_id=${where.org.id}`)).body.items;
    const s = secrets.find((x: { name: string }) => x.name === "DEPLOY_TOKEN");
    assert.ok(s, JSON.stringify(secrets));
    assert.deepEqual(s.grants, [{ scope: "agent", id: a.id }]);
    // the transcript holds the name, never the value (the command's echo is redacted too)
    const { events, results } = await toolAnswers(t, runId);
    const all = JSON.stringify(events);
    assert.ok(!all.includes(VALUE), "the value is in the run's records");
    assert.ok(all.includes("DEPLOY_TOKEN"));
    assert.match(JSON.stringify(results[0]), /the secret DEPLOY_TOKEN was given by operator@localhost/);
    const approvals = JSON.stringify((await t.call("GET", `/api/runs/${runId}/approvals`)).body);
    assert.ok(!approvals.includes(VALUE));
    // answered once: a second answer is stale
    const again = await t.call("POST", `/api/approvals/${approval.id}/secret`, {
      value: VALUE,
      args_sha256: approval.args_sha256,
    });
    assert.equal(again.status, 409);
  });

  test("a refusal is the tool's answer, and no secret is made", async () => {
    const where = await setUp(t);
    const a = await agentWith(t, where, [
      requesting("OTHER_TOKEN"),
      { tool_calls: [{ name: "run_command", input: { command: 'echo "[${OTHER_TOKEN:-unset}]"' } }] },
      { text: "Fine." },
    ]);
    const runId = await start(t, a.id);
    const { approval } = await waitingRequest(t, runId);
    const r = await t.call("POST", `/api/approvals/${approval.id}`, {
      decision: "deny",
      message: "use the read-only token instead",
      args_sha256: approval.args_sha256,
    });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.equal((await ended(t, runId)).status, "succeeded");
    const { results } = await toolAnswers(t, runId);
    assert.match(
      JSON.stringify(results[0]),
      /the request for the secret OTHER_TOKEN was refused by operator@localhost: use the read-only token instead/,
    );
    assert.match(JSON.stringify(results[1]), /\[unset\]/);
    const secrets = (await t.call("GET", `/api/secrets?org_id=${where.org.id}`)).body.items;
    assert.deepEqual(secrets, []);
  });

  test("nobody answering in time is an expiry the agent is told of", async () => {
    const where = await setUp(short);
    const a = await agentWith(short, where, [requesting("LATE_TOKEN"), { text: "Gave up." }]);
    const runId = await start(short, a.id);
    const { approval } = await waitingRequest(short, runId);
    assert.equal((await ended(short, runId)).status, "succeeded");
    const { results } = await toolAnswers(short, runId);
    assert.match(
      JSON.stringify(results[0]),
      /the request for the secret LATE_TOKEN expired: nobody gave the secret LATE_TOKEN within 2 s/,
    );
    const [after] = (await short.call("GET", `/api/runs/${runId}/approvals`)).body.items;
    assert.equal(after.status, "expired");
    const late = await short.call("POST", `/api/approvals/${approval.id}/secret`, {
      value: VALUE,
      args_sha256: approval.args_sha256,
    });
    assert.equal(late.status, 409);
  });

  test("a bad name is refused before anything waits", async () => {
    const where = await setUp(t);
    const a = await agentWith(t, where, [requesting("lower-case"), { text: "Hm." }]);
    const runId = await start(t, a.id);
    assert.equal((await ended(t, runId)).status, "succeeded");
    const { results } = await toolAnswers(t, runId);
    assert.match(JSON.stringify(results[0]), /must match/);
    assert.deepEqual((await t.call("GET", `/api/runs/${runId}/approvals`)).body.items, []);
  });

  test("a viewer or a stranger cannot give the value: refused, nothing stored, the request still waits", async () => {
    const as = asMember(() => people);
    const owner = as("owner@example.com");
    const org = (await owner("POST", "/api/orgs", { name: "srp" })).body;
    const machine = (await owner("POST", "/api/machines", { org_id: org.id, name: "m" })).body;
    const member = await owner("PUT", `/api/orgs/${org.id}/members`, {
      email: "viewer@example.com",
      role: "viewer",
    });
    assert.equal(member.status, 200, JSON.stringify(member.body));
    const a = await makeAgent(
      owner,
      { org_id: org.id, machine_id: machine.id },
      {
        name: "asker",
        tools: builtins("secret_request", "run_command"),
        tool_policy: "permit(principal, action, resource);",
      },
    );
    await putHomeFile(
      people,
      a.id,
      "turns.json",
      JSON.stringify({
        turns: [
          requesting("VIEWED_TOKEN"),
          { tool_calls: [{ name: "run_command", input: { command: 'echo "[${VIEWED_TOKEN:-unset}]"' } }] },
          { text: "Done." },
        ],
      }),
      "owner@example.com",
    );
    const started = await owner("POST", `/api/agents/${a.id}/runs`, { kind: "agent", input: "go" });
    assert.equal(started.status, 202, JSON.stringify(started.body));
    const runId = started.body.id as string;
    const approval = await waitFor("the run to wait for a secret", async () => {
      const run = (await owner("GET", `/api/runs/${runId}`)).body;
      if (run.status !== "waiting") return undefined;
      const x = (await owner("GET", `/api/runs/${runId}/approvals`)).body.items[0];
      return x?.status === "waiting" ? x : undefined;
    });
    const answer = { value: VALUE, args_sha256: approval.args_sha256 };

    const viewer = await as("viewer@example.com")("POST", `/api/approvals/${approval.id}/secret`, answer);
    assert.equal(viewer.status, 403, JSON.stringify(viewer.body));
    assert.equal(viewer.body.error.code, "access.denied");
    const stranger = await as("stranger@example.org")("POST", `/api/approvals/${approval.id}/secret`, answer);
    assert.equal(stranger.status, 404, JSON.stringify(stranger.body));
    assert.ok(!JSON.stringify([viewer.body, stranger.body]).includes(VALUE));

    // nothing stored, the request still waits, the value is nowhere
    assert.deepEqual((await owner("GET", `/api/secrets?org_id=${org.id}`)).body.items, []);
    const still = (await owner("GET", `/api/runs/${runId}/approvals`)).body.items[0];
    assert.equal(still.status, "waiting");
    assert.equal((await owner("GET", `/api/runs/${runId}`)).body.status, "waiting");

    // the owner may answer it: the agent's next command sees the value
    const given = await owner("POST", `/api/approvals/${approval.id}/secret`, answer);
    assert.equal(given.status, 200, JSON.stringify(given.body));
    const done = await waitFor("the run to end", async () => {
      const run = (await owner("GET", `/api/runs/${runId}`)).body;
      return TERMINAL_STATUSES.includes(run.status) ? run : undefined;
    });
    assert.equal(done.status, "succeeded", JSON.stringify(done));
    const events = JSON.stringify((await owner("GET", `/api/runs/${runId}/events`)).body.items);
    assert.ok(!events.includes(VALUE), "the value is in the run's records");
    assert.match(events, /\[\[redacted\]\]/);
  });
});
