// Server-side fetches on an agent's behalf (http tools, MCP servers, model base_urls) against the
// address rule, on a real server in trusted-header mode: every spelling of a loopback, unspecified
// or metadata address, and the API's own port even when the operator's bound covers all of
// loopback, is refused before anything is sent (a listener that records every connection gets
// none); a redirect from an allowed server to a refused address is not followed; and the attack
// of an http tool at the API with an identity header from a secret changes no membership.
import assert from "node:assert/strict";
import http from "node:http";
import net from "node:net";
import { after, before, describe, test } from "node:test";
import { AgentSpec } from "../../src/contract/spec.js";
import { modelTurn } from "../../src/models/turn.js";
import { boxSkipReason } from "../box/fixture.js";
import { eventsOfType, putHomeFile, runAgent } from "../support/agent-runs.js";
import { privateAllow } from "../support/bound.js";
import { editorOfOld } from "../support/members.js";
import { startTestServer, type TestServer } from "../support/server.js";
import { LOOPBACK_SPELLINGS } from "../support/spellings.js";
import { asMember, makeAgent } from "../support/org.js";

const OWNER = "owner@example.com";
const EDITOR = "editor@example.com";
const ALLOW_ALL = `@id("all") permit(principal, action, resource);`;

/** Every spelling the attack used for this host's loopback, and the unspecified address. */
const SPELLINGS = ["127.0.0.1", ...LOOPBACK_SPELLINGS];

/** A listener on every address of this host (IPv4 and IPv6) that counts the connections it gets. */
async function recorder(): Promise<{ port: number; count: () => number; close(): Promise<void> }> {
  let n = 0;
  const srv = net.createServer((s) => {
    n++;
    s.destroy();
  });
  await new Promise<void>((r) => srv.listen({ port: 0, host: "::", ipv6Only: false }, r));
  return {
    port: (srv.address() as net.AddressInfo).port,
    count: () => n,
    close: () => new Promise((r) => srv.close(() => r())),
  };
}

/** An allowed server (inside the bound) that redirects every request to `to`, counting them. */
async function redirector(
  to: () => string,
): Promise<{ url: string; port: number; hits: () => number; close(): Promise<void> }> {
  let n = 0;
  const srv = http.createServer((req, res) => {
    n++;
    req.resume();
    res.writeHead(307, { location: to() }).end();
  });
  await new Promise<void>((r) => srv.listen(0, "127.0.0.1", r));
  const port = (srv.address() as net.AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    hits: () => n,
    close: () =>
      new Promise((r) => {
        srv.closeAllConnections();
        srv.close(() => r());
      }),
  };
}

interface World {
  t: TestServer;
  /** The server as the owner calls it (for the run helpers). */
  ownerT: TestServer;
  apiPort: number;
  /** Connections the API's listener accepted (every request of the test itself is injected). */
  apiConnections: () => number;
  org: string;
  machine: string;
  owner: (method: string, url: string, body?: unknown) => Promise<{ status: number; body: any }>;
  editor: (method: string, url: string, body?: unknown) => Promise<{ status: number; body: any }>;
}

async function world(bound: string): Promise<World> {
  const t = await startTestServer({
    listen: true,
    env: { AUTH_MODE: "trusted-header", WARREN_EGRESS_PRIVATE_ALLOW: bound, BOX_IDLE_S: "30" },
  });
  let conns = 0;
  t.server.app.server.on("connection", () => conns++);
  const as = asMember(() => t);
  const owner = as(OWNER);
  const org = (await owner("POST", "/api/orgs", { name: "acme" })).body.id as string;
  const m = await owner("POST", "/api/machines", { org_id: org, name: "m", memory_mib: 512 });
  assert.equal(m.status, 201, JSON.stringify(m.body));
  // the widest seat below admin: an editor of old, holding no area
  const member = await editorOfOld(
    t,
    org,
    owner("PUT", `/api/orgs/${org}/members`, { email: EDITOR, role: "viewer" }),
  );
  assert.ok(member.status < 300, JSON.stringify(member.body));
  // the owner's email as a secret the editor's tools may use (what the attack fills the identity header from)
  const s = await owner("POST", "/api/secrets", {
    org_id: org,
    name: "WHO",
    value: OWNER,
    use: "tool",
    grants: [{ scope: "org", id: org }],
  });
  assert.equal(s.status, 201, JSON.stringify(s.body));
  const ownerT: TestServer = {
    ...t,
    inject: (o) => t.inject({ ...o, headers: { ...o.headers, "x-forwarded-email": OWNER } }),
    call: (method, url, body, headers = {}) =>
      t.call(method, url, body, { "x-forwarded-email": OWNER, ...headers }),
  };
  return {
    t,
    ownerT,
    apiPort: Number(new URL(t.url!).port),
    apiConnections: () => conns,
    org,
    machine: m.body.id,
    owner,
    editor: as(EDITOR),
  };
}

/** The roles of the organisation's members, by email. */
async function roles(w: World): Promise<Record<string, string>> {
  const r = await w.owner("GET", `/api/orgs/${w.org}/members`);
  assert.equal(r.status, 200, JSON.stringify(r.body));
  const items = (r.body.items ?? r.body) as { email: string; role: string }[];
  return Object.fromEntries(items.map((i) => [i.email, i.role]));
}

/** The editor makes an assistant agent whose script calls each of `tools` once, then answers. */
async function agentCalling(
  w: World,
  name: string,
  tools: { name: string; base_url: string }[],
  args: Record<string, unknown>,
): Promise<string> {
  const r = await makeAgent(
    w.editor,
    { org_id: w.org, machine_id: w.machine },
    {
      name,
      model: { provider: "script", name: "script.json" },
      tools: tools.map((x) => ({
        type: "http",
        name: x.name,
        base_url: x.base_url,
        methods: ["GET", "PUT"],
        headers: { "x-forwarded-email": "WHO" },
      })),
      tool_policy: ALLOW_ALL,
    },
  );
  const script = [
    { tool_calls: tools.map((x) => ({ name: x.name, input: args })) },
    { text: "the run went on" },
  ];
  await putHomeFile(w.ownerT, r.id, "script.json", JSON.stringify(script));
  return r.id as string;
}

/** The tool_call events of a run that went on to its end after every call was refused by the rule. */
function assertAllRefused(run: any, events: { type: string; data: any }[], n: number): void {
  assert.equal(run.status, "succeeded", JSON.stringify(run));
  assert.equal(run.output, "the run went on");
  const calls = eventsOfType(events, "tool_call");
  assert.equal(calls.length, n, JSON.stringify(calls));
  for (const c of calls) {
    assert.equal(c.code, "tool.address_refused", JSON.stringify(c));
    assert.match(c.output, /tool\.address_refused/);
  }
  assert.doesNotMatch(JSON.stringify(events), new RegExp(OWNER.replace(".", "\\.")));
}

/**
 * The attack on the API: an agent whose http tools are the API at every spelling of its
 * address calls each with the owner's identity header to make EDITOR an owner; asserts every
 * call was refused and answers the run's events.
 */
async function makeOwnerAttack(w: World): Promise<{ events: { type: string; data: any }[] }> {
  const id = await agentCalling(
    w,
    "attack",
    SPELLINGS.map((h, i) => ({ name: `api${i}`, base_url: `http://${h}:${w.apiPort}/api/` })),
    {
      method: "PUT",
      path: `orgs/${w.org}/members`,
      body: JSON.stringify({ email: EDITOR, role: "owner" }),
    },
  );
  const { run, events } = await runAgent(w.ownerT, id, "go");
  assertAllRefused(run, events, SPELLINGS.length);
  return { events };
}

const skip = boxSkipReason();

describe(
  "server-side fetches never reach the server, this host or the metadata service",
  { skip: skip ?? false },
  () => {
    let rec: Awaited<ReturnType<typeof recorder>>;
    let redir: Awaited<ReturnType<typeof redirector>>;
    let w: World;

    before(async () => {
      rec = await recorder();
      redir = await redirector(() => `http://127.1:${rec.port}/v1/chat/completions`);
      // the operator allows one loopback service: the redirecting one, not the recorder
      w = await world(privateAllow(redir));
    });
    after(async () => {
      await w?.t.close();
      await rec?.close();
      await redir?.close();
    });

    const targets = () => [...SPELLINGS.map((h) => `http://${h}:${rec.port}`), "http://169.254.169.254"];

    test("an http tool at any spelling of loopback or the metadata address: tool.address_refused, the run goes on, nothing sent", async () => {
      const list = targets();
      const id = await agentCalling(
        w,
        "spellings",
        list.map((u, i) => ({ name: `t${i}`, base_url: `${u}/api/` })),
        { method: "GET", path: "x" },
      );
      const { run, events } = await runAgent(w.ownerT, id, "go");
      assertAllRefused(run, events, list.length);
      assert.equal(rec.count(), 0, "the recording listener got no connection");
    });

    test("an MCP server at any of them is left out with a warning that says why, nothing sent", async () => {
      const list = [...targets(), redir.url];
      const [agent] = (await w.owner("GET", `/api/agents?org_id=${w.org}`)).body.items;
      const set = await w.t.server.tools.open({
        runId: "run_mcp_refused",
        workload: await w.t.server.workloads.openAgent(agent.id, { run: { id: "run_mcp_refused" } }),
        spec: AgentSpec.parse({
          kind: "assistant",
          model: { provider: "script", name: "s.json" },
          tools: list.map((u, i) => ({ type: "mcp", name: `m${i}`, url: `${u}/mcp` })),
          tool_policy: ALLOW_ALL,
        }),
        signal: new AbortController().signal,
      });
      try {
        assert.equal(set.tools.length, 0);
        assert.equal(set.warnings.length, list.length, JSON.stringify(set.warnings));
        for (const warning of set.warnings.slice(0, -1))
          assert.match(warning, /unavailable.*tool\.address_refused/);
        // the allowed server's redirect elsewhere is not followed
        assert.match(set.warnings.at(-1) ?? "", /could not be listed/);
      } finally {
        await set.close();
      }
      assert.equal(rec.count(), 0);
    });

    test("a model's base_url at any of them fails the call with the rule's reason, nothing sent; a run fails with it", async () => {
      const [agent] = (await w.owner("GET", `/api/agents?org_id=${w.org}`)).body.items;
      for (const [i, u] of targets().entries()) {
        const s = await w.t.server.gateway.open({
          runId: `run_model_${i}`,
          agent: { id: agent.id, orgId: w.org, machineId: w.machine },
          spec: AgentSpec.parse({
            kind: "assistant",
            model: { provider: "openai-compatible", name: "m", base_url: `${u}/v1` },
          }),
          input: "hi",
          events: async () => {},
        });
        try {
          await assert.rejects(
            modelTurn(s, { system: "", messages: [{ role: "user", content: "hi" }], tools: [] }),
            (err: Error) => /was refused: /.test(err.message),
            u,
          );
        } finally {
          s.close();
        }
      }
      const r = await makeAgent(
        w.editor,
        { org_id: w.org, machine_id: w.machine },
        {
          name: "local-model",
          model: { provider: "openai-compatible", name: "m", base_url: `http://localhost:${rec.port}/v1` },
        },
      );
      const { run } = await runAgent(w.ownerT, r.id, "hi");
      assert.equal(run.status, "failed");
      assert.match(
        run.status_reason,
        /address rule refused the model's address: .*outside the operator's bound/,
      );
      assert.equal(rec.count(), 0);
    });

    test("a redirect from an allowed server to a refused address is not followed", async () => {
      const before = redir.hits();
      const [agent] = (await w.owner("GET", `/api/agents?org_id=${w.org}`)).body.items;
      const s = await w.t.server.gateway.open({
        runId: "run_redirect",
        agent: { id: agent.id, orgId: w.org, machineId: w.machine },
        spec: AgentSpec.parse({
          kind: "assistant",
          model: { provider: "openai-compatible", name: "m", base_url: `${redir.url}/v1` },
        }),
        input: "hi",
        events: async () => {},
      });
      try {
        await assert.rejects(
          modelTurn(s, { system: "", messages: [{ role: "user", content: "hi" }], tools: [] }),
          /127\.0\.0\.1:\d+ is a loopback address outside the operator's bound/,
        );
      } finally {
        s.close();
      }
      assert.equal(redir.hits(), before + 1, "the allowed server was asked");
      assert.equal(rec.count(), 0, "the refused one got nothing");
    });

    test("the attack: an http tool at the API with the owner's identity header makes no one owner", async () => {
      await makeOwnerAttack(w);
      assert.equal((await roles(w))[EDITOR], "editor");
      assert.equal(w.apiConnections(), 0, "the API's listener got no connection");
    });
  },
);

describe(
  "the API's own port stays refused when the operator's bound covers all of loopback",
  { skip: skip ?? false },
  () => {
    let w: World;
    before(async () => {
      w = await world("127.0.0.0/8,::1/128");
    });
    after(async () => {
      await w?.t.close();
    });

    test("every spelling of the API's address, with the owner's identity header: refused, no membership change, no connection", async () => {
      const { events } = await makeOwnerAttack(w);
      for (const c of eventsOfType(events, "tool_call")) assert.match(c.output, /own endpoint|unspecified/);
      assert.equal((await roles(w))[EDITOR], "editor");
      assert.equal(w.apiConnections(), 0);
    });
  },
);
