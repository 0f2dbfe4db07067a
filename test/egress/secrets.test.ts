// Secrets held by the proxy (use egress), in a real box: the agent's commands see only a
// marker in WARREN_SECRET_<NAME>; a request carrying it reaches a bound host with the value
// in its place (plain HTTP, and HTTPS through the machine's interception authority, which the
// box trusts), and is refused and recorded to any other host; the value is in no environment,
// no /proc/*/environ, no run output, no egress record and no file of the server's state. The
// upstreams are on loopback.
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { boxSkipReason } from "../box/fixture.js";
import { startTestServer, type TestServer } from "../support/server.js";
import { startUpstreams, TEST_NAMES, type Upstreams } from "./upstreams.js";

const VALUE = "tok-9f3c1e7a5b2d4680-egress";
const hex = (s: string) => Buffer.from(s).toString("hex");
const terminal = ["succeeded", "failed", "timed_out", "cancelled", "lost"];

/** The regular files under a folder, links not followed. */
function filesUnder(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    return e.isDirectory() ? filesUnder(p) : e.isFile() ? [p] : [];
  });
}

describe("secrets held by the egress proxy", { skip: boxSkipReason() ?? false }, () => {
  let t: TestServer;
  let up: Upstreams;
  let stateRoot: string;
  let a: { id: string };
  let marker = "";

  const sh = async (command: string) => {
    const r = await t.call("POST", `/api/agents/${a.id}/exec`, { command, timeout_ms: 60_000 });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    return r.body as { exit_code: number; stdout: string; stderr: string };
  };
  const curl = (args: string) =>
    sh(`curl -sS -w ' %{http_code}' -H "Authorization: Bearer $WARREN_SECRET_API_TOKEN" ${args}`);

  before(async () => {
    up = await startUpstreams();
    // the proxy verifies the upstreams of intercepted connections: the test upstreams' authority
    stateRoot = fs.mkdtempSync(path.join(os.tmpdir(), "warren-egress-secrets-"));
    fs.writeFileSync(path.join(stateRoot, "egress-trust.pem"), up.ca);
    t = await startTestServer({
      stateRoot,
      env: { WARREN_EGRESS_PRIVATE_ALLOW: `127.0.0.1:${up.httpPort},127.0.0.1:${up.httpsPort}` },
      egressHosts: Object.fromEntries(TEST_NAMES.map((n) => [n, ["127.0.0.1"]])),
    });
    const org = (await t.call("POST", "/api/orgs", { name: "held" })).body;
    const m = (await t.call("POST", "/api/machines", { org_id: org.id, name: "m", memory_mib: 1024 })).body;
    a = (await t.call("POST", "/api/agents", { org_id: org.id, machine_id: m.id, name: "a" })).body;
    const allow = ["api.example.com", "pkg.test"].flatMap((h) => [
      `${h}:${up.httpPort}`,
      `${h}:${up.httpsPort}`,
    ]);
    const set = await t.call("PATCH", `/api/agents/${a.id}`, { sandbox_policy: { network: { allow } } });
    assert.equal(set.status, 200, JSON.stringify(set.body));
    const s = await t.call("POST", "/api/secrets", {
      org_id: org.id,
      name: "API_TOKEN",
      value: VALUE,
      use: "egress",
      hosts: ["api.example.com"],
      grants: [{ scope: "agent", id: a.id }],
    });
    assert.equal(s.status, 201, JSON.stringify(s.body));
    assert.equal(s.body.use, "egress");
    assert.deepEqual(s.body.hosts, ["api.example.com"]);
  });
  after(async () => {
    await t?.server.runtime.stopAll("test over");
    await t?.close();
    await up?.close();
    fs.rmSync(stateRoot, { recursive: true, force: true });
  });

  test("a secret of use egress needs hosts, and takes host patterns", async () => {
    const org = (await t.call("POST", "/api/orgs", { name: "held-bad" })).body;
    for (const [body, where] of [
      [{ use: "egress" }, "hosts"],
      [{ use: "egress", hosts: ["*"] }, "hosts"],
      [{ use: "egress", hosts: ["https://x.example.com/"] }, "hosts"],
      [{ use: "env", hosts: ["x.example.com"] }, "hosts"],
    ] as const) {
      const r = await t.call("POST", "/api/secrets", {
        org_id: org.id,
        name: "X_TOKEN",
        value: VALUE,
        ...body,
      });
      assert.equal(r.status, 400, JSON.stringify(r.body));
      assert.equal(r.body.error.code, "request.invalid");
      assert.match(JSON.stringify(r.body), new RegExp(where));
    }
    const ok = await t.call("POST", "/api/secrets", {
      ...{ org_id: org.id, name: "X_TOKEN", value: VALUE, use: "egress" },
      hosts: ["*.example.com", "api.example.org:8443"],
    });
    assert.equal(ok.status, 201, JSON.stringify(ok.body));
    const patched = await t.call("PATCH", `/api/secrets/${ok.body.id}`, { hosts: [] });
    assert.equal(patched.status, 400, JSON.stringify(patched.body));
  });

  test("commands see a marker: env and /proc/*/environ never hold the value", async () => {
    const r = await sh(
      'printf "%s\\n" "$WARREN_SECRET_API_TOKEN"; echo "plain=${API_TOKEN-unset}"; ' +
        "cat /proc/[0-9]*/environ 2>/dev/null | od -An -tx1 | tr -d ' \\n'; echo; env | od -An -tx1 | tr -d ' \\n'",
    );
    assert.equal(r.exit_code, 0, r.stderr);
    const [first = "", plain, environs = "", env = ""] = r.stdout.split("\n");
    assert.match(first, /^warren-secret:[A-Za-z0-9_-]{32}$/);
    marker = first;
    assert.equal(plain, "plain=unset");
    assert.ok(environs.length > 1000 && env.length > 1000, "the environments were read");
    assert.ok(environs.includes(hex(marker)), "/proc/*/environ holds the marker");
    assert.ok(!environs.includes(hex(VALUE)), "no /proc/*/environ holds the value");
    assert.ok(!env.includes(hex(VALUE)), "env does not hold the value");
    assert.ok(!r.stdout.includes(VALUE));
  });

  test("a request with the marker reaches the bound host with the value, over HTTP and HTTPS", async () => {
    const before = up.seen.length;
    const plain = await curl(`http://api.example.com:${up.httpPort}/hello`);
    assert.equal(plain.stdout, `hello from api.example.com:${up.httpPort}\n 200`, plain.stderr);
    // HTTPS: the box trusts its machine's authority (CURL_CA_BUNDLE, SSL_CERT_FILE, ...)
    const tls = await curl(`https://api.example.com:${up.httpsPort}/hello`);
    assert.equal(tls.stdout, `hello from api.example.com:${up.httpsPort}\n 200`, tls.stderr);
    const py = await sh(
      `python3 -c "import os, urllib.request as u; r = u.Request('https://api.example.com:${up.httpsPort}/hello', headers={'Authorization': 'token ' + os.environ['WARREN_SECRET_API_TOKEN']}); print(u.urlopen(r).read().decode().strip())"`,
    );
    assert.equal(py.stdout, `hello from api.example.com:${up.httpsPort}\n`, py.stderr);
    const seen = up.seen.slice(before).map((s) => s.authorization);
    assert.deepEqual(seen, [`Bearer ${VALUE}`, `Bearer ${VALUE}`, `token ${VALUE}`]);
    // the certificate the agent's client saw is the machine authority's, for that host only
    const issuer = async (host: string, port: number) =>
      (
        await sh(
          `openssl s_client -proxy 127.0.0.1:\${HTTPS_PROXY##*:} -connect ${host}:${port} -servername ${host} </dev/null 2>/dev/null | grep -m1 '^issuer='`,
        )
      ).stdout.trim();
    assert.match(await issuer("api.example.com", up.httpsPort), /warren egress authority/);
    assert.equal(await issuer("pkg.test", up.httpsPort), "issuer=CN = pkg.test", "a blind tunnel elsewhere");
  });

  test("a request carrying the marker to another host (a header, Basic credentials, the URL, a tunnel's Host) or a marker of no secret is refused and recorded", async () => {
    const before = up.seen.length;
    const r = await curl(`http://pkg.test:${up.httpPort}/hello`);
    assert.match(
      r.stdout,
      /refused: the request to pkg\.test:\d+ carries the marker of the secret API_TOKEN/,
    );
    assert.match(r.stdout, / 403$/);
    const basic = await sh(
      `curl -sS -w ' %{http_code}' -u "me:$WARREN_SECRET_API_TOKEN" http://pkg.test:${up.httpPort}/hello`,
    );
    assert.match(basic.stdout, /carries the marker of the secret API_TOKEN[^]* 403$/);
    // in the URL
    const query = await sh(
      `curl -sS -w ' %{http_code}' "http://pkg.test:${up.httpPort}/hello?t=$WARREN_SECRET_API_TOKEN"`,
    );
    assert.match(query.stdout, /carries the marker of the secret API_TOKEN[^]* 403$/);
    // a marker of no secret of the agent, even to the bound host
    const forged = await sh(
      `curl -sS -w ' %{http_code}' -H "Authorization: Bearer warren-secret:${"A".repeat(32)}" http://api.example.com:${up.httpPort}/hello`,
    );
    assert.match(forged.stdout, /carries a marker of no secret of this agent[^]* 403$/);
    // inside the bound host's intercepted tunnel, a request naming another host
    const other = await curl(
      `-H "Host: pkg.test:${up.httpsPort}" https://api.example.com:${up.httpsPort}/hello`,
    );
    assert.match(other.stdout, /the Host header "pkg\.test:\d+" is not the connection's host[^]* 403$/);
    assert.equal(up.seen.length, before, "nothing reached the other hosts");
    const list = await t.call("GET", `/api/agents/${a.id}/egress?decision=refused&limit=50`);
    assert.ok(
      list.body.items.some(
        (i: { host: string; reason: string }) => i.host === "pkg.test" && /API_TOKEN/.test(i.reason),
      ),
      JSON.stringify(list.body),
    );
  });

  test("a run's output and the egress records never show the value", async () => {
    const started = await t.call("POST", `/api/agents/${a.id}/runs`, {
      kind: "command",
      command:
        'printf %s "$WARREN_SECRET_API_TOKEN" | od -An -tx1 | tr -d " \\n"; echo; ' +
        `curl -sS -H "Authorization: Bearer $WARREN_SECRET_API_TOKEN" https://api.example.com:${up.httpsPort}/hello; ` +
        // a bound host that sends the header back gives the value to the box (docs/api.md says
        // so): the run's output is still redacted of it
        `curl -sS -H "Authorization: Bearer $WARREN_SECRET_API_TOKEN" https://api.example.com:${up.httpsPort}/reflect`,
    });
    assert.equal(started.status, 202, JSON.stringify(started.body));
    let run: { status: string; output: string };
    const end = Date.now() + 60_000;
    for (;;) {
      run = (await t.call("GET", `/api/runs/${started.body.id}`)).body;
      if (terminal.includes(run.status)) break;
      assert.ok(Date.now() < end, `the run is still ${run.status}`);
      await new Promise((r) => setTimeout(r, 50));
    }
    assert.equal(run.status, "succeeded", JSON.stringify(run));
    assert.equal(
      run.output,
      `${hex(marker)}\nhello from api.example.com:${up.httpsPort}\nauthorization: Bearer [redacted]\n`,
    );
    assert.equal(up.seen.at(-1)?.authorization, `Bearer ${VALUE}`, "the reflecting host got the value");
    const records = await t.call("GET", `/api/agents/${a.id}/egress?limit=500`);
    const text = JSON.stringify(records.body);
    assert.ok(!text.includes(VALUE) && !text.includes(hex(VALUE)));
    assert.ok(
      records.body.items.some(
        (i: { decision: string; reason: string; path?: string }) =>
          i.decision === "allowed" && /intercepted/.test(i.reason) && i.path === "/hello",
      ),
      text,
    );
    const events = JSON.stringify((await t.call("GET", `/api/runs/${started.body.id}/events`)).body);
    assert.ok(!events.includes(VALUE));
    // nor does any file of the server's state: the machine's folder (the agent's home, the
    // authority's files) and the store hold no plaintext of it
    const files = filesUnder(stateRoot);
    assert.ok(files.length > 10, `the state root holds files (${files.length})`);
    const holding = files.filter((f) => fs.readFileSync(f).includes(VALUE));
    assert.deepEqual(holding, [], "no file holds the value");
  });
});
