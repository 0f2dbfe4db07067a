// Watching the agent's browser and taking it over, through the API on a real box: GET
// /api/agents/:id/browser and the WebSocket of /browser/watch (a real server on a loopback port,
// a real ws client, a page served on loopback reached through the agent's egress proxy). Who
// may watch, who may type (a viewer's input dropped, an auditor and a fenced editor refused),
// frames arriving, the page getting an operator's click and text, the input recorded as theirs.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { WebSocket } from "ws";
import { boxSkipReason } from "../box/fixture.js";
import { HostChromium } from "../support/host-chromium.js";
import type { TestServer } from "../support/server.js";
import { startSite, startSiteServer, type Site } from "../support/site.js";

const skip = boxSkipReason() ?? false;
/**
 * The browser: the agent's own in its box, or with WARREN_TEST_BROWSER_HOST=1 Debian's
 * Chromium on this host put in the service's place (the stream, routes, roles and records
 * still all the server's own).
 */
const inBox = process.env.WARREN_TEST_BROWSER_HOST !== "1";
const as = (email: string) => ({ "x-forwarded-email": email });
const PAGE = `<!doctype html><html><head><title>The form</title></head><body style="margin:0">
<input id="f" style="position:absolute;left:10px;top:10px;width:300px;height:40px">
</body></html>`;

interface Watch {
  ws: WebSocket;
  frames: Buffer[];
  messages: any[];
  send(m: unknown): void;
  message(type: string, pred?: (m: any) => boolean, timeoutMs?: number): Promise<any>;
  closed: Promise<{ code: number; reason: string }>;
}
type Refusal = { status: number; body: any };

function watch(url: string, headers: Record<string, string>): Promise<Watch | Refusal> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, { headers });
    const frames: Buffer[] = [];
    const messages: any[] = [];
    const closed = new Promise<{ code: number; reason: string }>((r) =>
      ws.on("close", (code, reason) => r({ code, reason: reason.toString() })),
    );
    ws.on("message", (data, isBinary) => {
      const b = Buffer.isBuffer(data) ? data : Buffer.from(data as ArrayBuffer);
      if (isBinary) frames.push(b);
      else messages.push(JSON.parse(b.toString("utf8")));
    });
    ws.on("unexpected-response", (req, res) => {
      let body = "";
      res.on("data", (c: Buffer) => (body += c.toString()));
      res.on("end", () => {
        req.destroy();
        resolve({ status: res.statusCode ?? 0, body: JSON.parse(body || "null") });
      });
    });
    ws.on("error", reject);
    ws.on("open", () =>
      resolve({
        ws,
        frames,
        messages,
        closed,
        send: (m) => ws.send(JSON.stringify(m)),
        message: async (type, pred = () => true, timeoutMs = 60_000) => {
          const deadline = Date.now() + timeoutMs;
          for (;;) {
            const m = messages.find((x) => x.type === type && pred(x));
            if (m) return m;
            if (Date.now() > deadline)
              throw new Error(`no ${type} message within ${timeoutMs} ms: ${JSON.stringify(messages)}`);
            await new Promise((r) => setTimeout(r, 25));
          }
        },
      }),
    );
  });
}

async function until<T>(
  what: string,
  fn: () => Promise<T | undefined | false>,
  timeoutMs = 30_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe("watching the agent's browser and taking it over", { skip }, () => {
  let t: TestServer;
  let site: Site;
  let port: number;
  let org: { id: string };
  let machine: { id: string };
  let agent: { id: string };
  const sockets: Watch[] = [];
  const host = new HostChromium();
  const siteUrl = () => (inBox ? `http://site.test:${port}/` : `http://127.0.0.1:${port}/`);
  const owner = as("owner@example.com");
  const wsUrl = (id = agent.id) => `${t.url!.replace(/^http/, "ws")}/api/agents/${id}/browser/watch`;
  const open = async (email: string) => {
    const w = await watch(wsUrl(), as(email));
    if ("status" in w) assert.fail(`refused: ${w.status} ${JSON.stringify(w.body)}`);
    sockets.push(w);
    return w;
  };
  /** The value of the page's text field, read through the agent's browser itself. */
  const fieldValue = async (): Promise<string> => {
    const p = await (t.server as any).browsers.page(agent.id);
    try {
      const r = await p.send("Runtime.evaluate", {
        expression: "document.getElementById('f') ? document.getElementById('f').value : null",
        returnByValue: true,
      });
      return r.result.value;
    } finally {
      p.close();
    }
  };

  before(async () => {
    site = await startSite(PAGE);
    port = site.port;
    t = await startSiteServer(site);
    org = (await t.call("POST", "/api/orgs", { name: "watch" }, owner)).body;
    for (const role of ["viewer", "auditor"])
      await t.call("PUT", `/api/orgs/${org.id}/members`, { email: `${role}@example.com`, role }, owner);
    await t.call("PUT", `/api/orgs/${org.id}/areas/work`, { folders: ["work"] }, owner);
    const editor = { email: "editor@example.com", role: "writer", areas: ["work"] };
    assert.equal((await t.call("PUT", `/api/orgs/${org.id}/members`, editor, owner)).status, 200);
    machine = (await t.call("POST", "/api/machines", { org_id: org.id, name: "m", memory_mib: 2048 }, owner))
      .body;
    agent = (
      await t.call("POST", "/api/agents", { org_id: org.id, machine_id: machine.id, name: "a" }, owner)
    ).body;
    const set = await t.call(
      "PATCH",
      `/api/agents/${agent.id}`,
      { sandbox_policy: { network: { allow: [`site.test:${port}`] } } },
      owner,
    );
    assert.equal(set.status, 200, JSON.stringify(set.body));
    if (!inBox) {
      const b = (t.server as any).browsers;
      for (const k of ["state", "start", "page", "touch"]) b[k] = (host as any)[k].bind(host);
    }
  });
  after(async () => {
    for (const s of sockets) s.ws.terminate();
    await t?.server.runtime.stopAll("test over");
    await t?.close();
    await host.stop();
    site?.close();
  });

  test("GET /browser: stopped at first; an auditor and a fenced editor are refused; 404 for no agent", async () => {
    const r = await t.call("GET", `/api/agents/${agent.id}/browser`, undefined, owner);
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.deepEqual(r.body, { state: "stopped", url: null, tabs: [] });
    assert.equal(
      (await t.call("GET", `/api/agents/${agent.id}/browser`, undefined, as("viewer@example.com"))).status,
      200,
    );
    const auditor = await t.call(
      "GET",
      `/api/agents/${agent.id}/browser`,
      undefined,
      as("auditor@example.com"),
    );
    assert.equal(auditor.status, 403);
    assert.equal(auditor.body.error.code, "access.denied");
    const fenced = await t.call(
      "GET",
      `/api/agents/${agent.id}/browser`,
      undefined,
      as("editor@example.com"),
    );
    assert.equal(fenced.status, 403);
    assert.equal(fenced.body.error.code, "area.refused");
    const none = await t.call("GET", `/api/agents/agt_0000000000000000/browser`, undefined, owner);
    assert.equal(none.status, 404);
  });

  test("the watch socket: an auditor and a fenced editor are refused; a viewer finds no browser running", async () => {
    for (const [email, code] of [
      ["auditor@example.com", "access.denied"],
      ["editor@example.com", "area.refused"],
    ] as const) {
      const w = await watch(wsUrl(), as(email));
      assert.ok("status" in w, `${email} was let in`);
      assert.equal(w.status, 403);
      assert.equal(w.body.error.code, code);
    }
    const v = await open("viewer@example.com");
    const ended = await v.message("ended");
    assert.match(ended.reason, /no browser is running/);
    assert.equal((await v.closed).code, 1000);
    assert.equal(
      (await t.call("GET", `/api/agents/${agent.id}/browser`, undefined, owner)).body.state,
      "stopped",
    );
  });

  test("an owner's watch starts the browser: frames, the page's address, a click and text reach the page, recorded as theirs", async () => {
    const w = await open("owner@example.com");
    assert.deepEqual(await w.message("attached"), { type: "attached", mode: "write" });
    await w.message("page", (m) => m.tabs.length > 0, 120_000);
    const p = await (t.server as any).browsers.page(agent.id);
    try {
      await p.send("Page.navigate", { url: siteUrl() });
    } finally {
      p.close();
    }
    const page = await w.message("page", (m) => m.url === siteUrl());
    assert.ok(
      page.tabs.some((x: any) => x.active && x.url === page.url),
      JSON.stringify(page),
    );
    await until("a JPEG frame", async () => w.frames.some((f) => f[0] === 0xff && f[1] === 0xd8));
    const vp = await w.message("viewport");
    assert.ok(vp.width > 0 && vp.height > 0, JSON.stringify(vp));
    // a malformed input is answered, the stream goes on
    w.send({ type: "paste", text: "x" });
    await w.message("error", (m) => m.code === "request.invalid");
    w.send({ type: "click", x: 50, y: 30 });
    w.send({ type: "text", text: "hello" });
    await until("the typed text in the page", async () => (await fieldValue()) === "hello");
    w.send({ type: "key", key: "Backspace" });
    await until("the key in the page", async () => (await fieldValue()) === "hell");
    // recorded on the agent's machine as the owner's (counts, never the text)
    const ev = await until("the browser_input record", async () => {
      const m = await t.call("GET", `/api/machines/${machine.id}`, undefined, owner);
      return (m.body.box?.events ?? []).find((e: any) => e.type === "browser_input");
    });
    assert.equal(ev.data.email, "owner@example.com");
    assert.equal(ev.data.agent_id, agent.id);
    assert.equal(ev.data.characters, 5);
    assert.equal(ev.data.clicks, 1);
    assert.ok(!JSON.stringify(ev).includes("hello"), JSON.stringify(ev));
    const s = await t.call("GET", `/api/agents/${agent.id}/browser`, undefined, owner);
    assert.equal(s.body.state, "running");
    assert.equal(s.body.url, siteUrl());
    if (!inBox) assert.ok(host.touches > 0, "the operator's input restarted the idle timer");
  });

  test("a viewer watches the same browser; its clicks and keys are dropped, and it is told", async () => {
    const v = await open("viewer@example.com");
    assert.deepEqual(await v.message("attached"), { type: "attached", mode: "watch" });
    await v.message("page", (m) => m.url === siteUrl());
    v.send({ type: "click", x: 50, y: 30 });
    v.send({ type: "text", text: "evil" });
    v.send({ type: "key", key: "Backspace" });
    const dropped = await v.message("dropped");
    assert.match(dropped.reason, /watches/);
    await until("three drops", async () => v.messages.filter((m) => m.type === "dropped").length === 3);
    assert.equal(await fieldValue(), "hell");
  });

  test("the browser stopping ends the stream, with why", async () => {
    const w = await open("owner@example.com");
    await w.message("attached");
    if (inBox) (t.server as any).browsers.stop(agent.id, "stopped by the test");
    else await host.stop();
    const ended = await w.message("ended");
    assert.match(ended.reason, /stopped/);
    assert.equal((await w.closed).code, 1000);
  });
});
