// warren as an MCP server, driven by the MCP SDK's own client over both transports: stdio
// (`warren mcp` spawned as a desktop client would, pointed at a real server with the CLI's
// identity) and streamable HTTP (`/mcp` on the same server, identified by the trusted header).
// Each lists the tools, execs in a real box, streams a conversation's answer from a scripted
// model server on loopback as progress notifications, and decides an approval (over HTTP by
// the protocol's elicitation, over stdio by the decide tool); a viewer's client is refused exec
// with access.denied, as the API refuses a viewer.
import assert from "node:assert/strict";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ElicitRequestSchema, type CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { boxSkipReason } from "../box/fixture.js";
import { putHomeFile } from "../support/agent-runs.js";
import { privateAllow } from "../support/bound.js";
import { startFakeOpenAI, type FakeModelServer } from "../support/fake-models.js";
import { asMember } from "../support/org.js";
import { startTestServer, type TestServer } from "../support/server.js";
import { assistantAgent, waitFor } from "../conversations/support.js";
import { approvalAgent } from "../approvals/support.js";

const OWNER = "owner@example.com";
const VIEWER = "viewer@example.com";
const ROOT = path.resolve(import.meta.dirname, "../..");
const ANSWER = "the scripted model answers in several small words for the stream";

type Kind = "stdio" | "http";

describe("warren as an MCP server", { skip: boxSkipReason() ?? false }, () => {
  let t: TestServer;
  let fake: FakeModelServer;
  let org: string;
  const clients: Client[] = [];

  /** An MCP client connected as `email` over `kind`; it answers elicitations with `allow`. */
  const connect = async (kind: Kind, email: string): Promise<Client> => {
    const client = new Client(
      { name: "warren-test", version: "1.0.0" },
      { capabilities: { elicitation: { form: {} } } },
    );
    client.setRequestHandler(ElicitRequestSchema, async () => ({
      action: "accept",
      content: { decision: "allow" },
    }));
    const transport =
      kind === "http"
        ? new StreamableHTTPClientTransport(new URL(`${t.url}/mcp`), {
            requestInit: { headers: { "x-forwarded-email": email } },
          })
        : new StdioClientTransport({
            command: process.execPath,
            args: ["--import", "tsx", path.join(ROOT, "src/cli/main.ts"), "mcp"],
            cwd: ROOT,
            env: {
              PATH: process.env.PATH ?? "",
              HOME: process.env.HOME ?? "/root",
              WARREN_URL: t.url!,
              WARREN_HEADERS: `x-forwarded-email: ${email}`,
            },
            stderr: "inherit",
          });
    clients.push(client);
    await client.connect(transport);
    return client;
  };

  const textOf = (r: CallToolResult): string =>
    r.content.map((c) => (c.type === "text" ? c.text : "")).join("\n");
  const call = async (
    c: Client,
    name: string,
    args: Record<string, unknown>,
    onprogress?: (m: string) => void,
  ) =>
    (await c.callTool({ name, arguments: args }, undefined, {
      timeout: 120_000,
      ...(onprogress ? { onprogress: (p) => onprogress(p.message ?? "") } : {}),
    })) as CallToolResult;

  before(async () => {
    fake = await startFakeOpenAI();
    fake.script([{ text: ANSWER }]);
    t = await startTestServer({
      listen: true,
      env: { AUTH_MODE: "trusted-header", WARREN_EGRESS_PRIVATE_ALLOW: privateAllow(fake) },
    });
    const owner = asMember(() => t)(OWNER);
    org = (await owner("POST", "/api/orgs", { name: "doors" })).body.id;
    const machine = (await owner("POST", "/api/machines", { org_id: org, name: "m" })).body.id;
    await assistantAgent({ ...t, call: (m, u, b) => owner(m, u, b) }, { org, machine }, "talker", {
      baseUrl: fake.baseUrl,
      model: "stream",
    });
    for (const kind of ["stdio", "http"]) {
      const a = await owner("POST", "/api/agents", approvalAgent(org, machine, `writer-${kind}`));
      assert.equal(a.status, 201, JSON.stringify(a.body));
      const turns = [
        {
          tool_calls: [{ name: "write_file", input: { path: "out.txt", content: `approved over ${kind}` } }],
        },
        { text: "Written." },
      ];
      await putHomeFile(t, a.body.id, "turns.json", JSON.stringify({ turns }), OWNER);
    }
    const added = await owner("PUT", `/api/orgs/${org}/members`, { email: VIEWER, role: "viewer" });
    assert.equal(added.status, 200, JSON.stringify(added.body));
  });
  after(async () => {
    for (const c of clients) await c.close().catch(() => undefined);
    // close() removes every box the server started
    await t?.close();
    await fake?.close();
  });

  for (const kind of ["stdio", "http"] as const) {
    test(`${kind}: lists the tools and the resource templates`, async () => {
      const c = await connect(kind, OWNER);
      const names = (await c.listTools()).tools.map((x) => x.name).sort();
      for (const name of [
        "agents_list",
        "approvals_decide",
        "approvals_list",
        "conversations_send",
        "exec",
        "files_read",
        "files_write",
        "runs_start",
      ])
        assert.ok(names.includes(name), `${name} among ${names.join(", ")}`);
      const templates = (await c.listResourceTemplates()).resourceTemplates.map((x) => x.uriTemplate);
      assert.deepEqual(templates.sort(), [
        "warren://agents/{agent}/files/{+path}",
        "warren://runs/{run}/output",
      ]);
      const agents = JSON.parse(textOf(await call(c, "agents_list", { org: "doors" })));
      assert.ok(agents.some((a: { name: string }) => a.name === "talker"));
    });

    test(`${kind}: execs in the agent's box, writes and reads a home file`, async () => {
      const c = await connect(kind, OWNER);
      const r = await call(c, "exec", { agent: "talker", org: "doors", command: `echo box-${kind}; id -un` });
      assert.equal(r.isError, false, textOf(r));
      const result = JSON.parse(textOf(r));
      assert.equal(result.exit_code, 0);
      assert.match(result.stdout, new RegExp(`^box-${kind}\\n`));
      const w = await call(c, "files_write", {
        agent: "talker",
        org: "doors",
        path: `notes/${kind}.md`,
        content: "hi",
      });
      assert.notEqual(w.isError, true, textOf(w));
      assert.equal(
        textOf(await call(c, "files_read", { agent: "talker", org: "doors", path: `notes/${kind}.md` })),
        "hi",
      );
      const id = JSON.parse(textOf(await call(c, "agents_list", { org: "doors" }))).find(
        (a: { name: string }) => a.name === "talker",
      ).id;
      const res = await c.readResource({ uri: `warren://agents/${id}/files/notes/${kind}.md` });
      assert.equal((res.contents[0] as { text: string }).text, "hi");
    });

    test(`${kind}: a conversation's answer streams as progress notifications`, async () => {
      const c = await connect(kind, OWNER);
      const pieces: string[] = [];
      const r = await call(c, "conversations_send", { agent: "talker", org: "doors", text: "hello" }, (m) =>
        pieces.push(m),
      );
      assert.equal(r.isError, false, textOf(r));
      assert.equal((r.content[0] as { text: string }).text, ANSWER);
      const streamed = pieces.filter((p) => !p.startsWith("[run ")).join("");
      assert.ok(pieces.length >= 2, `progress: ${JSON.stringify(pieces)}`);
      assert.equal(streamed, ANSWER, `the pieces: ${JSON.stringify(pieces)}`);
      const { conversation, run } = JSON.parse((r.content[1] as { text: string }).text);
      assert.match(conversation, /^cnv_|^conv_|./);
      const out = await c.readResource({ uri: `warren://runs/${run}/output` });
      assert.equal((out.contents[0] as { text: string }).text, ANSWER);
    });

    test(`${kind}: decides an approval ${kind === "http" ? "by elicitation" : "with the decide tool"}`, async () => {
      const c = await connect(kind, OWNER);
      const agent = `writer-${kind}`;
      const started = await call(c, "runs_start", { agent, org: "doors", input: "go", wait: false });
      assert.notEqual(started.isError, true, textOf(started));
      const runId = JSON.parse(textOf(started)).id as string;
      const waiting = await waitFor("the approval", async () => {
        const list = JSON.parse(textOf(await call(c, "approvals_list", { org: "doors" })));
        return list.find((a: { run_id: string }) => a.run_id === runId);
      });
      const decided = await call(c, "approvals_decide", {
        approval: waiting.id,
        ...(kind === "stdio" ? { decision: "allow" } : {}),
      });
      assert.notEqual(decided.isError, true, textOf(decided));
      assert.equal(JSON.parse(textOf(decided)).status, "allowed");
      assert.equal(JSON.parse(textOf(decided)).decided_by, OWNER);
      const done = await waitFor("the run's end", async () => {
        const r = await c.readResource({ uri: `warren://runs/${runId}/output` });
        const text = (r.contents[0] as { text: string }).text;
        return text === "Written." ? text : undefined;
      });
      assert.equal(done, "Written.");
      const file = await call(c, "files_read", { agent, org: "doors", path: "out.txt" });
      assert.equal(textOf(file), `approved over ${kind}`);
    });

    test(`${kind}: a viewer's client is refused exec and writes with access.denied`, async () => {
      const c = await connect(kind, VIEWER);
      const listed = JSON.parse(textOf(await call(c, "agents_list", { org: "doors" })));
      assert.ok(
        listed.some((a: { name: string }) => a.name === "talker"),
        "a viewer sees the agents",
      );
      const r = await call(c, "exec", { agent: "talker", org: "doors", command: "touch /tmp/nope" });
      assert.equal(r.isError, true);
      assert.match(textOf(r), /^access\.denied: /);
      const w = await call(c, "files_write", { agent: "talker", org: "doors", path: "x.txt", content: "no" });
      assert.equal(w.isError, true);
      assert.match(textOf(w), /^access\.denied: /);
    });
  }

  test("http: a session is its opener's: another identity's request on it is refused", async () => {
    const c = await connect("http", OWNER);
    const sid = (c.transport as StreamableHTTPClientTransport).sessionId!;
    const r = await fetch(`${t.url}/mcp`, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
        "mcp-session-id": sid,
        "mcp-protocol-version": "2025-06-18",
        "x-forwarded-email": VIEWER,
      },
      body: JSON.stringify({ jsonrpc: "2.0", id: 9, method: "tools/list" }),
    });
    assert.equal(r.status, 403);
    assert.equal(((await r.json()) as { error: { code: string } }).error.code, "access.denied");
    const anonymous = await fetch(`${t.url}/mcp`, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize", params: {} }),
    });
    assert.equal(anonymous.status, 401);
  });
});
