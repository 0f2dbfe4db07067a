// The agents' browsers in real boxes: a site on this host's loopback (a login form, two
// accounts, a cookie) reached through each agent's egress proxy, the browser tools decided by
// the Cedar policy, logins kept in each agent's own profile across a box's stop and start.
import assert from "node:assert/strict";
import fs from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { BROWSER_TOOLS } from "../../src/contract/spec.js";
import type { Toolset } from "../../src/tools/types.js";
import { boxSkipReason } from "../box/fixture.js";
import { startTestServer, type TestServer } from "../support/server.js";
import { openToolset } from "../support/toolset.js";
import { builtins } from "../support/org.js";

const ALLOW_ALL = `@id("all") permit(principal, action, resource);`;
const ACCOUNTS: Record<string, string> = { alice: "pw-alice", bob: "pw-bob" };

function site(): Promise<{ port: number; close(): Promise<void> }> {
  const page = (body: string) =>
    `<!doctype html><html><head><title>site</title></head><body>${body}</body></html>`;
  const srv = http.createServer((req, res) => {
    const who = /(?:^|; )sid=(\w+)-token/.exec(req.headers.cookie ?? "")?.[1];
    if (req.method === "POST" && req.url === "/login") {
      let body = "";
      req.on("data", (c: Buffer) => (body += c.toString()));
      req.on("end", () => {
        const f = new URLSearchParams(body);
        const user = f.get("user") ?? "";
        if (ACCOUNTS[user] !== f.get("pass")) return void res.writeHead(401).end(page("wrong password"));
        res.writeHead(303, {
          location: "/me",
          "set-cookie": `sid=${user}-token; Path=/; HttpOnly; Max-Age=86400`,
        });
        res.end();
      });
      return;
    }
    res.writeHead(200, { "content-type": "text/html" });
    if (req.url === "/login")
      return void res.end(
        page(
          `<form method="post" action="/login"><input id="user" name="user"><input id="pass" name="pass" type="password"><button>Sign in</button></form>`,
        ),
      );
    if (req.url === "/bomb")
      return void res.end(
        page(`<script>const a = []; for (;;) a.push(new Uint8Array(64 * 1024 * 1024).fill(1));</script>`),
      );
    res.end(page(who ? `logged in as ${who}` : "not logged in"));
  });
  return new Promise((resolve) =>
    srv.listen(0, "127.0.0.1", () =>
      resolve({
        port: (srv.address() as AddressInfo).port,
        close: () => new Promise<void>((r) => (srv.closeAllConnections(), srv.close(() => r()))),
      }),
    ),
  );
}

describe("the agents' browsers", { skip: boxSkipReason() ?? false }, () => {
  let t: TestServer;
  let web: { port: number; close(): Promise<void> };
  let machine: { id: string };
  let a: { id: string; machine_id: string };
  let b: { id: string; machine_id: string };
  const open: Toolset[] = [];
  const url = (p: string) => `http://site.test:${web.port}${p}`;

  before(async () => {
    web = await site();
    t = await startTestServer({
      env: { BOX_IDLE_S: "300", WARREN_EGRESS_PRIVATE_ALLOW: `127.0.0.1:${web.port}` },
      egressHosts: { "site.test": ["127.0.0.1"], "other.test": ["127.0.0.1"] },
    });
    const org = (await t.call("POST", "/api/orgs", { name: "browsers" })).body;
    const m = await t.call("POST", "/api/machines", {
      org_id: org.id,
      name: "m",
      memory_mib: 1536,
      trust: "isolated",
    });
    assert.equal(m.status, 201, JSON.stringify(m.body));
    machine = m.body;
    const agent = async (name: string) => {
      const r = await t.call("POST", "/api/agents", { org_id: org.id, machine_id: machine.id, name });
      assert.equal(r.status, 201, JSON.stringify(r.body));
      const p = await t.call("PATCH", `/api/agents/${r.body.id}`, {
        sandbox_policy: { network: { allow: [`site.test:${web.port}`] } },
      });
      assert.equal(p.status, 200, JSON.stringify(p.body));
      return r.body;
    };
    a = await agent("a");
    b = await agent("b");
  });

  after(async () => {
    for (const s of open) await s.close().catch(() => {});
    t?.server.browsers.close();
    await t?.server.runtime.stopAll("test over");
    await t?.close();
    await web?.close();
  });

  async function tools(agentId: string, policy = ALLOW_ALL): Promise<{ set: Toolset; runId: string }> {
    const { set, runId } = await openToolset(t, agentId, {
      tools: builtins(...BROWSER_TOOLS),
      tool_policy: policy,
    });
    open.push(set);
    return { set, runId };
  }

  test("two agents log in as two accounts and stay logged in after their box stops and starts", async () => {
    for (const [agent, user] of [
      [a, "alice"],
      [b, "bob"],
    ] as const) {
      const { set } = await tools(agent.id);
      const o = await set.call("browser_open", { url: url("/login") });
      assert.match(o.output, /opened \(status 200\)/, o.output);
      assert.equal(o.record.decision, "allow");
      await set.call("browser_type", { selector: "#user", text: user });
      const typed = await set.call("browser_type", { selector: "#pass", text: ACCOUNTS[user], submit: true });
      assert.match(typed.output, new RegExp(`logged in as ${user}`), typed.output);
    }
    // as when idle: the browsers stop first (their profiles written), then the box
    await t.server.browsers.stop(a.id);
    await t.server.browsers.stop(b.id);
    await t.server.runtime.stop(machine.id, "test: stopped");
    for (const [agent, user] of [
      [a, "alice"],
      [b, "bob"],
    ] as const) {
      const { set } = await tools(agent.id);
      const again = await set.call("browser_open", { url: url("/me") });
      assert.match(again.output, new RegExp(`logged in as ${user}`), again.output);
      const read = await set.call("browser_read", { selector: "body" });
      assert.match(read.output, new RegExp(`logged in as ${user}`));
      const tabs = await set.call("browser_tabs", {});
      assert.match(tabs.output, /^\* \S+\thttp:\/\/site\.test:\d+\/me\tsite$/m, tabs.output);
    }
  });

  test("another agent of the isolated machine cannot read the profile", async () => {
    const r = await t.call("POST", `/api/agents/${b.id}/exec`, {
      command: `ls /home/${a.id}/.browser/Default 2>&1; cat /home/${a.id}/.browser/Default/Cookies >/dev/null 2>&1 || echo refused`,
      timeout_ms: 30_000,
    });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.match(r.body.stdout, /refused/);
    assert.doesNotMatch(r.body.stdout, /Cookies/);
  });

  test("a host outside the egress policy is refused and recorded", async () => {
    const { set } = await tools(a.id);
    const o = await set.call("browser_open", { url: `http://other.test:${web.port}/` });
    assert.match(o.output, /status 403|refused/, o.output);
    assert.doesNotMatch(o.output, /logged in|not logged in/);
    const rec = await t.call("GET", `/api/agents/${a.id}/egress?decision=refused`);
    assert.ok(
      rec.body.items.some((i: { host: string }) => i.host === "other.test"),
      JSON.stringify(rec.body),
    );
  });

  test("a policy forbidding browser_type on a host is enforced", async () => {
    const { set } = await tools(
      a.id,
      `${ALLOW_ALL}\n@id("no-typing-on-site") forbid(principal, action, resource == Tool::"browser_type") when { context.arguments has host && context.arguments.host == "site.test" };`,
    );
    await set.call("browser_open", { url: url("/login") });
    const typed = await set.call("browser_type", { selector: "#user", text: "mallory" });
    assert.equal(typed.record.decision, "deny", typed.output);
    assert.deepEqual(typed.record.policies, ["no-typing-on-site"]);
    assert.equal((typed.record.arguments as { host: string }).host, "site.test");
  });

  test("a screenshot is kept with the run", async () => {
    const { set, runId } = await tools(a.id);
    await set.call("browser_open", { url: url("/me") });
    const shot = await set.call("browser_screenshot", {});
    assert.match(shot.output, new RegExp(`saved screenshots/${runId}/001.png`), shot.output);
    const file = path.join(
      t.server.provider.homes.homeDir(a.machine_id, a.id),
      "screenshots",
      runId,
      "001.png",
    );
    assert.equal(fs.readFileSync(file).readUInt32BE(0), 0x89504e47);
  });

  test("a page allocating memory without end ends in a clear answer", async () => {
    const { set } = await tools(b.id);
    const o = await set.call("browser_open", { url: url("/bomb") });
    assert.match(o.output, /memory|renderer|ended|went away/, o.output);
    // the browser still answers afterwards (a new tab, or a new browser)
    const again = await set.call("browser_open", { url: url("/me") });
    assert.match(again.output, /logged in as bob/, again.output);
  });
});
