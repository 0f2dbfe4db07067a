// Hostile network tests: an agent's commands try to get out of the box past the egress
// proxy, or through it to what the policy does not allow. Upstreams are servers on this
// host's loopback; the proxy resolves the test names from its hosts table.
import assert from "node:assert/strict";
import crypto from "node:crypto";
import fs from "node:fs";
import net from "node:net";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { BOX_BRIDGES } from "../../src/boxes/index.js";
import { boxSkipReason } from "../box/fixture.js";
import { startTestServer, type TestServer } from "../support/server.js";
import { startUpstreams, TEST_NAMES, type Upstreams } from "../egress/upstreams.js";

const MAX = 4;

/**
 * A raw client of the proxy in the box (python3): sends `request` as given, prints the
 * status line and the body of the answer (at most 4 KiB), so that nothing of curl's own
 * logic stands between the test and the proxy.
 */
const RAW = `
import os, socket, sys
s = socket.create_connection(("127.0.0.1", ${BOX_BRIDGES.egress}), timeout=10)
s.sendall(os.environ["REQ"].encode().replace(b"\\\\r\\\\n", b"\\r\\n"))
data = b""
while b"\\r\\n\\r\\n" not in data:
    d = s.recv(4096)
    if not d: break
    data += d
head, _, body = data.partition(b"\\r\\n\\r\\n")
if b"Content-Length" in head or b"content-length" in head:
    n = int([l.split(b":")[1] for l in head.split(b"\\r\\n") if l.lower().startswith(b"content-length")][0])
    while len(body) < n:
        d = s.recv(4096)
        if not d: break
        body += d
print(head.split(b"\\r\\n")[0].decode())
print(body.decode(errors="replace").strip())
`;

describe("hostile: egress", { skip: boxSkipReason() ?? false }, () => {
  let t: TestServer;
  let up: Upstreams;
  let a: { id: string; uid: number };
  let b: { id: string; uid: number };
  let abstract: net.Server | undefined;

  const setPolicy = async (agentId: string, network: unknown) => {
    const r = await t.call("PATCH", `/api/agents/${agentId}`, { sandbox_policy: { network } });
    assert.equal(r.status, 200, JSON.stringify(r.body));
  };
  const sh = async (agentId: string, command: string, env: Record<string, string> = {}) => {
    const r = await t.call("POST", `/api/agents/${agentId}/exec`, { command, env, timeout_ms: 60_000 });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    return r.body as { exit_code: number; stdout: string; stderr: string; duration_ms: number };
  };
  /** The proxy's answer to a raw request from agent `who`: [status line, body]. */
  const raw = async (agentId: string, req: string): Promise<[string, string]> => {
    const r = await sh(agentId, 'python3 -c "$RAW"', { RAW, REQ: req });
    assert.equal(r.exit_code, 0, r.stderr);
    const [status = "", ...body] = r.stdout.trim().split("\n");
    return [status, body.join("\n")];
  };
  const connect = (agentId: string, target: string, host = target) =>
    raw(agentId, `CONNECT ${target} HTTP/1.1\\r\\nHost: ${host}\\r\\n\\r\\n`);
  const get = (agentId: string, url: string, host: string) =>
    raw(agentId, `GET ${url} HTTP/1.1\\r\\nHost: ${host}\\r\\nConnection: close\\r\\n\\r\\n`);
  const refusals = async (agentId: string) => {
    const r = await t.call("GET", `/api/agents/${agentId}/egress?decision=refused&limit=500`);
    assert.equal(r.status, 200, JSON.stringify(r.body));
    return r.body.items as { reason: string; host: string; port: number; decision: string }[];
  };

  before(async () => {
    up = await startUpstreams();
    t = await startTestServer({
      // the upstreams are on this host's loopback: the operator's bound holds their two ports only
      env: {
        EGRESS_MAX_CONNECTIONS: String(MAX),
        WARREN_EGRESS_PRIVATE_ALLOW: `127.0.0.1:${up.httpPort},127.0.0.1:${up.httpsPort}`,
      },
      egressHosts: {
        ...Object.fromEntries([...TEST_NAMES, "a.b.example.com"].map((n) => [n, ["127.0.0.1"]])),
        "loop.test": ["127.0.0.1"],
        "loop6.test": ["::1"],
        "private.test": ["10.1.2.3"],
        "metadata.test": ["169.254.169.254"],
      },
    });
    const org = (await t.call("POST", "/api/orgs", { name: "hostile-egress" })).body;
    const m = (await t.call("POST", "/api/machines", { org_id: org.id, name: "m", memory_mib: 1024 })).body;
    a = (await t.call("POST", "/api/agents", { org_id: org.id, machine_id: m.id, name: "a" })).body;
    b = (await t.call("POST", "/api/agents", { org_id: org.id, machine_id: m.id, name: "b" })).body;
    await setPolicy(a.id, {
      allow: [
        `pkg.test:${up.httpPort}`,
        `pkg.test:${up.httpsPort}`,
        `*.example.com:${up.httpPort}`,
        `loop.test:${up.httpPort}`,
        `loop6.test:${up.httpPort}`,
        `private.test:${up.httpPort}`,
        `metadata.test:80`,
        `127.0.0.1:${up.httpsPort}`,
        `127.0.0.1:${up.httpPort}`,
      ],
    });
  });
  after(async () => {
    abstract?.close();
    await t?.server.runtime.stopAll("test over");
    await t?.close();
    await up?.close();
  });

  test("a host not in the list is refused with a one-line reason, and recorded", async () => {
    const [status, body] = await connect(a.id, `evil.test:443`);
    assert.equal(status, "HTTP/1.1 403 Forbidden");
    assert.equal(body, "warren egress: refused: evil.test:443 is not in the agent's network allow list");
    const curl = await sh(a.id, `curl -sS -w ' %{http_code}' http://evil.test:${up.httpPort}/hello`);
    assert.equal(
      curl.stdout,
      `warren egress: refused: evil.test:${up.httpPort} is not in the agent's network allow list\n 403`,
    );
    const https = await sh(a.id, `curl -sS https://evil.test/ 2>&1; echo " exit $?"`);
    assert.match(https.stdout, /403/);
    assert.equal(up.seen.filter((s) => s.host.startsWith("evil.test")).length, 0);
    const items = await refusals(a.id);
    assert.ok(items.some((i) => i.host === "evil.test" && i.port === 443 && /allow list/.test(i.reason)));
  });

  test("SOCKS5: a host not in the list is refused (not allowed by ruleset), an allowed one connects", async () => {
    const r = await sh(
      a.id,
      `python3 -c '
import socket, sys
def ask(host, port):
    s = socket.create_connection(("127.0.0.1", ${BOX_BRIDGES.egress}), timeout=10)
    s.sendall(b"\\x05\\x01\\x00"); assert s.recv(2) == b"\\x05\\x00"
    name = host.encode()
    s.sendall(b"\\x05\\x01\\x00\\x03" + bytes([len(name)]) + name + port.to_bytes(2, "big"))
    print(s.recv(10)[1])
ask("evil.test", 443)
ask("pkg.test", ${up.httpsPort})
ask("loop.test", ${up.httpsPort})
'`,
    );
    assert.equal(r.stdout, "2\n0\n2\n", r.stderr);
    const items = await refusals(a.id);
    assert.ok(items.some((i) => i.host === "evil.test" && /allow list/.test(i.reason)));
  });

  test("another port of an allowed host, and a bare IP, are refused", async () => {
    const [s1, b1] = await connect(a.id, "pkg.test:22");
    assert.equal(s1, "HTTP/1.1 403 Forbidden");
    assert.match(b1, /pkg\.test:22 is not in the agent's network allow list/);
    // the name is allowed, its address typed as an IP is not (unless listed itself)
    const [s2, b2] = await connect(a.id, "93.184.216.34:443");
    assert.equal(s2, "HTTP/1.1 403 Forbidden");
    assert.match(b2, /93\.184\.216\.34:443 is not in/);
    const [s3, b3] = await connect(a.id, "127.0.0.1:5432");
    assert.equal(s3, "HTTP/1.1 403 Forbidden", b3);
    const [s4] = await connect(a.id, "[::1]:5432");
    assert.equal(s4, "HTTP/1.1 403 Forbidden");
    // a listed IP and port is allowed
    const [s5] = await connect(a.id, `127.0.0.1:${up.httpsPort}`);
    assert.equal(s5, "HTTP/1.1 200 Connection Established");
  });

  test("wildcards: *.example.com allows names below it, never example.com or evilexample.com", async () => {
    const url = (h: string) => `curl -sS http://${h}:${up.httpPort}/hello`;
    const ok = await sh(a.id, `${url("api.example.com")}; ${url("a.b.example.com")}`);
    assert.equal(
      ok.stdout,
      `hello from api.example.com:${up.httpPort}\nhello from a.b.example.com:${up.httpPort}\n`.replace(
        "a.b.example.com",
        "a.b.example.com",
      ),
    );
    for (const h of [
      "example.com",
      "evilexample.com",
      "example.com.evil.test",
      "api.example.com.evil.test",
    ]) {
      const r = await sh(a.id, url(h));
      assert.match(r.stdout, /^warren egress: refused: .* is not in the agent's network allow list$/m, h);
    }
  });

  test("a name that resolves to loopback outside the bound, link-local or a private address is refused", async () => {
    for (const [h, what, port] of [
      [
        "loop.test",
        "127\\.0\\.0\\.1:\\d+ is a loopback address outside the operator's bound",
        up.httpPort + 1,
      ],
      ["loop6.test", "\\[::1\\]:\\d+ is a loopback address outside the operator's bound", up.httpPort],
      ["private.test", "10\\.1\\.2\\.3:\\d+ is a private address outside the operator's bound", up.httpPort],
      ["metadata.test", "169\\.254\\.169\\.254 is a link-local \\(metadata\\) address", 80],
    ] as const) {
      if (h === "loop.test") await setPolicy(a.id, { allow: [`loop.test:${port}`] });
      const [status, body] = await get(a.id, `http://${h}:${port}/hello`, `${h}:${port}`);
      assert.equal(status, "HTTP/1.1 403 Forbidden", `${h}: ${body}`);
      assert.match(body, new RegExp(`${h.replace(".", "\\.")} resolves to ${what}`));
      if (h === "loop.test")
        await setPolicy(a.id, {
          allow: [
            `pkg.test:${up.httpPort}`,
            `pkg.test:${up.httpsPort}`,
            `*.example.com:${up.httpPort}`,
            `loop6.test:${up.httpPort}`,
            `private.test:${up.httpPort}`,
            `metadata.test:80`,
            `127.0.0.1:${up.httpsPort}`,
            `127.0.0.1:${up.httpPort}`,
          ],
        });
    }
    // inside the bound, a listed name reaches its loopback upstream
    const [ok, hello] = await get(a.id, `http://pkg.test:${up.httpPort}/hello`, `pkg.test:${up.httpPort}`);
    assert.equal(ok, "HTTP/1.1 200 OK", hello);
    // open mode never reaches loopback, even inside the bound (nor the server's own addresses)
    await setPolicy(b.id, { mode: "open", allow: [] });
    const [s, body] = await connect(b.id, `pkg.test:${up.httpsPort}`);
    assert.equal(s, "HTTP/1.1 403 Forbidden");
    assert.match(body, /resolves to an address that is not public \(127\.0\.0\.1\); open mode/);
    const [s2, body2] = await connect(b.id, "unknown.test:443");
    assert.equal(s2, "HTTP/1.1 403 Forbidden");
    assert.match(body2, /unknown\.test does not resolve/);
    await setPolicy(b.id, { allow: [] });
  });

  test("DNS lookups in the box fail at once", async () => {
    const r = await sh(
      a.id,
      `python3 -c '
import socket, time
t = time.time()
try:
    socket.getaddrinfo("pkg.test", 80); print("resolved")
except socket.gaierror as e:
    print("no name service", round(time.time() - t, 1) < 2)
'; getent hosts example.com; echo "getent $?"`,
    );
    assert.equal(r.stdout, "no name service True\ngetent 2\n");
    assert.ok(r.duration_ms < 5000, `${r.duration_ms} ms`);
  });

  test("direct connections that ignore the proxy fail at once", async () => {
    const r = await sh(
      a.id,
      `python3 -c '
import socket, time
for host in ["93.184.216.34", "10.0.0.1", "127.0.0.1"]:
    t = time.time()
    try:
        socket.create_connection((host, ${up.httpPort}), timeout=20); print(host, "connected")
    except OSError as e:
        print(host, type(e).__name__, round(time.time() - t, 1) < 2)
'; curl -sS --noproxy '*' --max-time 20 http://pkg.test:${up.httpPort}/hello 2>&1 | head -c 60; echo`,
    );
    // Node's own fetch ignores the proxy variables (Node 20): it fails at once too, no hang
    const node = await sh(
      a.id,
      `node -e 'const t = Date.now(); fetch("http://pkg.test:${up.httpPort}/hello").then(() => console.log("reached"), (e) => console.log(e.cause?.code ?? e.message, Date.now() - t < 3000))'`,
    );
    assert.match(node.stdout, /^(EAI_AGAIN|ENOTFOUND) true$/m, node.stdout + node.stderr);
    const lines = r.stdout.trim().split("\n");
    // no route out of the box (and on an isolated machine Landlock refuses the connect
    // first); the box's loopback is its own, not the host's: nothing connects, nothing waits
    assert.equal(lines.length, 4, r.stdout);
    for (const [i, host] of ["93.184.216.34", "10.0.0.1", "127.0.0.1"].entries())
      assert.match(
        lines[i] ?? "",
        new RegExp(`^${host.replaceAll(".", "\\.")} (OSError|PermissionError|ConnectionRefusedError) True$`),
      );
    assert.match(lines[3] ?? "", /Could not resolve host/);
    assert.equal(up.seen.filter((s) => s.url === "/hello" && s.host.includes("10.0.0.1")).length, 0);
  });

  test("a CONNECT or a request whose Host header disagrees is refused", async () => {
    const [s1, b1] = await connect(a.id, `pkg.test:${up.httpsPort}`, `evil.test:${up.httpsPort}`);
    assert.equal(s1, "HTTP/1.1 403 Forbidden");
    assert.match(b1, /the Host header "evil\.test:\d+" disagrees with the CONNECT target pkg\.test:\d+/);
    const [s2] = await connect(a.id, `pkg.test:${up.httpsPort}`, `pkg.test:443`);
    assert.equal(s2, "HTTP/1.1 403 Forbidden");
    const [s3, b3] = await get(a.id, `http://pkg.test:${up.httpPort}/hello`, "evil.test");
    assert.equal(s3, "HTTP/1.1 403 Forbidden");
    assert.match(b3, /disagrees with the URL's host/);
    // agreeing, it goes through
    const [s4, b4] = await get(a.id, `http://pkg.test:${up.httpPort}/hello`, `pkg.test:${up.httpPort}`);
    assert.equal(s4, "HTTP/1.1 200 OK");
    assert.equal(b4, `hello from pkg.test:${up.httpPort}`);
    // not a proxy request at all
    const [s5, b5] = await raw(a.id, "GET /hello HTTP/1.1\\r\\nHost: pkg.test\\r\\n\\r\\n");
    assert.equal(s5, "HTTP/1.1 400 Bad Request");
    assert.match(b5, /absolute http:\/\/ URL/);
  });

  test("rules narrow a host to methods and path prefixes; a tunnel to it is refused", async () => {
    await setPolicy(a.id, {
      allow: [`pkg.test:${up.httpPort}`, `pkg.test:${up.httpsPort}`, `127.0.0.1:${up.httpPort}`],
      rules: [{ host: "pkg.test", methods: ["GET"], paths: ["/hel"] }],
    });
    const ok = await get(a.id, `http://pkg.test:${up.httpPort}/hello`, `pkg.test:${up.httpPort}`);
    assert.equal(ok[0], "HTTP/1.1 200 OK");
    for (const [method, p] of [
      ["POST", "/hello"],
      ["GET", "/echo"],
      ["GET", "/hel/../echo"],
      ["GET", "/hel/%2e%2e/echo"],
    ] as const) {
      const [s, body] = await raw(
        a.id,
        `${method} http://pkg.test:${up.httpPort}${p} HTTP/1.1\\r\\nHost: pkg.test:${up.httpPort}\\r\\nContent-Length: 0\\r\\n\\r\\n`,
      );
      assert.equal(s, "HTTP/1.1 403 Forbidden", `${method} ${p}`);
      assert.match(body, /is not allowed by the rules for pkg\.test/);
    }
    const [s, body] = await connect(a.id, `pkg.test:${up.httpsPort}`);
    assert.equal(s, "HTTP/1.1 403 Forbidden");
    assert.match(body, /a tunnel cannot be checked/);
  });

  test("raw sockets and packet sockets are refused in the box", async () => {
    const r = await sh(
      a.id,
      `python3 -c '
import socket
for fam, kind, proto in [(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP), (socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_RAW), (socket.AF_PACKET, socket.SOCK_RAW, 0), (socket.AF_INET6, socket.SOCK_RAW, socket.IPPROTO_ICMPV6)]:
    try:
        socket.socket(fam, kind, proto); print("opened")
    except OSError as e:
        print(e.errno)
'`,
    );
    const [icmp, rawIp, packet, icmp6] = r.stdout.trim().split("\n").map(Number);
    // EPERM (no CAP_NET_RAW) or EAFNOSUPPORT (the filter's socket families): never opened
    for (const e of [icmp, rawIp, icmp6]) assert.ok(e === 1 || e === 13, r.stdout);
    assert.equal(packet, 97, r.stdout);
  });

  test("host daemons' unix sockets are out of reach: abstract names, boxd's own sockets", async () => {
    const name = `warren-egress-test-${crypto.randomBytes(4).toString("hex")}`;
    let reached = false;
    abstract = net.createServer(() => (reached = true));
    await new Promise<void>((r) => abstract!.listen(`\0${name}`, r));
    const hostSock = path.join(t.stateRoot, "run", "boxes");
    assert.ok(fs.existsSync(hostSock));
    const r = await sh(
      a.id,
      `python3 -c '
import socket, sys
for target in ["\\0${name}", "/run/boxd/boxd.sock", "/var/run/postgresql/.s.PGSQL.5432", "/run/dbus/system_bus_socket"]:
    s = socket.socket(socket.AF_UNIX)
    try:
        s.connect(target); print("connected")
    except OSError as e:
        print(type(e).__name__)
'`,
    );
    const [abs, boxd, pg, dbus] = r.stdout.trim().split("\n");
    assert.equal(abs, "ConnectionRefusedError", "the box's abstract namespace is its own");
    assert.equal(boxd, "PermissionError", "boxd's socket is box root's");
    assert.equal(pg, "FileNotFoundError");
    assert.equal(dbus, "FileNotFoundError");
    assert.equal(reached, false);
  });

  test("another agent's proxy channel: each connection is its own agent's, whatever it sends", async () => {
    // b's policy is empty: the same request that a may make is refused for b
    const headers = `Host: pkg.test:${up.httpPort}\\r\\nX-Warren-Agent: ${a.id}\\r\\nProxy-Authorization: Basic ${Buffer.from(`${a.id}:x`).toString("base64")}`;
    const [sa] = await raw(
      a.id,
      `GET http://pkg.test:${up.httpPort}/hello HTTP/1.1\\r\\n${headers}\\r\\n\\r\\n`,
    );
    assert.equal(sa, "HTTP/1.1 200 OK");
    const [sb, bodyB] = await raw(
      b.id,
      `GET http://pkg.test:${up.httpPort}/hello HTTP/1.1\\r\\n${headers}\\r\\n\\r\\n`,
    );
    assert.equal(sb, "HTTP/1.1 403 Forbidden");
    assert.match(bodyB, /not in the agent's network allow list/);
    // the proxy passes no proxy credentials upstream
    assert.ok(!up.seen.some((s) => s.url.includes("Proxy-Authorization")));
    // b's refusal is b's, a's allowance a's
    assert.ok((await refusals(b.id)).some((i) => i.host === "pkg.test"));
    const aItems = (await t.call("GET", `/api/agents/${a.id}/egress?decision=allowed&limit=500`)).body
      .items as {
      host: string;
    }[];
    assert.ok(aItems.some((i) => i.host === "pkg.test"));
  });

  test("an agent has at most EGRESS_MAX_CONNECTIONS connections open at once", async () => {
    await setPolicy(a.id, { allow: [`pkg.test:${up.httpsPort}`, `127.0.0.1:${up.httpsPort}`] });
    const r = await sh(
      a.id,
      `python3 -c '
import socket, time
held = []
for i in range(${MAX}):
    s = socket.create_connection(("127.0.0.1", ${BOX_BRIDGES.egress})); held.append(s)
time.sleep(0.5)
s = socket.create_connection(("127.0.0.1", ${BOX_BRIDGES.egress}))
s.sendall(b"CONNECT pkg.test:${up.httpsPort} HTTP/1.1\\r\\nHost: pkg.test:${up.httpsPort}\\r\\n\\r\\n")
print(s.recv(4096).decode().split("\\r\\n")[0])
for h in held: h.close()
time.sleep(0.5)
s = socket.create_connection(("127.0.0.1", ${BOX_BRIDGES.egress}))
s.sendall(b"CONNECT pkg.test:${up.httpsPort} HTTP/1.1\\r\\nHost: pkg.test:${up.httpsPort}\\r\\n\\r\\n")
print(s.recv(4096).decode().split("\\r\\n")[0])
'`,
    );
    assert.equal(r.stdout, "HTTP/1.1 403 Forbidden\nHTTP/1.1 200 Connection Established\n", r.stderr);
    assert.ok((await refusals(a.id)).some((i) => new RegExp(`more than ${MAX} connections`).test(i.reason)));
  });

  test("the record pages, filters, and reaches the trace of a run going on", async () => {
    await setPolicy(a.id, { allow: [`pkg.test:${up.httpPort}`, `127.0.0.1:${up.httpPort}`] });
    const run = await t.call("POST", `/api/agents/${a.id}/runs`, {
      kind: "command",
      command: `curl -sS http://pkg.test:${up.httpPort}/hello; curl -sS http://nope.test/`,
    });
    assert.equal(run.status, 202, JSON.stringify(run.body));
    let status = "running";
    for (let i = 0; i < 200 && (status === "running" || status === "queued"); i++) {
      await new Promise((r) => setTimeout(r, 100));
      status = (await t.call("GET", `/api/runs/${run.body.id}`)).body.status;
    }
    assert.equal(status, "succeeded");
    let events: { type: string; data: { decision: string; host: string; run_id?: string } }[] = [];
    for (let i = 0; i < 30 && events.length < 2; i++) {
      const r = await t.call("GET", `/api/runs/${run.body.id}/events`);
      events = (r.body.items as typeof events).filter((e) => e.type === "egress");
      if (events.length < 2) await new Promise((res) => setTimeout(res, 100));
    }
    assert.deepEqual(
      events.map((e) => [e.data.decision, e.data.host, e.data.run_id]),
      [
        ["allowed", "pkg.test", run.body.id],
        ["refused", "nope.test", run.body.id],
      ],
    );
    const page1 = (await t.call("GET", `/api/agents/${a.id}/egress?limit=2`)).body;
    assert.equal(page1.items.length, 2);
    assert.equal(page1.items[0].host, "nope.test");
    assert.deepEqual(Object.keys(page1.items[0]).sort(), [
      "at",
      "bytes_in",
      "bytes_out",
      "decision",
      "duration_ms",
      "host",
      "method",
      "path",
      "port",
      "reason",
      "run_id",
    ]);
    assert.equal(typeof page1.next, "string");
    const page2 = (await t.call("GET", `/api/agents/${a.id}/egress?limit=2&before=${page1.next}`)).body;
    assert.equal(page2.items.length, 2);
    assert.ok(page2.items[0].at <= page1.items[1].at);
    const bad = await t.call("GET", `/api/agents/${a.id}/egress?decision=maybe`);
    assert.equal(bad.status, 400);
    assert.equal(bad.body.error.code, "request.invalid");
    const badBefore = await t.call("GET", `/api/agents/${a.id}/egress?before=abc`);
    assert.equal(badBefore.status, 400);
  });

  test("malformed and unsafe policies are 400 request.invalid", async () => {
    for (const network of [
      { allow: ["*"] },
      { allow: ["*.com"] },
      { allow: ["exa mple.com"] },
      { allow: ["0.0.0.0/0"] },
      { mode: "everything", allow: [] },
      { allow: [], rules: [{ host: "*" }] },
    ]) {
      const r = await t.call("PATCH", `/api/agents/${a.id}`, { sandbox_policy: { network } });
      assert.equal(r.status, 400, JSON.stringify(network));
      assert.equal(r.body.error.code, "request.invalid");
    }
  });
});
