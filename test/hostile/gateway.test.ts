// The model gateway attacked from a box and from an editor's seat, through a real server (in
// trusted-header mode, with an owner and an editor) and real boxes. A harness kind's CLI is
// replaced by a small python3 client (the fake claude-code below, bound into the box as the
// real one is) that calls the gateway bridge with the run's workload token:
//
// - budgets: it opens streamed calls with max_tokens 1500 and hangs up after the first delta,
//   before the usage; the run must still count what the provider billed, and cannot pass its
//   max_tokens (a call whose maximum would cross it never reaches the provider);
// - model keys stay with their provider: an editor points an agent's base_url at a server of
//   their own with key_secret naming the organisation's key, in every spelling (each
//   provider, the fallback, an alias, userinfo in the URL); a listener that records every
//   connection gets none, and only an owner can let the key go there;
// - the gateway redacts the key from every answer: a provider that echoes the request's
//   headers in a 200, streamed and whole, hands the box no key.
import assert from "node:assert/strict";
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import http from "node:http";
import net, { type AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { boxSkipReason } from "../box/fixture.js";
import { anthropicAt, eventsOfType, runAgent } from "../support/agent-runs.js";
import { startFakeAnthropic, type FakeModelServer } from "../support/fake-models.js";
import { editorOfOld } from "../support/members.js";
import { startTestServer, type TestServer } from "../support/server.js";
import { asMember } from "../support/org.js";

const KEY = "sk-ant-org-wide-3f9c1a7e5b2d8046";
const OWNER = "owner@example.com";
const EDITOR = "editor@example.com";
const skip = boxSkipReason() ?? false;

// The fake claude-code: what the run's input says, against the gateway bridge.
//   hangup N MAX  N streamed calls asking for MAX output tokens, each hung up after its first
//                 delta; prints each call's status
//   reflect       one streamed and one whole call, read to their end, saved to got-stream.txt
//                 and got-whole.txt in the home
const CLI = String.raw`#!/usr/bin/python3
import http.client, json, os, socket, sys, urllib.parse
base = urllib.parse.urlparse(os.environ["ANTHROPIC_BASE_URL"])
HOST, PORT = base.hostname, base.port or 80
TOKEN = os.environ["WARREN_RUN_TOKEN"]
args = sys.stdin.read().split()

def head_of(s):
    buf = b""
    while b"\r\n\r\n" not in buf:
        c = s.recv(65536)
        if not c:
            return None, buf
        buf += c
    head, rest = buf.split(b"\r\n\r\n", 1)
    return head.decode("latin-1"), rest

def body_of(s, head, rest, until):
    """The body (content-length or chunked), or its start up to the first chunk holding until."""
    length = [l.split(":", 1)[1] for l in head.split("\r\n") if l.lower().startswith("content-length:")]
    if length:
        while len(rest) < int(length[0]):
            rest += s.recv(65536)
        return rest[:int(length[0])]
    raw, out = rest, b""
    while until is None or until not in out:
        j = raw.find(b"\r\n")
        if j >= 0:
            size = int(raw[:j].split(b";")[0], 16)
            if size == 0:
                break
            if len(raw) >= j + 2 + size + 2:
                out += raw[j + 2:j + 2 + size]
                raw = raw[j + 2 + size + 2:]
                continue
        c = s.recv(65536)
        if not c:
            break
        raw += c
    return out

if args[0] == "hangup":
    n, most = int(args[1]), int(args[2])
    for i in range(n):
        body = json.dumps({"model": "m", "max_tokens": most, "stream": True,
                           "messages": [{"role": "user", "content": "tell me a long story %d" % i}]}).encode()
        s = socket.create_connection((HOST, PORT), timeout=60)
        s.sendall(b"POST /v1/messages HTTP/1.1\r\nHost: gateway\r\ncontent-type: application/json\r\n"
                  + b"x-api-key: " + TOKEN.encode() + b"\r\nanthropic-version: 2023-06-01\r\n"
                  + b"content-length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
        head, rest = head_of(s)
        status = head.split(" ")[1] if head else "closed"
        got = body_of(s, head or "", rest, b"content_block_delta" if status == "200" else None)
        s.close()  # a 200: hung up after the first delta, before the usage
        print("call %d: %s %s" % (i + 1, status, "hung up" if status == "200" else got.decode()))
        sys.stdout.flush()
elif args[0] == "reflect":
    for name, stream in (("got-stream.txt", True), ("got-whole.txt", False)):
        c = http.client.HTTPConnection(HOST, PORT, timeout=60)
        c.request("POST", "/v1/messages", json.dumps({"model": "m", "max_tokens": 100, "stream": stream,
                  "messages": [{"role": "user", "content": "reflect"}]}),
                  {"content-type": "application/json", "x-api-key": TOKEN, "anthropic-version": "2023-06-01"})
        r = c.getresponse()
        data = r.read()
        with open(name, "wb") as f:
            f.write(data)
        print("%s: %d %d bytes" % (name, r.status, len(data)))
`;

interface Provider {
  baseUrl: string;
  requests: { headers: http.IncomingHttpHeaders; body: any }[];
  /** Tokens billed: what its usage said, summed over the calls it answered. */
  billed: { input: number; output: number };
  close(): Promise<void>;
}

const INPUT_TOKENS = 100;
const OUTPUT_TOKENS = 1400;

/**
 * A provider speaking Anthropic Messages: a long streamed story (usage at the end) for every
 * call, or, for "reflect", the request's headers echoed in the answer's text; every answer
 * goes out in pieces of a few bytes, so the key falls across the gateway's chunks.
 */
async function startProvider(): Promise<Provider> {
  const requests: Provider["requests"] = [];
  const billed = { input: 0, output: 0 };
  const writeSlowly = async (res: http.ServerResponse, text: string) => {
    const b = Buffer.from(text);
    for (let i = 0; i < b.length; i += 5) {
      if (res.destroyed) return;
      res.write(b.subarray(i, i + 5));
      await new Promise((r) => setImmediate(r));
    }
  };
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      void (async () => {
        const body = JSON.parse(Buffer.concat(chunks).toString("utf8"));
        requests.push({ headers: req.headers, body });
        const reflect = JSON.stringify(body.messages).includes("reflect");
        const text = reflect ? `you sent ${JSON.stringify(req.headers)}` : "once upon a time ".repeat(300);
        billed.input += INPUT_TOKENS;
        billed.output += OUTPUT_TOKENS;
        const usage = { input_tokens: INPUT_TOKENS, output_tokens: OUTPUT_TOKENS };
        if (!body.stream) {
          res.writeHead(200, { "content-type": "application/json" });
          await writeSlowly(
            res,
            JSON.stringify({
              id: "msg_1",
              type: "message",
              role: "assistant",
              model: body.model,
              content: [{ type: "text", text }],
              stop_reason: "end_turn",
              stop_sequence: null,
              usage,
            }),
          );
          res.end();
          return;
        }
        res.writeHead(200, { "content-type": "text/event-stream" });
        const ev = (event: string, data: unknown) => `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;
        let out = ev("message_start", {
          type: "message_start",
          message: {
            id: "msg_1",
            type: "message",
            role: "assistant",
            model: body.model,
            content: [],
            usage: { input_tokens: INPUT_TOKENS, output_tokens: 1 },
          },
        });
        out += ev("content_block_start", {
          type: "content_block_start",
          index: 0,
          content_block: { type: "text", text: "" },
        });
        const pieces = reflect ? [text] : (text.match(/.{1,170}/g) ?? []);
        for (const p of pieces)
          out += ev("content_block_delta", {
            type: "content_block_delta",
            index: 0,
            delta: { type: "text_delta", text: p },
          });
        out += ev("content_block_stop", { type: "content_block_stop", index: 0 });
        out += ev("message_delta", {
          type: "message_delta",
          delta: { stop_reason: "end_turn", stop_sequence: null },
          usage: { output_tokens: OUTPUT_TOKENS },
        });
        out += ev("message_stop", { type: "message_stop" });
        await writeSlowly(res, out);
        res.end();
      })();
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return {
    baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
    requests,
    billed,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

/** The editor's server: records every connection, and passes it to a provider when it has one. */
async function startListener(to?: FakeModelServer) {
  const connections: number[] = [];
  const server = net.createServer((s) => {
    connections.push(Date.now());
    if (!to) return void s.destroy();
    const up = net.connect(Number(new URL(to.baseUrl).port), "127.0.0.1");
    s.pipe(up).pipe(s);
    up.on("error", () => s.destroy());
    s.on("error", () => up.destroy());
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const port = (server.address() as AddressInfo).port;
  return {
    port,
    host: `127.0.0.1:${port}`,
    connections,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

describe("the model gateway under attack", { skip }, () => {
  let t: TestServer;
  let harnessDir = "";
  let provider: Provider;
  let org = "";
  let machine = "";
  let keyId = "";
  let n = 0;
  const as = asMember(() => t);
  const owner = as(OWNER);
  const editor = as(EDITOR);
  const agentOf = async (who: typeof owner, spec: Record<string, unknown>) => {
    const r = await who("POST", "/api/agents", {
      org_id: org,
      machine_id: machine,
      name: `a${++n}`,
      ...spec,
    });
    assert.equal(r.status, 201, JSON.stringify(r.body));
    return r.body.id as string;
  };
  // runAgent of the support module, as a member (the test server's call takes headers)
  const runAs = async (email: string, agentId: string, input: string) => {
    const member: TestServer = {
      ...t,
      call: (m, u, b, h = {}) => t.call(m, u, b, { "x-forwarded-email": email, ...h }),
    };
    return runAgent(member, agentId, input, { timeoutMs: 120_000, pollMs: 100 });
  };
  const file = async (agentId: string, p: string) => {
    const r = await t.inject({
      url: `/api/agents/${agentId}/files/${p}`,
      headers: { "x-forwarded-email": OWNER },
    });
    assert.equal(r.statusCode, 200, r.body);
    return r.body;
  };

  before(async () => {
    // the fake claude-code, laid out as scripts/harness.sh installs the real one
    harnessDir = mkdtempSync(path.join(os.tmpdir(), "warren-fake-harness-"));
    const pkg = path.join(harnessDir, "claude-code", "node_modules", "@anthropic-ai", "claude-code");
    const bin = path.join(harnessDir, "claude-code", "node_modules", ".bin");
    mkdirSync(pkg, { recursive: true });
    mkdirSync(bin, { recursive: true });
    writeFileSync(path.join(pkg, "package.json"), JSON.stringify({ version: "0.0.0-fake" }));
    writeFileSync(path.join(bin, "claude"), CLI);
    for (const d of [
      harnessDir,
      path.join(harnessDir, "claude-code"),
      path.join(harnessDir, "claude-code", "node_modules"),
      path.dirname(pkg),
      pkg,
      bin,
    ])
      chmodSync(d, 0o755);
    chmodSync(path.join(bin, "claude"), 0o755);
    provider = await startProvider();
    t = await startTestServer({
      env: {
        AUTH_MODE: "trusted-header",
        WARREN_HARNESS_KINDS: "claude-code",
        WARREN_HARNESS_DIR: harnessDir,
        // the providers and the editor's servers of this suite listen on 127.0.0.1: the address
        // rule lets them through (the server's own endpoints stay refused), so what keeps the key
        // from the editor's server here is the key's hosts alone
        WARREN_EGRESS_PRIVATE_ALLOW: "127.0.0.1",
      },
    });
    org = (await owner("POST", "/api/orgs", { name: "gw" })).body.id;
    machine = (await owner("POST", "/api/machines", { org_id: org, name: "m", max_workspace_mib: 300 })).body
      .id;
    // the widest seat below admin: an editor of old, holding no area
    const m = await editorOfOld(
      t,
      org,
      owner("PUT", `/api/orgs/${org}/members`, { email: EDITOR, role: "viewer" }),
    );
    assert.equal(m.status, 200, JSON.stringify(m.body));
    const k = await owner("POST", "/api/secrets", {
      org_id: org,
      name: "ORG_KEY",
      value: KEY,
      use: "model",
      grants: [{ scope: "org", id: org }],
    });
    assert.equal(k.status, 201, JSON.stringify(k.body));
    assert.deepEqual(k.body.hosts, [], "by default only the provider's official host");
    keyId = k.body.id;
  });
  after(async () => {
    await t?.close();
    await provider?.close();
    if (harnessDir) rmSync(harnessDir, { recursive: true, force: true });
  });

  test("an editor's base_url with the organisation's key: refused before any connection, in every spelling", async () => {
    const listener = await startListener();
    try {
      const at = `http://${listener.host}/v1`;
      const spellings: Record<string, unknown>[] = [
        { provider: "anthropic", name: "claude-sonnet-4-5", base_url: at, key_secret: "ORG_KEY" },
        { provider: "openai", name: "gpt-4o", base_url: at, key_secret: "ORG_KEY" },
        { provider: "openai-compatible", name: "local", base_url: at, key_secret: "ORG_KEY" },
        {
          ...anthropicAt(`https://api.anthropic.com@${listener.host}/v1`, "ORG_KEY"),
        },
        {
          ...anthropicAt(`http://api.anthropic.com/v1`, "ORG_KEY"),
        },
        // the routed model at the official host, the fallback at the editor's server
        {
          provider: "anthropic",
          name: "claude-sonnet-4-5",
          key_secret: "ORG_KEY",
          fallback: { provider: "anthropic", name: "claude-sonnet-4-5", base_url: at, key_secret: "ORG_KEY" },
        },
      ];
      // an alias the editor makes of the key: it takes the key's hosts, and takes none of its own
      const aliasHosts = await editor("POST", "/api/secrets", {
        org_id: org,
        name: "MY_ALIAS",
        alias_of: keyId,
        use: "model",
        hosts: [listener.host],
        grants: [{ scope: "org", id: org }],
      });
      assert.equal(aliasHosts.status, 400, JSON.stringify(aliasHosts.body));
      assert.equal(aliasHosts.body.error.code, "request.invalid");
      const alias = await editor("POST", "/api/secrets", {
        org_id: org,
        name: "MY_ALIAS",
        alias_of: keyId,
        grants: [{ scope: "org", id: org }],
      });
      assert.equal(alias.status, 201, JSON.stringify(alias.body));
      assert.deepEqual(alias.body.hosts, []);
      spellings.push({
        ...anthropicAt(at, "MY_ALIAS"),
      });
      for (const model of spellings) {
        for (const kind of ["assistant", "claude-code"]) {
          const a = await agentOf(editor, { kind, model });
          const { run, events } = await runAs(EDITOR, a, "hello");
          assert.equal(run.status, "failed", JSON.stringify(model));
          assert.match(run.status_reason, /may be sent only to/, JSON.stringify(run));
          assert.match(run.status_reason, /An owner or admin adds the host/);
          assert.ok(!JSON.stringify({ run, events }).includes(KEY));
        }
      }
      assert.match(
        (await runAs(EDITOR, await agentOf(editor, { kind: "assistant", model: spellings[0] }), "x")).run
          .status_reason,
        new RegExp(`not to ${listener.host.replace(/\./g, "\\.")} `),
        "the message names the host",
      );
      // the editor cannot widen the key's hosts; nothing changed
      const widen = await editor("PATCH", `/api/secrets/${keyId}`, { hosts: [listener.host] });
      assert.equal(widen.status, 403, JSON.stringify(widen.body));
      assert.equal(widen.body.error.code, "access.denied");
      assert.deepEqual((await editor("GET", `/api/secrets/${keyId}`)).body.hosts, []);
      const viaAlias = await owner("PATCH", `/api/secrets/${alias.body.id}`, { hosts: [listener.host] });
      assert.equal(viaAlias.status, 400, "an alias has no hosts of its own");
      assert.equal(listener.connections.length, 0, "nothing at all reached the editor's server");
    } finally {
      await listener.close();
    }
  });

  test("an owner adding the host lets the key go there", async () => {
    const fake = await startFakeAnthropic([
      { text: "IT-WORKS", usage: { input_tokens: 5, output_tokens: 2 } },
    ]);
    const listener = await startListener(fake);
    try {
      const model = {
        ...anthropicAt(`http://${listener.host}/v1`, "ORG_KEY"),
      };
      const a = await agentOf(editor, { kind: "assistant", model });
      assert.equal((await runAs(EDITOR, a, "hi")).run.status, "failed");
      assert.equal(listener.connections.length, 0);
      const set = await owner("PATCH", `/api/secrets/${keyId}`, { hosts: [listener.host.toUpperCase()] });
      assert.equal(set.status, 200, JSON.stringify(set.body));
      assert.deepEqual(set.body.hosts, [listener.host]);
      const { run } = await runAs(EDITOR, a, "hi");
      assert.equal(run.status, "succeeded", JSON.stringify(run));
      assert.match(run.output, /IT-WORKS/);
      assert.ok(listener.connections.length > 0);
      assert.equal(fake.requests[0]?.headers["x-api-key"], KEY);
    } finally {
      assert.equal((await owner("PATCH", `/api/secrets/${keyId}`, { hosts: [] })).status, 200);
      await listener.close();
      await fake.close();
    }
  });

  test("a CLI that hangs up before the usage: the run counts what was billed and cannot pass max_tokens", async () => {
    const host = new URL(provider.baseUrl).host;
    assert.equal((await owner("PATCH", `/api/secrets/${keyId}`, { hosts: [host] })).status, 200);
    provider.requests.length = 0;
    provider.billed.input = provider.billed.output = 0;
    try {
      const a = await agentOf(owner, {
        kind: "claude-code",
        model: anthropicAt(provider.baseUrl, "ORG_KEY"),
        limits: { max_run_s: 120, max_tokens: 5000 },
      });
      const { run, events } = await runAs(OWNER, a, "hangup 8 1500");
      assert.equal(run.status, "succeeded", JSON.stringify({ run, events }).slice(0, 4000));
      const lines = String(run.output).trim().split("\n");
      assert.equal(lines.length, 8, run.output);
      // each call may use 1500 out and its input's estimate: three fit in 5000, the fourth not
      assert.deepEqual(
        lines.slice(0, 3),
        ["call 1: 200 hung up", "call 2: 200 hung up", "call 3: 200 hung up"],
        run.output,
      );
      for (const l of lines.slice(3)) {
        assert.match(l, /^call \d: 403 /, l);
        assert.match(l, /"permission_error".*budget cannot hold this call/, l);
      }
      assert.equal(provider.requests.length, 3, "a refused call never reached the provider");
      const billed = provider.billed.input + provider.billed.output;
      assert.equal(billed, 4500);
      const calls = eventsOfType(events, "model_call");
      assert.equal(calls.length, 3);
      for (const c of calls) {
        assert.equal(c.status, "ok", JSON.stringify(c));
        assert.equal(c.client_closed, true, "the CLI hung up");
        assert.equal(c.tokens_in, INPUT_TOKENS, "the usage was read to the answer's end");
        assert.equal(c.tokens_out, OUTPUT_TOKENS);
      }
      assert.equal(run.usage.tokens_in + run.usage.tokens_out, billed, "the run counts what was billed");
      assert.ok(run.usage.tokens_in + run.usage.tokens_out <= 5000);
      const refusals = eventsOfType(events, "budget");
      assert.equal(refusals.length, 5);
      for (const r of refusals) {
        assert.equal(r.refused, true);
        assert.equal(r.limit, "tokens");
        assert.equal(r.max, 5000);
        assert.ok(r.used + r.reserved + r.call_max > 5000, JSON.stringify(r));
      }
    } finally {
      await owner("PATCH", `/api/secrets/${keyId}`, { hosts: [] });
    }
  });

  test("a provider that echoes the request's headers in a 200: the box gets no key, streamed or whole", async () => {
    const host = new URL(provider.baseUrl).host;
    assert.equal((await owner("PATCH", `/api/secrets/${keyId}`, { hosts: [host] })).status, 200);
    provider.requests.length = 0;
    try {
      const a = await agentOf(owner, {
        kind: "claude-code",
        model: anthropicAt(provider.baseUrl, "ORG_KEY"),
      });
      const { run, events } = await runAs(OWNER, a, "reflect");
      assert.equal(run.status, "succeeded", JSON.stringify({ run, events }).slice(0, 4000));
      assert.equal(provider.requests.length, 2);
      for (const r of provider.requests)
        assert.equal(r.headers["x-api-key"], KEY, "the provider got the key");
      for (const name of ["got-stream.txt", "got-whole.txt"]) {
        const got = await file(a, name);
        assert.match(got, /you sent/, `${name}: the echo reached the box`);
        assert.match(got, /x-api-key.{1,8}\[redacted\]/, `${name}: with the key cut out`);
        assert.ok(!got.includes(KEY), `${name} holds the key`);
        assert.ok(!got.includes(KEY.slice(0, 12)), `${name} holds the start of the key`);
      }
      assert.ok(!JSON.stringify({ run, events }).includes(KEY), "the run's record holds the key");
    } finally {
      await owner("PATCH", `/api/secrets/${keyId}`, { hosts: [] });
    }
  });
});
