// A run's tools on a real server with a real box and home: the builtins by the home file rules
// and the walls of exec, web_fetch under the allow-list, an http tool with a secret header, an
// MCP server's tools, each call decided by the Cedar policy and recorded.
import assert from "node:assert/strict";
import fs from "node:fs/promises";
import http from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { AgentSpec } from "../../src/contract/spec.js";
import type { ToolCallRecord, Toolset } from "../../src/tools/types.js";
import { boxSkipReason } from "../box/fixture.js";
import { privateAllow } from "../support/bound.js";
import { startMcpServer, type TestMcpServer } from "../support/mcp.js";
import { newId } from "../../src/ids.js";
import { startTestServer, type TestServer } from "../support/server.js";
import { mountToolGateway } from "../support/tool-gateway.js";
import { agentSecret, builtins, newAgent, orgAndMachine } from "../support/org.js";
import { openToolset } from "../support/toolset.js";

const SECRET = "tok-9f8e7d6c5b4a3210-very-secret";
const ALLOW_ALL = `@id("all") permit(principal, action, resource);`;

interface Loopback {
  url: string;
  port: number;
  seen: { method: string; url: string; headers: http.IncomingHttpHeaders; body: string }[];
  close(): Promise<void>;
}

/** An HTTP server on loopback that answers what it got (headers included) as JSON. */
async function echoServer(): Promise<Loopback> {
  const seen: Loopback["seen"] = [];
  const srv = http.createServer((req, res) => {
    let body = "";
    req.on("data", (c: Buffer) => (body += c.toString()));
    req.on("end", () => {
      seen.push({ method: req.method ?? "", url: req.url ?? "", headers: req.headers, body });
      if (req.url?.startsWith("/redirect")) {
        const to = new URL(req.url, "http://x").searchParams.get("to") ?? "/";
        res.writeHead(302, { location: to }).end();
        return;
      }
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ method: req.method, url: req.url, headers: req.headers, body }));
    });
  });
  await new Promise<void>((resolve) => srv.listen(0, "127.0.0.1", resolve));
  const { port } = srv.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    seen,
    close: () =>
      new Promise<void>((resolve) => {
        srv.closeAllConnections();
        srv.close(() => resolve());
      }),
  };
}

describe("a run's tools", { skip: boxSkipReason() ?? false }, () => {
  let t: TestServer;
  let api: Loopback;
  let other: Loopback;
  let mcp: TestMcpServer;
  let a: { id: string; org_id: string; machine_id: string; slot: number; uid: number; home: string };
  const open: Toolset[] = [];

  before(async () => {
    api = await echoServer();
    other = await echoServer();
    mcp = await startMcpServer();
    // the operator's bound holds the api server's, the MCP server's and port 9's loopback ports
    // only: the other stays out of reach
    t = await startTestServer({
      env: { BOX_IDLE_S: "30", WARREN_EGRESS_PRIVATE_ALLOW: privateAllow(api, mcp, 9) },
      egressHosts: { "named.test": ["127.0.0.1"] },
    });
    const { org, machine } = await orgAndMachine(t.call, "tools", { memory_mib: 512 });
    a = await newAgent(t.call, { org, machine }, { name: "a" });
    const p = await t.call("PATCH", `/api/agents/${a.id}`, {
      sandbox_policy: { network: { allow: [`127.0.0.1:${api.port}`, `named.test:${other.port}`] } },
    });
    assert.equal(p.status, 200, JSON.stringify(p.body));
    await agentSecret(t.call, org.id, a.id, { name: "API_TOKEN", value: SECRET });
    // the tools' headers carry a secret of use tool: only the server reads it
    await agentSecret(t.call, org.id, a.id, { name: "TOOL_TOKEN", value: SECRET, use: "tool" });
  });

  after(async () => {
    for (const s of open) await s.close();
    await t?.close();
    await api?.close();
    await other?.close();
    await mcp?.close();
  });

  async function tools(
    spec: Partial<Record<"tools" | "tool_policy", unknown>>,
    via: "loop" | "gateway" = "loop",
  ): Promise<{ set: Toolset; records: ToolCallRecord[]; runId: string }> {
    const opened = await openToolset(t, a.id, spec, via);
    open.push(opened.set);
    return opened;
  }

  test("an empty policy denies every call, and each refusal is an answer and a record", async () => {
    const { set, records } = await tools({ tools: builtins("read_file", "write_file"), tool_policy: "" });
    assert.deepEqual(
      set.tools.map((x) => x.name),
      ["read_file", "write_file"],
    );
    const out = await set.call("write_file", { path: "x.txt", content: "no" });
    assert.match(out.output, /refused by the agent's tool policy/);
    assert.equal(out.record.decision, "deny");
    assert.deepEqual(records, [out.record]);
    assert.equal(records[0]?.tool, "write_file");
    assert.deepEqual(records[0]?.arguments, { path: "x.txt", content: "no" });
    await assert.rejects(fs.stat(path.join(homeDir(), "x.txt")));
  });

  function homeDir(): string {
    return t.server.provider.homes.homeDir(a.machine_id, a.id);
  }

  test("write_file, read_file and list_files in the home, owned by the agent", async () => {
    const { set, records } = await tools({
      tools: builtins("read_file", "write_file", "list_files"),
      tool_policy: ALLOW_ALL,
    });
    const w = await set.call("write_file", { path: "notes/today.md", content: "hello from the tool" });
    assert.match(w.output, /wrote 19 bytes to notes\/today.md/);
    assert.deepEqual(w.record.policies, ["all"]);
    const st = await fs.stat(path.join(homeDir(), "notes/today.md"));
    assert.equal(st.uid, a.uid);
    assert.equal(
      (await set.call("read_file", { path: `/home/${a.id}/notes/today.md` })).output,
      "hello from the tool",
    );
    const l = await set.call("list_files", {});
    assert.match(l.output, /^notes\/\tfolder$/m);
    const l2 = await set.call("list_files", { path: "notes" });
    assert.equal(l2.output, "today.md\tfile\t19");
    assert.equal(records.length, 4);
    assert.ok(records.every((r) => r.decision === "allow" && r.error === undefined && r.duration_ms >= 0));
    assert.equal(records[1]?.result_bytes, Buffer.byteLength("hello from the tool"));
    // a long argument is written whole, and kept cut in the record
    const big = "y".repeat(10_000);
    await set.call("write_file", { path: "big.txt", content: big });
    assert.equal(await fs.readFile(path.join(homeDir(), "big.txt"), "utf8"), big);
    const kept = (records.at(-1)?.arguments as { content: string }).content;
    assert.equal(kept, `${"y".repeat(4096)}[... ${10_000 - 4096} more bytes]`);
  });

  test("paths outside the home and links are refused, as answers", async () => {
    const { set } = await tools({
      tools: builtins("read_file", "write_file", "list_files"),
      tool_policy: ALLOW_ALL,
    });
    const home = homeDir();
    await fs.writeFile(path.join(home, "real.txt"), "real");
    await fs.symlink("/etc/passwd", path.join(home, "out-link"));
    await fs.symlink("real.txt", path.join(home, "in-link"));
    await fs.symlink("/etc", path.join(home, "etc-dir"));
    for (const [tool, args, re] of [
      ["read_file", { path: "../../etc/passwd" }, /leaves/],
      ["read_file", { path: "/etc/passwd" }, /must be inside/],
      ["read_file", { path: "out-link" }, /link/],
      ["read_file", { path: "in-link" }, /link/],
      ["read_file", { path: "etc-dir/passwd" }, /link/],
      ["write_file", { path: "out-link", content: "x" }, /link/],
      ["write_file", { path: "etc-dir/evil", content: "x" }, /link/],
      ["list_files", { path: "etc-dir" }, /link/],
      ["list_files", { path: "../" }, /leaves/],
      ["read_file", { path: 3 }, /must be a string/],
      ["read_file", {}, /required/],
    ] as const) {
      const out = await set.call(tool, args);
      // a path that has no canonical form (it leaves the home, it is no string) is refused
      // before the policy; a link is found when the tool acts
      const lexical = re.source !== "link";
      assert.match(
        out.output,
        lexical ? /^the call was refused before the tool policy: / : /^the call failed: /,
        `${tool} ${JSON.stringify(args)}: ${out.output}`,
      );
      assert.match(out.output, re, `${tool} ${JSON.stringify(args)}: ${out.output}`);
      assert.equal(out.record.decision, lexical ? "deny" : "allow");
      assert.equal(typeof out.record.error, "string");
    }
    assert.doesNotMatch((await fs.readFile("/etc/passwd", "utf8")).slice(0, 10), /^x$/);
    await assert.rejects(fs.stat("/etc/evil"));
    const listed = (await set.call("list_files", {})).output;
    assert.match(listed, /^out-link\tlink$/m);
  });

  test("run_command runs in the box as the agent, only when listed", async () => {
    const none = await tools({ tools: builtins("read_file"), tool_policy: ALLOW_ALL });
    const missing = await none.set.call("run_command", { command: "id -u" });
    assert.match(missing.output, /there is no tool named run_command/);
    const { set } = await tools({ tools: builtins("run_command"), tool_policy: ALLOW_ALL });
    const out = await set.call("run_command", {
      command: 'id -u; pwd; echo "$API_TOKEN"; echo oops >&2; exit 3',
    });
    const lines = out.output.split("\n");
    assert.equal(lines[0], "exit code 3");
    assert.equal(lines[2], String(a.uid));
    assert.equal(lines[3], a.home);
    // the secret reaches the command's environment, never the answer
    assert.equal(lines[4], "[redacted]");
    assert.ok(!out.output.includes(SECRET));
    assert.match(out.output, /--- stderr\noops/);
    const cannot = await set.call("run_command", {
      command: "cat /root/.bashrc 2>&1; touch /etc/x 2>&1; echo done",
    });
    assert.match(cannot.output, /denied|No such file|Read-only/i);
    await assert.rejects(fs.stat("/etc/x"));
    const slow = await set.call("run_command", { command: "sleep 5", timeout_s: 1 });
    assert.match(slow.output, /^timed out after 1 s/);
  });

  test("a policy decides by tool name and by an argument", async () => {
    const { set, records } = await tools({
      tools: builtins("read_file", "run_command"),
      tool_policy: `
        @id("reads") permit(principal, action, resource == Tool::"read_file");
        @id("commands") permit(principal, action, resource == Tool::"run_command");
        @id("no-rm") forbid(principal, action, resource == Tool::"run_command")
          when { context.arguments has command && context.arguments.command like "*rm *" };`,
    });
    await fs.writeFile(path.join(homeDir(), "keep.txt"), "keep");
    const rm = await set.call("run_command", { command: "rm keep.txt" });
    assert.match(rm.output, /refused.*forbidden by the policy no-rm/);
    assert.deepEqual(rm.record.policies, ["no-rm"]);
    assert.equal(await fs.readFile(path.join(homeDir(), "keep.txt"), "utf8"), "keep");
    const ok = await set.call("run_command", { command: "cat keep.txt" });
    assert.match(ok.output, /^exit code 0\n--- stdout\nkeep$/);
    assert.deepEqual(ok.record.policies, ["commands"]);
    // arguments given as JSON text are taken as the object they spell
    const text = await set.call("run_command", JSON.stringify({ command: "rm keep.txt" }));
    assert.deepEqual(text.record.policies, ["no-rm"]);
    assert.deepEqual(text.record.arguments, { command: "rm keep.txt" });
    assert.deepEqual(
      records.map((r) => r.decision),
      ["deny", "allow", "deny"],
    );
  });

  test("a record that cannot be written does not fail the call", async () => {
    const runId = newId("run");
    const set = await t.server.tools.open({
      runId,
      workload: await t.server.workloads.openAgent(a.id, { run: { id: runId } }),
      spec: AgentSpec.parse({
        kind: "assistant",
        model: { provider: "script", name: "s.json" },
        tools: builtins("list_files"),
        tool_policy: ALLOW_ALL,
      }),
      signal: new AbortController().signal,
      record: async () => {
        throw new Error("the trace is gone");
      },
    });
    open.push(set);
    const out = await set.call("list_files", {});
    assert.equal(out.record.decision, "allow");
    assert.equal(out.record.error, undefined);
  });

  test("web_fetch goes out through the egress proxy: its policy decides, its events record", async () => {
    const { set } = await tools({ tools: builtins("web_fetch"), tool_policy: ALLOW_ALL });
    const ok = await set.call("web_fetch", { url: `${api.url}/page?q=1` });
    assert.match(ok.output, /^status 200\ncontent-type: application\/json/);
    assert.match(ok.output, /"url":"\/page\?q=1"/);
    // loopback outside the operator's bound: the address rule's refusal, whatever the policy
    const refused = await set.call("web_fetch", { url: `${other.url}/page` });
    assert.match(refused.output, /^the call was refused \(tool\.address_refused\): /);
    // a name the policy does not list: the policy's refusal
    const unlisted = await set.call("web_fetch", { url: "http://unlisted.test/x" });
    assert.match(
      unlisted.output,
      /^the call failed: the network policy refused it: unlisted\.test:80 is not in/,
    );
    const hop = await set.call("web_fetch", {
      url: `${api.url}/redirect?to=${encodeURIComponent(`${other.url}/x`)}`,
    });
    assert.match(hop.output, /tool\.address_refused/);
    // a listed name that resolves to loopback outside the operator's bound is refused
    const named = await set.call("web_fetch", { url: `http://named.test:${other.port}/page` });
    assert.match(
      named.output,
      /tool\.address_refused.*named\.test resolves to 127\.0\.0\.1:\d+ is a loopback address outside the operator's bound/,
    );
    const tunnel = await set.call("web_fetch", { url: `https://127.0.0.1:${other.port}/` });
    assert.match(tunnel.output, /tool\.address_refused/);
    assert.equal(other.seen.length, 0, "no refused request reached the server");
    const bad = await set.call("web_fetch", { url: "file:///etc/passwd" });
    assert.match(bad.output, /only http and https URLs/);
    const events = (await t.call("GET", `/api/agents/${a.id}/egress`)).body.items as {
      decision: string;
      host: string;
      port: number;
      path?: string;
    }[];
    const mine = events.filter((e) => e.port === api.port || e.port === other.port).reverse();
    assert.deepEqual(
      mine.map((e) => [e.decision, e.host, e.port]),
      [
        ["allowed", "127.0.0.1", api.port],
        ["refused", "127.0.0.1", other.port],
        ["allowed", "127.0.0.1", api.port],
        ["refused", "127.0.0.1", other.port],
        ["refused", "named.test", other.port],
        ["refused", "127.0.0.1", other.port],
      ],
    );
  });

  test("an http tool calls under its base URL with a secret header that never shows", async () => {
    const { set, records } = await tools({
      tools: [
        {
          type: "http",
          name: "api",
          base_url: `${api.url}/v1/`,
          methods: ["GET", "POST"],
          headers: { Authorization: "TOOL_TOKEN" },
        },
        {
          type: "http",
          name: "nokey",
          base_url: `${api.url}/v2`,
          methods: ["GET"],
          headers: { "X-Key": "NOT_GRANTED" },
        },
      ],
      tool_policy: ALLOW_ALL,
    });
    const before = api.seen.length;
    const got = await set.call("api", { method: "POST", path: "items", query: { a: "1" }, body: '{"n":1}' });
    assert.match(got.output, /^status 200/);
    const sent = api.seen[before];
    assert.equal(sent?.headers.authorization, SECRET, "the server got the secret");
    assert.equal(sent?.url, "/v1/items?a=1");
    assert.equal(sent?.body, '{"n":1}');
    assert.equal(sent?.headers["content-type"], "application/json");
    // the echo carried the header back: the answer and the record hide it
    assert.ok(!got.output.includes(SECRET), got.output);
    assert.match(got.output, /"authorization":"\[redacted\]"/);
    assert.ok(!JSON.stringify(records).includes(SECRET));
    assert.ok(!JSON.stringify(set.tools).includes(SECRET));
    for (const [args, re] of [
      [{ method: "GET", path: "../admin" }, /leaves the tool's base URL/],
      [{ method: "GET", path: "%2e%2e/admin" }, /leaves the tool's base URL/],
      [{ method: "GET", path: "http://evil.example/x" }, /not a URL/],
      [{ method: "GET", path: "//evil.example/x" }, /not a URL/],
      [{ method: "DELETE", path: "items/1" }, /not allowed/],
    ] as const) {
      const out = await set.call("api", args);
      assert.match(out.output, re, JSON.stringify(args));
    }
    assert.equal(api.seen.length, before + 1, "no refused call reached the server");
    const nokey = await set.call("nokey", { method: "GET", path: "x" });
    assert.match(nokey.output, /NOT_GRANTED .*not granted/);
  });

  test("an MCP server's tools are listed at the start and called through the policy", async () => {
    const { set, records } = await tools({
      tools: [
        { type: "mcp", name: "srv", url: mcp.url, headers: { Authorization: "TOOL_TOKEN" } },
        { type: "mcp", name: "gone", url: "http://127.0.0.1:9/mcp" },
      ],
      tool_policy: `
        @id("srv") permit(principal, action, resource in Server::"srv");
        @id("no-add") forbid(principal, action, resource == Tool::"srv__add");`,
    });
    assert.deepEqual(
      set.tools.map((x) => x.name),
      ["srv__echo", "srv__add", "srv__fail"],
    );
    assert.equal(set.warnings.length, 1);
    assert.match(set.warnings[0] ?? "", /MCP server gone .* could not be listed/);
    assert.deepEqual(set.tools[0]?.parameters.required, ["text"]);
    const echo = await set.call("srv__echo", { text: `hi ${SECRET}` });
    assert.equal(echo.output, "echo: hi [redacted]");
    assert.deepEqual(echo.record.policies, ["srv"]);
    assert.ok(mcp.headers.every((h) => h.authorization === SECRET));
    const add = await set.call("srv__add", { a: 1, b: 2 });
    assert.equal(add.record.decision, "deny");
    assert.deepEqual(add.record.policies, ["no-add"]);
    const fail = await set.call("srv__fail", {});
    assert.match(fail.output, /the call failed: it went wrong/);
    assert.equal(fail.record.error, "it went wrong");
    assert.deepEqual(
      mcp.calls.map((c) => c.tool),
      ["echo", "fail"],
    );
    assert.ok(!JSON.stringify(records).includes(SECRET));
  });

  test("the tool gateway: an MCP server of the run's tools, for its workload token only", async () => {
    const { set, records, runId } = await tools(
      {
        tools: builtins("read_file", "write_file"),
        tool_policy: `@id("reads") permit(principal, action, resource == Tool::"read_file") when { context.run.via == "gateway" };`,
      },
      "gateway",
    );
    await fs.writeFile(path.join(homeDir(), "gw.txt"), "through the gateway");
    // the run's session of the model gateway (its workload token is the run's only key), and
    // the gateway mounted as a harness engineer would in Fastify
    const gw = await mountToolGateway(t.server.tools, {
      runId,
      agent: { id: a.id, orgId: a.org_id, machineId: a.machine_id },
      path: "/api/tool-gateway/mcp",
    });
    const session = gw.session;
    const connect = (token: string | null) => gw.connect(token);
    try {
      const client = await connect(session.token);
      const listed = await client.listTools();
      assert.deepEqual(
        listed.tools.map((x) => x.name),
        ["read_file", "write_file"],
      );
      assert.deepEqual(listed.tools[0]?.inputSchema.required, ["path"]);
      const read = await client.callTool({ name: "read_file", arguments: { path: "gw.txt" } });
      assert.deepEqual(read.content, [{ type: "text", text: "through the gateway" }]);
      assert.equal(read.isError, false);
      const write = await client.callTool({
        name: "write_file",
        arguments: { path: "gw.txt", content: "x" },
      });
      assert.equal(write.isError, true);
      assert.match(JSON.stringify(write.content), /refused by the agent's tool policy/);
      assert.equal(await fs.readFile(path.join(homeDir(), "gw.txt"), "utf8"), "through the gateway");
      assert.deepEqual(
        records.map((r) => [r.tool, r.decision, r.policies]),
        [
          ["read_file", "allow", ["reads"]],
          ["write_file", "deny", []],
        ],
      );
      await client.close();

      for (const bad of ["wrk_wrong", null]) {
        await assert.rejects(connect(bad), /401|auth|Unauthorized/i, String(bad));
      }
      const raw = await fetch(gw.url, {
        method: "POST",
        headers: { authorization: "Bearer wrk_wrong", "content-type": "application/json" },
        body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }),
      });
      assert.equal(raw.status, 401);
      assert.equal(((await raw.json()) as { error: { code: string } }).error.code, "auth.required");
      const listAs = (token: string) =>
        fetch(gw.url, {
          method: "POST",
          headers: {
            authorization: `Bearer ${token}`,
            "content-type": "application/json",
            accept: "application/json, text/event-stream",
          },
          body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }),
        });
      assert.equal((await listAs(session.token)).status, 200);
      // once the run's toolset is closed, its token opens no tools; once its session is closed, nothing
      await set.close();
      assert.equal((await listAs(session.token)).status, 404);
      session.close();
      assert.equal((await listAs(session.token)).status, 401);
    } finally {
      await gw.close();
    }
  });
});
