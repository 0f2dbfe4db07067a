// Port previews against a hostile box (issue: "No door back into the server"). An agent's
// server answers a page whose script tries to use the API with the viewer's rights (make an
// attacker owner, read the members, create an organisation), sets cookies for the API's
// domain and for the preview's own cookie, and records every header it is sent. An owner
// opens it in a real Chromium, in both auth modes: the page runs on the preview's origin, gets
// nothing of the API, changes nothing, sees no credential of the viewer, and leaves no cookie
// in the API's jar. Then the token's rules, over plain HTTP.
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { after, before, describe, test } from "node:test";
import { chromium, type Browser } from "playwright-core";
import WebSocket from "ws";
import { boxSkipReason } from "../box/fixture.js";
import { previewGet } from "../support/preview.js";
import { editorOfOld } from "../support/members.js";
import { startTestServer, type TestServer } from "../support/server.js";
import { CHROMIUM, CHROMIUM_FLAGS } from "../support/chromium-flags.js";

const OWNER = "owner@example.com";
const ATTACKER = "attacker@example.com";
const OUTSIDER = "outsider@example.org";

/** The box's server: the page, its cookies, a record of every request's headers, the page's report. */
const BOX_SERVER = String.raw`
import http.server, json, os, sys, threading
HOME = os.environ["HOME"]
PORT, API, API2, ORG, AGENT = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5]
PAGE = """<!doctype html><html><head><title>loading</title></head><body><script>
const APIS = %s, ORG = %s, AGENT = %s;
(async () => {
  const out = { origin: location.origin, cookie: document.cookie, tries: {} };
  const become = JSON.stringify({ email: "attacker@example.com", role: "owner" });
  const tries = [["put_rel", "/api/orgs/" + ORG + "/members", { method: "PUT", headers: { "content-type": "application/json" }, body: become }]];
  for (const api of APIS) {
    tries.push(
      ["put " + api, api + "/api/orgs/" + ORG + "/members", { method: "PUT", credentials: "include", headers: { "content-type": "application/json" }, body: become }],
      ["put_nocors " + api, api + "/api/orgs/" + ORG + "/members", { method: "PUT", mode: "no-cors", credentials: "include", body: become }],
      ["exec_nocors " + api, api + "/api/agents/" + AGENT + "/exec", { method: "POST", mode: "no-cors", credentials: "include", headers: { "content-type": "text/plain" }, body: JSON.stringify({ argv: ["touch", "pwned"] }) }],
      ["post_nocors " + api, api + "/api/orgs", { method: "POST", mode: "no-cors", credentials: "include", headers: { "content-type": "text/plain" }, body: JSON.stringify({ name: "pwned" }) }],
      ["get " + api, api + "/api/orgs/" + ORG + "/members", { credentials: "include" }],
      ["get_nocors " + api, api + "/api/orgs/" + ORG + "/members", { mode: "no-cors", credentials: "include" }],
    );
  }
  for (const [name, url, init] of tries) {
    try {
      const r = await fetch(url, init);
      out.tries[name] = r.type + " " + r.status + " " + (await r.text()).slice(0, 300);
    } catch (e) {
      out.tries[name] = "blocked " + e;
    }
  }
  await fetch("/report", { method: "POST", body: JSON.stringify(out) });
  document.title = "done";
})();
</script></body></html>""" % (json.dumps([API, API2]), json.dumps(ORG), json.dumps(AGENT))

class H(http.server.BaseHTTPRequestHandler):
    def log_message(self, *a):
        pass
    def record(self):
        with open(os.path.join(HOME, "seen.jsonl"), "a") as f:
            f.write(json.dumps({"method": self.command, "path": self.path, "headers": [[k, v] for k, v in self.headers.items()]}) + "\n")
    def answer(self, status, body, ctype="text/plain", cookies=()):
        data = body.encode()
        self.send_response(status)
        self.send_header("content-type", ctype)
        self.send_header("content-length", str(len(data)))
        for c in cookies:
            self.send_header("set-cookie", c)
        self.end_headers()
        self.wfile.write(data)
    def do_GET(self):
        self.record()
        if self.headers.get("upgrade", "").lower() == "websocket":
            import base64, hashlib
            key = self.headers["sec-websocket-key"] + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
            self.send_response(101)
            self.send_header("upgrade", "websocket")
            self.send_header("connection", "Upgrade")
            self.send_header("sec-websocket-accept", base64.b64encode(hashlib.sha1(key.encode()).digest()).decode())
            self.send_header("set-cookie", "ws_cookie=1; Domain=localhost; Path=/")
            self.end_headers()
            data = json.dumps([[k, v] for k, v in self.headers.items()]).encode()
            n = len(data)
            head = bytes([0x81, n]) if n < 126 else bytes([0x81, 126, n >> 8, n & 255])
            self.wfile.write(head + data)
            self.wfile.flush()
            self.rfile.read(1)
            self.close_connection = True
            return
        if self.path == "/":
            self.answer(200, PAGE, "text/html; charset=utf-8", [
                "api_domain=1; Domain=localhost; Path=/",
                "api_ip=1; Domain=127.0.0.1; Path=/",
                "host_only=1; Path=/",
                "warren_preview_session=fixed-by-the-box; Path=/",
            ])
        elif self.path == "/quit":
            self.answer(200, "bye")
            threading.Thread(target=srv.shutdown).start()
        else:
            self.answer(404, "the box has no " + self.path)
    def do_POST(self):
        self.record()
        body = self.rfile.read(int(self.headers.get("content-length", "0")))
        if self.path == "/report":
            with open(os.path.join(HOME, "report.json"), "wb") as f:
                f.write(body)
        self.answer(200, "ok")
    do_PUT = do_POST

srv = http.server.ThreadingHTTPServer(("127.0.0.1", PORT), H)
print("up", flush=True)
srv.serve_forever()
`;

interface Agent {
  id: string;
  ports: { first: number; last: number };
}

type Mode = "compat-cookie" | "trusted-header";

for (const mode of ["compat-cookie", "trusted-header"] as Mode[]) {
  describe(`port previews against a hostile box (${mode})`, { skip: boxSkipReason() ?? false }, () => {
    let t: TestServer;
    let browser: Browser;
    let org: { id: string };
    let a: Agent;
    let b: Agent;
    const as = (email: string): Record<string, string> =>
      mode === "trusted-header" ? { "x-forwarded-email": email } : {};
    const owner = (method: string, url: string, body?: unknown) => t.call(method, url, body, as(OWNER));
    let server: Promise<{ status: number; body: any }> | undefined;
    const P = () => a.ports.first + 3;

    const startBoxServer = async () => {
      const api = new URL(t.url!);
      server = owner("POST", `/api/agents/${a.id}/exec`, {
        argv: [
          "python3",
          "-c",
          BOX_SERVER,
          String(P()),
          api.origin,
          `http://localhost:${api.port}`,
          org.id,
          a.id,
        ],
        timeout_ms: 300_000,
      });
      // up once the preview answers (a 502 while nothing listens)
      for (let i = 0; ; i++) {
        const moved = await t.inject({
          method: "GET",
          url: `/api/agents/${a.id}/ports/${P()}/ping`,
          headers: as(OWNER),
        });
        const to = new URL(String(moved.headers.location));
        const first = await previewGet(t.previewPort!, to);
        const cookie = String(first.headers["set-cookie"]).split(";")[0]!;
        const r = await previewGet(t.previewPort!, new URL("/ping", to.origin), { cookie });
        if (r.status === 404 && r.body.startsWith("the box has no")) return;
        assert.ok(i < 200, `the box's server did not come up: ${r.status} ${r.body}`);
        await new Promise((res) => setTimeout(res, 100));
      }
    };

    before(async () => {
      assert.ok(existsSync(CHROMIUM), "chromium is missing: scripts/setup.sh installs it");
      t = await startTestServer({ listen: true, env: { AUTH_MODE: mode } });
      org = (await owner("POST", "/api/orgs", { name: "previews" })).body;
      const m = (await owner("POST", "/api/machines", { org_id: org.id, name: "m", memory_mib: 512 })).body;
      a = (await owner("POST", "/api/agents", { org_id: org.id, machine_id: m.id, name: "a" })).body;
      b = (await owner("POST", "/api/agents", { org_id: org.id, machine_id: m.id, name: "b" })).body;
      // the widest seat below admin: an editor of old, holding no area
      const put = await editorOfOld(
        t,
        org.id,
        owner("PUT", `/api/orgs/${org.id}/members`, { email: ATTACKER, role: "viewer" }),
      );
      assert.equal(put.status, 200, JSON.stringify(put.body));
      browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_FLAGS });
      await startBoxServer();
    });

    after(async () => {
      await browser?.close();
      if (server && a) {
        const moved = await t.inject({
          method: "GET",
          url: `/api/agents/${a.id}/ports/${P()}/quit`,
          headers: as(OWNER),
        });
        const to = new URL(String(moved.headers.location));
        const first = await previewGet(t.previewPort!, to).catch(() => undefined);
        const cookie = String(first?.headers["set-cookie"] ?? "").split(";")[0] ?? "";
        await previewGet(t.previewPort!, new URL("/quit", to.origin), { cookie }).catch(() => undefined);
        await server.catch(() => undefined);
      }
      await t?.close();
    });

    test("the owner opens the box's page: it runs on the preview's origin and gets nothing of the API", async () => {
      const api = new URL(t.url!);
      const apiOrigins = [api.origin, `http://localhost:${api.port}`];
      const previewOrigin = `http://${P()}-${a.id}.localhost:${t.previewPort}`;
      const membersBefore = (await owner("GET", `/api/orgs/${org.id}/members`)).body;
      const orgsBefore = (await owner("GET", "/api/orgs")).body;
      await owner("POST", `/api/agents/${a.id}/exec`, { argv: ["rm", "-f", "seen.jsonl", "report.json"] });

      const ctx = await browser.newContext();
      try {
        // the authenticating proxy: the owner's identity on every request to the API's origin
        // (also those the preview's page makes: the worst case); a viewer's credentials on
        // every request to the preview, and a cookie of the whole localhost domain
        await ctx.route(
          () => true,
          (route) => {
            const u = new URL(route.request().url());
            const headers = { ...route.request().headers() };
            if (apiOrigins.includes(u.origin) && mode === "trusted-header")
              headers["x-forwarded-email"] = OWNER;
            if (u.origin === previewOrigin) {
              Object.assign(headers, {
                "x-forwarded-email": OWNER,
                authorization: "Bearer viewer-bearer-7731",
                "proxy-authorization": "Basic dmlld2VyOnB3",
                "x-forwarded-for": "203.0.113.7",
                "x-forwarded-user": "owner",
                forwarded: "for=203.0.113.7",
              });
            }
            return route.continue({ headers });
          },
        );
        await ctx.addCookies([
          { name: "app_session", value: "viewer-cookie-7731", domain: ".localhost", path: "/" },
        ]);
        const page = await ctx.newPage();
        page.setDefaultTimeout(60_000);
        await page.goto(`${api.origin}/api/agents/${a.id}/ports/${P()}/`);
        await page.waitForFunction(
          () => (globalThis as unknown as { document: { title: string } }).document.title === "done",
        );
        assert.equal(new URL(page.url()).origin, previewOrigin);
        assert.equal(new URL(page.url()).search, "", "the token is gone from the address");

        const cat = await owner("POST", `/api/agents/${a.id}/exec`, { argv: ["cat", "report.json"] });
        assert.equal(cat.body.exit_code, 0, cat.body.stderr);
        const report = JSON.parse(cat.body.stdout) as {
          origin: string;
          cookie: string;
          tries: Record<string, string>;
        };
        assert.equal(report.origin, previewOrigin);
        // the preview's cookie is HttpOnly; the box's own cookies were never kept
        assert.equal(report.cookie, "");
        // the relative call reaches only the box's server
        assert.match(report.tries.put_rel ?? "", /^basic 200 ok$/);
        for (const o of apiOrigins) {
          for (const name of ["put", "get", "put_nocors"]) {
            assert.match(
              report.tries[`${name} ${o}`] ?? "",
              /^blocked TypeError/,
              `${name} ${o}: ${report.tries[`${name} ${o}`]}`,
            );
          }
          for (const name of ["exec_nocors", "post_nocors", "get_nocors"]) {
            assert.equal(report.tries[`${name} ${o}`], "opaque 0 ", `${name} ${o}`);
          }
        }
        // nothing changed: the attacker is still an editor, no organisation was created
        assert.deepEqual((await owner("GET", `/api/orgs/${org.id}/members`)).body, membersBefore);
        assert.deepEqual((await owner("GET", "/api/orgs")).body, orgsBefore);
        const pwned = await owner("POST", `/api/agents/${a.id}/exec`, { argv: ["ls", "pwned"] });
        assert.notEqual(pwned.body.exit_code, 0, "the page ran a command in the box through the API");
        const attacker = (membersBefore.items as { email: string; role: string }[]).find(
          (x) => x.email === ATTACKER,
        );
        assert.equal(attacker?.role, "editor");

        // what reached the box: no credential, no identity, no cookie of the viewer
        const seen = await owner("POST", `/api/agents/${a.id}/exec`, { argv: ["cat", "seen.jsonl"] });
        const requests = (seen.body.stdout as string)
          .trim()
          .split("\n")
          .map((l) => JSON.parse(l) as { method: string; path: string; headers: [string, string][] });
        assert.deepEqual(
          requests.map((r) => `${r.method} ${r.path}`),
          ["GET /", "PUT /api/orgs/" + org.id + "/members", "POST /report"],
        );
        for (const r of requests) {
          const names = r.headers.map(([k]) => k.toLowerCase());
          for (const refused of [
            "cookie",
            "authorization",
            "proxy-authorization",
            "x-forwarded-email",
            "x-forwarded-for",
            "x-forwarded-user",
            "forwarded",
          ])
            assert.ok(!names.includes(refused), `${r.method} ${r.path} reached the box with ${refused}`);
          const all = JSON.stringify(r.headers);
          assert.ok(!/7731|warren_preview/.test(all), `${r.method} ${r.path} carried a credential: ${all}`);
        }

        // no cookie of the box in the API's jar (nor anywhere): only the preview's own one
        const jar = await ctx.cookies();
        assert.deepEqual(
          jar.map((c) => c.name).sort(),
          ["app_session", "warren_preview_session"],
          JSON.stringify(jar),
        );
        const mine = jar.find((c) => c.name === "warren_preview_session")!;
        assert.equal(mine.domain, `${P()}-${a.id}.localhost`, "host-only to the preview");
        assert.equal(mine.httpOnly, true);
        assert.notEqual(mine.value, "fixed-by-the-box");
        assert.deepEqual(
          (await ctx.cookies(apiOrigins)).map((c) => c.name),
          ["app_session"],
        );
      } finally {
        await ctx.close();
      }
    });

    test("the API's route answers a 307 with a token, and nothing of the box; other methods 405", async () => {
      const moved = await t.inject({
        method: "GET",
        url: `/api/agents/${a.id}/ports/${P()}/`,
        headers: as(OWNER),
      });
      assert.equal(moved.statusCode, 307);
      assert.equal(moved.body, "the port is served on its preview's origin: follow the Location header\n");
      assert.equal(moved.headers["set-cookie"], undefined);
      const to = new URL(String(moved.headers.location));
      assert.equal(to.origin, `http://${P()}-${a.id}.localhost:${t.previewPort}`);
      assert.match(to.searchParams.get("warren_preview") ?? "", /^[A-Za-z0-9_-]{43}$/);
      for (const method of ["POST", "PUT", "PATCH", "DELETE"] as const) {
        const r = await t.inject({
          method,
          url: `/api/agents/${a.id}/ports/${P()}/`,
          headers: as(OWNER),
          payload: "x",
        });
        assert.equal(r.statusCode, 405, method);
        assert.equal(JSON.parse(r.body).error.code, "method.not_allowed");
      }
      // outside the agent's own port block: another agent's, the block's end, a system port
      for (const port of [b.ports.first, a.ports.last + 1, a.ports.first - 1, 22]) {
        const r = await t.inject({
          method: "GET",
          url: `/api/agents/${a.id}/ports/${port}/`,
          headers: as(OWNER),
        });
        assert.equal(r.statusCode, 400, String(port));
        assert.equal(JSON.parse(r.body).error.code, "request.invalid");
      }
    });

    test("a token is good once, for its agent and port only; a session for its preview only", async () => {
      const issue = async (agent: Agent, port: number) => {
        const r = await t.inject({
          method: "GET",
          url: `/api/agents/${agent.id}/ports/${port}/`,
          headers: as(OWNER),
        });
        assert.equal(r.statusCode, 307, r.body);
        return new URL(String(r.headers.location));
      };
      const at = (agent: Agent, port: number, search = "") =>
        new URL(`http://${port}-${agent.id}.localhost:${t.previewPort}/${search}`);
      const code = (r: { status: number; body: string }) => `${r.status} ${JSON.parse(r.body).error.code}`;

      // without a token or cookie
      assert.equal(code(await previewGet(t.previewPort!, at(a, P()))), "401 auth.required");
      // once
      const to = await issue(a, P());
      const first = await previewGet(t.previewPort!, to);
      assert.equal(first.status, 303);
      assert.equal(first.headers.location, "/");
      const setCookie = String(first.headers["set-cookie"]);
      assert.match(
        setCookie,
        /^warren_preview_session=[A-Za-z0-9_-]{43}; Path=\/; HttpOnly; SameSite=Lax; Max-Age=3600$/,
      );
      assert.equal(code(await previewGet(t.previewPort!, to)), "401 auth.required");
      const cookie = setCookie.split(";")[0]!;
      assert.equal((await previewGet(t.previewPort!, at(a, P(), "x"), { cookie })).body, "the box has no /x");
      // the session for (a, P) opens neither another port of a nor the same port of b
      assert.equal(code(await previewGet(t.previewPort!, at(a, P() + 1), { cookie })), "401 auth.required");
      assert.equal(code(await previewGet(t.previewPort!, at(b, P()), { cookie })), "401 auth.required");
      // a token used on another port's or another agent's address is refused, and spent
      for (const wrong of [at(a, P() + 1), at(b, b.ports.first + 3)]) {
        const tok = await issue(a, P());
        const used = new URL(`${wrong.origin}/${tok.search}`);
        assert.equal(code(await previewGet(t.previewPort!, used)), "401 auth.required", wrong.origin);
        assert.equal(code(await previewGet(t.previewPort!, tok)), "401 auth.required", "spent");
      }
      // a made-up token
      assert.equal(
        code(await previewGet(t.previewPort!, at(a, P(), "?warren_preview=AAAA"))),
        "401 auth.required",
      );
      // the listener serves only preview hosts: not the API, not the app
      for (const host of [
        `127.0.0.1:${t.previewPort}`,
        `localhost:${t.previewPort}`,
        `${P()}-${a.id}.example.com`,
        `${P()}-${a.id}.localhost.evil.com`,
      ]) {
        const r = await previewGet(t.previewPort!, new URL(`http://${host}/api/orgs`), { cookie });
        assert.equal(code(r), "421 host.refused", host);
      }
      // the API's paths on a preview's origin are the box's
      assert.equal(
        (await previewGet(t.previewPort!, at(a, P(), "api/orgs"), { cookie })).body,
        "the box has no /api/orgs",
      );
    });

    test("a WebSocket through the preview: admitted by its cookie, no credential in, no cookie out", async () => {
      const moved = await t.inject({
        method: "GET",
        url: `/api/agents/${a.id}/ports/${P()}/`,
        headers: as(OWNER),
      });
      const to = new URL(String(moved.headers.location));
      const cookie = String((await previewGet(t.previewPort!, to)).headers["set-cookie"]).split(";")[0]!;
      const open = (headers: Record<string, string>) =>
        new Promise<{ status: number; headers: Record<string, unknown>; message?: string }>(
          (resolve, reject) => {
            const ws = new WebSocket(`ws://127.0.0.1:${t.previewPort}/live`, {
              headers: { host: to.host, ...headers },
            });
            let head: { status: number; headers: Record<string, unknown> } | undefined;
            ws.on("upgrade", (res) => (head = { status: res.statusCode ?? 0, headers: res.headers }));
            ws.on("message", (data: Buffer) => {
              resolve({ ...head!, message: data.toString("utf8") });
              ws.close();
            });
            ws.on("unexpected-response", (_req, res) => {
              resolve({ status: res.statusCode ?? 0, headers: res.headers });
              res.resume();
            });
            ws.on("error", reject);
          },
        );
      const refused = await open({});
      assert.equal(refused.status, 401);
      const r = await open({
        cookie,
        authorization: "Bearer viewer-bearer-7731",
        "x-forwarded-email": OWNER,
      });
      assert.equal(r.status, 101);
      assert.equal(r.headers["set-cookie"], undefined);
      const seen = (JSON.parse(r.message!) as [string, string][]).map(([k]) => k.toLowerCase());
      for (const refusedHeader of ["cookie", "authorization", "x-forwarded-email"])
        assert.ok(!seen.includes(refusedHeader), `the box saw ${refusedHeader}: ${seen.join(", ")}`);
      assert.ok(seen.includes("sec-websocket-key"));
    });

    if (mode === "trusted-header") {
      test("who may open the ports is checked at every request, as the API checks it", async () => {
        // an outsider is not told the agent exists; an auditor may not see workloads
        const out = await t.inject({
          method: "GET",
          url: `/api/agents/${a.id}/ports/${P()}/`,
          headers: as(OUTSIDER),
        });
        assert.equal(out.statusCode, 404);
        await owner("PUT", `/api/orgs/${org.id}/members`, { email: "auditor@example.com", role: "auditor" });
        const aud = await t.inject({
          method: "GET",
          url: `/api/agents/${a.id}/ports/${P()}/`,
          headers: as("auditor@example.com"),
        });
        assert.equal(aud.statusCode, 403);
        // an editor's session ends with the editor's membership
        await editorOfOld(
          t,
          org.id,
          owner("PUT", `/api/orgs/${org.id}/members`, { email: "leaver@example.com", role: "viewer" }),
        );
        const r = await t.inject({
          method: "GET",
          url: `/api/agents/${a.id}/ports/${P()}/y`,
          headers: as("leaver@example.com"),
        });
        const first = await previewGet(t.previewPort!, new URL(String(r.headers.location)));
        const cookie = String(first.headers["set-cookie"]).split(";")[0]!;
        const url = new URL(`http://${P()}-${a.id}.localhost:${t.previewPort}/y`);
        assert.equal((await previewGet(t.previewPort!, url, { cookie })).body, "the box has no /y");
        const members = (await owner("GET", `/api/orgs/${org.id}/members`)).body.items as {
          email: string;
          user_id: string;
        }[];
        const leaver = members.find((x) => x.email === "leaver@example.com")!;
        const del = await owner("DELETE", `/api/orgs/${org.id}/members/${leaver.user_id}`);
        assert.equal(del.status, 204, JSON.stringify(del.body));
        const after = await previewGet(t.previewPort!, url, { cookie });
        assert.equal(after.status, 404, after.body);
        assert.equal(JSON.parse(after.body).error.code, "not_found");
      });
    }
  });
}
