// Hostile: no door back into the server through the egress proxy. An editor lists the
// server's own port (or metadata, private ranges, "everything" in two halves) in an agent's
// policy; the policy is even written straight into the store, past the save check; the box
// then tries the API and every spelling of loopback in each of the proxy's three forms
// (absolute URL, CONNECT, SOCKS5). Nothing gets through and nothing is sent: a listener on
// the host's loopback counts every connection. Also: the operator's bound is the one way to a
// loopback service, a revoked entry ends live connections, and malformed refusals are recorded.
import assert from "node:assert/strict";
import http from "node:http";
import net from "node:net";
import type { AddressInfo } from "node:net";
import { after, before, describe, test } from "node:test";
import { eq } from "drizzle-orm";
import { BOX_BRIDGES } from "../../src/boxes/index.js";
import { schema } from "../../src/store/index.js";
import { boxSkipReason } from "../box/fixture.js";
import { editorOfOld } from "../support/members.js";
import { startTestServer, type TestServer } from "../support/server.js";
import { LOOPBACK_SPELLINGS } from "../support/spellings.js";
import { newAgent, orgAndMachine } from "../support/org.js";
import { bridgeFront, type BridgeFront } from "../support/bridge.js";

const OWNER = "owner@wall.test";
const EDITOR = "editor@wall.test";

/** A listener on the host's loopback (IPv4 and IPv6 where it can) that counts every connection. */
async function trap(): Promise<{ port: number; connections: () => number; close(): Promise<void> }> {
  let n = 0;
  const srv = net.createServer((s) => {
    n++;
    s.end("HTTP/1.1 200 OK\r\nContent-Length: 7\r\nConnection: close\r\n\r\ntrapped");
  });
  await new Promise<void>((resolve) => {
    srv.once("error", () => srv.listen(0, "127.0.0.1", resolve));
    srv.listen({ port: 0, host: "::", ipv6Only: false }, resolve);
  });
  return {
    port: (srv.address() as AddressInfo).port,
    connections: () => n,
    close: () => new Promise((r) => srv.close(() => r())),
  };
}

/** An HTTP server on 127.0.0.1 answering `ok`: the loopback service the operator's bound allows. */
async function okServer(): Promise<{ port: number; close(): Promise<void> }> {
  const srv = http.createServer((_req, res) => res.writeHead(200, { "content-length": 3 }).end("ok\n"));
  await new Promise<void>((r) => srv.listen(0, "127.0.0.1", r));
  return {
    port: (srv.address() as AddressInfo).port,
    async close() {
      srv.closeAllConnections();
      await new Promise((r) => srv.close(r));
    },
  };
}

const until = async (what: string, ok: () => Promise<boolean>, ms = 20_000) => {
  const end = Date.now() + ms;
  while (!(await ok())) {
    if (Date.now() > end) assert.fail(`timed out waiting: ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
};

for (const mode of ["compat-cookie", "trusted-header"] as const) {
  describe(`hostile: no door back into the server (${mode})`, { skip: boxSkipReason() ?? false }, () => {
    let t: TestServer;
    let apiPort = 0;
    let up: Awaited<ReturnType<typeof okServer>>;
    let catcher: Awaited<ReturnType<typeof trap>>;
    let org = "";
    let agent: { id: string };
    const as = (email: string): Record<string, string> =>
      mode === "trusted-header" ? { "x-forwarded-email": email } : {};
    const call = (method: string, url: string, body?: unknown, who = OWNER) =>
      t.call(method, url, body, as(who));
    const sh = async (command: string, env: Record<string, string> = {}) => {
      const r = await call("POST", `/api/agents/${agent.id}/exec`, { command, env, timeout_ms: 90_000 });
      assert.equal(r.status, 200, JSON.stringify(r.body));
      return r.body as { exit_code: number; stdout: string; stderr: string };
    };
    /** Writes a policy straight into the store, past every check of a save. */
    const storePolicy = async (network: unknown) => {
      await t.server.store.db
        .update(schema.agents)
        .set({ sandboxPolicy: { files: { read: [], write: [] }, network } })
        .where(eq(schema.agents.id, agent.id));
    };
    const members = async () => {
      const r = await call("GET", `/api/orgs/${org}/members`);
      assert.equal(r.status, 200, JSON.stringify(r.body));
      return (r.body.items as { email: string; role: string }[]).map((m) => `${m.email}:${m.role}`).sort();
    };
    const refusals = async () => {
      const r = await call("GET", `/api/agents/${agent.id}/egress?decision=refused&limit=500`);
      assert.equal(r.status, 200, JSON.stringify(r.body));
      return r.body.items as { reason: string; host: string; port: number }[];
    };

    before(async () => {
      up = await okServer();
      catcher = await trap();
      t = await startTestServer({
        listen: true,
        env: {
          AUTH_MODE: mode,
          BOX_IDLE_S: "60",
          WARREN_EGRESS_PRIVATE_ALLOW: `127.0.0.1:${up.port}`,
        },
      });
      apiPort = Number(new URL(t.url as string).port);
      org = (await call("POST", "/api/orgs", { name: `wall-${mode}` })).body.id;
      if (mode === "trusted-header") {
        // the widest seat below admin: an editor of old, holding no area
        const m = await editorOfOld(
          t,
          org,
          call("PUT", `/api/orgs/${org}/members`, { email: EDITOR, role: "viewer" }),
        );
        assert.equal(m.status, 200, JSON.stringify(m.body));
      }
      const machine = (await call("POST", "/api/machines", { org_id: org, name: "m", memory_mib: 512 })).body;
      agent = (await call("POST", "/api/agents", { org_id: org, machine_id: machine.id, name: "a" })).body;
      assert.ok(agent.id, JSON.stringify(agent));
    });
    after(async () => {
      await t?.server.runtime.stopAll("test over");
      await t?.close();
      await up?.close();
      await catcher?.close();
    });

    test("an editor cannot save the server's port, metadata, private ranges or everything in halves", async () => {
      const who = mode === "trusted-header" ? EDITOR : OWNER;
      const stored = async () =>
        (await call("GET", `/api/agents/${agent.id}`)).body.sandbox_policy.network.allow as string[];
      const before = await stored();
      const forbidden = [
        [`127.0.0.1:${apiPort}`],
        [`127.0.0.2:${apiPort}`],
        [`[::1]:${apiPort}`],
        [`::ffff:127.0.0.1`],
        [`localhost:${apiPort}`],
        [`foo.localhost:${apiPort}`],
        ["127.0.0.0/8"],
        ["0.0.0.0/1", "128.0.0.0/1"],
        ["0.0.0.0"],
        ["169.254.169.254"],
        ["169.254.169.254:80"],
        ["[fd00:ec2::254]:80"],
        ["10.0.0.0/8"],
        ["192.168.1.1:22"],
        ["224.0.0.1"],
        ["64:ff9b::/96"],
        [`127.0.0.1:${up.port + 1}`],
      ];
      for (const allow of forbidden) {
        const r = await call(
          "PATCH",
          `/api/agents/${agent.id}`,
          { sandbox_policy: { network: { allow } } },
          who,
        );
        assert.equal(r.status, 400, `${allow.join(",")}: ${JSON.stringify(r.body)}`);
        assert.equal(r.body.error.code, "egress.forbidden", allow.join(","));
      }
      // addresses in other spellings are not host names at all
      for (const allow of [["127.1"], ["2130706433"], ["0x7f000001"], ["127.0.0.1."], ["localhost."]]) {
        const r = await call(
          "PATCH",
          `/api/agents/${agent.id}`,
          { sandbox_policy: { network: { allow } } },
          who,
        );
        assert.equal(r.status, 400, allow[0]);
        assert.equal(r.body.error.code, "request.invalid", allow[0]);
      }
      assert.deepEqual(await stored(), before, "nothing was stored");
    });

    test("with the server's port written into the store, the box still reaches no API; membership unchanged", async () => {
      const was = await members();
      await storePolicy({
        mode: "open",
        allow: [`127.0.0.1:${apiPort}`, `[::1]:${apiPort}`, `localhost:${apiPort}`, "127.0.0.0/8"],
      });
      const put = (extra: string, host = "127.0.0.1") =>
        `out=$(curl -sS -g --max-time 20 ${extra} -H 'x-forwarded-email: ${OWNER}' -H 'content-type: application/json' -X PUT http://${host}:${apiPort}/api/orgs/${org}/members --data '{"email":"${EDITOR}","role":"owner"}' -w ' %{http_code} %{http_connect}' 2>&1); e=$?; echo "$(echo $out) exit $e"`;
      const r = await sh(
        [
          put("--noproxy ''"),
          put("--noproxy ''", "localhost"),
          put("--noproxy ''", "[::1]"),
          put("--noproxy '' -p"),
          put("--noproxy '' --socks5-hostname 127.0.0.1:3128"),
          put("--noproxy '*'"),
        ].join("; "),
      );
      const lines = r.stdout.trim().split("\n");
      assert.equal(lines.length, 6, r.stdout);
      assert.match(
        lines[0] ?? "",
        /refused: 127\.0\.0\.1:\d+ is the warren server's own endpoint 403 000 exit 0$/,
      );
      assert.match(
        lines[1] ?? "",
        /refused: localhost resolves to 127\.0\.0\.1:\d+ is the warren server's own endpoint 403/,
      );
      assert.match(lines[2] ?? "", /refused: \[::1\]:\d+ is the warren server's own endpoint 403/);
      assert.match(lines[3] ?? "", / 000 403 exit 56$/, "CONNECT refused");
      assert.match(lines[4] ?? "", /exit 97$/, "SOCKS5 refused");
      // no proxy at all: the box's loopback is its own, there is no route out
      assert.match(lines[5] ?? "", /exit 7$/);
      assert.deepEqual(await members(), was, "no one was made owner");
      const own = (await refusals()).filter((i) => /the warren server's own endpoint/.test(i.reason));
      assert.ok(own.length >= 5, JSON.stringify(own));
      await storePolicy({ allow: [] });
    });

    test("every spelling of loopback, unspecified and metadata is refused in all three forms; nothing is sent", async () => {
      await storePolicy({
        mode: "open",
        allow: ["127.0.0.0/8", "::1", "0.0.0.0/8", "169.254.0.0/16", "::ffff:127.0.0.1", "localhost"],
      });
      const hosts = [...LOOPBACK_SPELLINGS, "169.254.169.254", "LOCALHOST", "LocalHost."];
      const n0 = (await refusals()).length;
      const script = hosts
        .flatMap((h) => {
          const url = `http://${h}:${catcher.port}/`;
          const c = `curl -sS -g --max-time 15 --noproxy '' -o /dev/null`;
          return [
            `${c} -w '%{http_code}' ${url} 2>/dev/null; echo " url ${h} $?"`,
            `${c} -p -w '%{http_connect}' ${url} 2>/dev/null; echo " connect ${h} $?"`,
            `${c} --socks5-hostname 127.0.0.1:3128 -w '%{http_code}' ${url} 2>/dev/null; echo " socks ${h} $?"`,
          ];
        })
        .join("\n");
      const r = await sh(script);
      const lines = r.stdout.trim().split("\n");
      assert.equal(lines.length, hosts.length * 3, r.stdout);
      for (const line of lines) {
        const [code, form, host, exit] = line.split(" ");
        assert.ok(code !== "200", line);
        if (form === "url") assert.equal(code, "403", line);
        else if (form === "connect") assert.ok(code === "403" && exit === "56", line);
        else assert.notEqual(exit, "0", `${host}: ${line}`);
      }
      assert.equal(catcher.connections(), 0, "nothing reached the listener");
      let items: { reason: string }[] = [];
      await until("every refusal recorded", async () => {
        items = (await refusals()).slice(0, (await refusals()).length - n0);
        return items.length >= hosts.length * 3;
      });
      for (const i of items)
        assert.match(i.reason, /is (a loopback|an unspecified|a link-local \(metadata\)) address/, i.reason);
      await storePolicy({ allow: [] });
    });

    test("the operator's bound: its entry is saved and reached; a revoked entry ends live connections", async () => {
      const ok = await call("PATCH", `/api/agents/${agent.id}`, {
        sandbox_policy: { network: { allow: [`127.0.0.1:${up.port}`] } },
      });
      assert.equal(ok.status, 200, JSON.stringify(ok.body));
      const got = await sh(`curl -sS --noproxy '' http://127.0.0.1:${up.port}/`);
      assert.equal(got.stdout, "ok\n", got.stderr);
      // a kept-alive connection and a tunnel stay open while the entry is revoked
      const script = `
import os, select, socket, time
P = ${up.port}
def conn():
    return socket.create_connection(("127.0.0.1", ${BOX_BRIDGES.egress}), timeout=10)
def answer(s):
    data = b""
    while b"\\r\\n\\r\\n" not in data:
        d = s.recv(4096)
        if not d: return None
        data += d
    head, _, body = data.partition(b"\\r\\n\\r\\n")
    n = 0
    for l in head.split(b"\\r\\n")[1:]:
        k, _, v = l.partition(b":")
        if k.strip().lower() == b"content-length": n = int(v)
    while len(body) < n:
        d = s.recv(4096)
        if not d: break
        body += d
    return head.split(b"\\r\\n")[0].decode()
req = b"GET http://127.0.0.1:%d/ HTTP/1.1\\r\\nHost: 127.0.0.1:%d\\r\\n\\r\\n" % (P, P)
ka = conn(); ka.sendall(req); print("first", answer(ka))
tu = conn(); tu.sendall(b"CONNECT 127.0.0.1:%d HTTP/1.1\\r\\n\\r\\n" % P); print("tunnel", answer(tu))
tu.sendall(b"GET / HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n"); print("through", answer(tu))
open("ready", "w").close()
while not os.path.exists("revoked"): time.sleep(0.05)
t0 = time.time()
ka_st = None; tu_t = None
while time.time() - t0 < 30 and (ka_st is None or tu_t is None):
    if ka_st is None:
        ka.sendall(req); st = answer(ka)
        if st is None or "403" in st: ka_st = str(st)
    if tu_t is None:
        r, _, _ = select.select([tu], [], [], 0)
        if r:
            try: d = tu.recv(4096)
            except OSError: d = b""
            if not d: tu_t = time.time() - t0
    time.sleep(0.1)
print("keepalive", ka_st)
print("tunnel closed", tu_t is not None and tu_t < 8)
`;
      await sh("rm -f ready revoked");
      const running = sh('python3 -c "$PY"', { PY: script });
      await until(
        "the connections are open",
        async () => (await sh("test -f ready; echo $?")).stdout === "0\n",
        60_000,
      );
      const revoke = await call("PATCH", `/api/agents/${agent.id}`, {
        sandbox_policy: { network: { allow: [] } },
      });
      assert.equal(revoke.status, 200, JSON.stringify(revoke.body));
      await sh("touch revoked");
      const r = await running;
      assert.equal(
        r.stdout,
        "first HTTP/1.1 200 OK\ntunnel HTTP/1.1 200 Connection Established\nthrough HTTP/1.1 200 OK\nkeepalive HTTP/1.1 403 Forbidden\ntunnel closed True\n",
        r.stderr,
      );
      await until("the ended tunnel is recorded", async () =>
        (await refusals()).some(
          (i) => /ended by a change of the policy/.test(i.reason) && i.port === up.port,
        ),
      );
    });

    test("SOCKS5 with a NUL in its name, and other malformed requests, are refused and recorded", async () => {
      const r = await sh(`python3 -c '
import socket
s = socket.create_connection(("127.0.0.1", ${BOX_BRIDGES.egress}), timeout=10)
s.sendall(b"\\x05\\x01\\x00"); assert s.recv(2) == b"\\x05\\x00"
name = b"pkg.test\\x00.evil.test"
s.sendall(b"\\x05\\x01\\x00\\x03" + bytes([len(name)]) + name + (80).to_bytes(2, "big"))
print(s.recv(10)[1])
s = socket.create_connection(("127.0.0.1", ${BOX_BRIDGES.egress}), timeout=10)
s.sendall(b"CONNECT nonsense HTTP/1.1\\r\\n\\r\\n"); print(s.recv(100).split(b"\\r\\n")[0].decode())
s = socket.create_connection(("127.0.0.1", ${BOX_BRIDGES.egress}), timeout=10)
s.sendall(b"GET http://pkg.test/ HTTP/1.1\\r\\nHost: evil\\x01.test\\r\\n\\r\\n"); print(s.recv(100).split(b"\\r\\n")[0].decode())
'`);
      assert.equal(r.stdout, "8\nHTTP/1.1 400 Bad Request\nHTTP/1.1 400 Bad Request\n", r.stderr);
      await until("all three recorded", async () => {
        const items = await refusals();
        return (
          items.some(
            (i) => i.host === "pkg.test\\x00.evil.test" && /not a host name or an IP/.test(i.reason),
          ) &&
          items.some((i) => /CONNECT wants host:port/.test(i.reason)) &&
          items.some((i) => /could not read the request/.test(i.reason))
        );
      });
    });
  });
}

describe("hostile: the operator's bound never opens the server's own port", () => {
  let t: TestServer;
  let up: Awaited<ReturnType<typeof okServer>>;
  let machine: { id: string };
  let a: { id: string; uid: number };
  let front: BridgeFront | undefined;

  before(async () => {
    up = await okServer();
    t = await startTestServer({ listen: true, env: { WARREN_EGRESS_PRIVATE_ALLOW: "127.0.0.0/8" } });
    const made = await orgAndMachine(t.call, "bound");
    machine = made.machine;
    a = await newAgent(t.call, made, { name: "a" });
    front = await bridgeFront(t, machine.id);
  });
  after(async () => {
    await front?.close();
    await t?.close();
    await up?.close();
  });

  /** A connection the server's bridges take as agent a's (as boxd hands one over): its answer. */
  const bridged = (text: string): Promise<string> =>
    front!.bridged(a.uid, text, (got) => /^HTTP\/1.1 200 Connection/.test(got));

  test("inside a bound of 127.0.0.0/8 the API's port is still refused, when saved and when dialled", async () => {
    const apiPort = Number(new URL(t.url as string).port);
    for (const allow of [[`127.0.0.1:${apiPort}`], [`127.0.0.9:${apiPort}`], ["127.0.0.0/8"]]) {
      const r = await t.call("PATCH", `/api/agents/${a.id}`, { sandbox_policy: { network: { allow } } });
      assert.equal(r.status, 400, allow[0]);
      assert.equal(r.body.error.code, "egress.forbidden");
      assert.match(r.body.error.message, /the warren server's own endpoint/);
    }
    const ok = await t.call("PATCH", `/api/agents/${a.id}`, {
      sandbox_policy: { network: { allow: [`127.0.0.1:${up.port}`, `127.0.0.7:${up.port}`] } },
    });
    assert.equal(ok.status, 200, JSON.stringify(ok.body));
    assert.match(await bridged(`CONNECT 127.0.0.1:${up.port} HTTP/1.1\r\n\r\n`), /^HTTP\/1.1 200 Connection/);
    // written into the store past the check: still refused by the proxy
    await t.server.store.db
      .update(schema.agents)
      .set({ sandboxPolicy: { network: { mode: "open", allow: ["127.0.0.0/8"] } } })
      .where(eq(schema.agents.id, a.id));
    for (const target of [`127.0.0.1:${apiPort}`, `127.0.0.9:${apiPort}`, `[::ffff:127.0.0.1]:${apiPort}`]) {
      const answer = await bridged(`CONNECT ${target} HTTP/1.1\r\n\r\n`);
      assert.match(answer, /^HTTP\/1.1 403 Forbidden\r\n[^]*the warren server's own endpoint/, target);
    }
    const members = (await t.call("GET", "/api/orgs")).body.items.length;
    const put = await bridged(
      `PUT http://127.0.0.1:${apiPort}/api/orgs HTTP/1.1\r\nHost: 127.0.0.1:${apiPort}\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}`,
    );
    assert.match(put, /^HTTP\/1.1 403 Forbidden\r\n[^]*own endpoint/);
    assert.equal((await t.call("GET", "/api/orgs")).body.items.length, members);
  });
});
