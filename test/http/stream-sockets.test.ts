// The stream budget beyond event streams, over real HTTP with a box: a preview's WebSocket, the
// terminal's and a streamed exec (NDJSON) each hold a slot; past one identity's cap each is
// refused with 429 stream.too_many and Retry-After (a WebSocket before its upgrade), while
// another member's preview WebSocket still opens; past the server's cap anyone is refused; a
// closed one gives its slot back. A WebSocket (preview or terminal) with nothing sent either
// way for WARREN_STREAM_IDLE_S is closed, and its slot given back.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import type WebSocket from "ws";
import { boxSkipReason } from "../box/fixture.js";
import { asMember, orgWithAgent } from "../support/org.js";
import { HOLDING_BOX_SERVER, previewGet } from "../support/preview.js";
import { startTestServer, type TestServer } from "../support/server.js";
import { assertTooMany, openSocket, type Opened } from "../support/sockets.js";

const OWNER = "owner@example.com";
const VIEWER = "viewer@example.com";

/** Polls `check` until it answers something truthy (never a fixed sleep). */
async function waitFor<T>(what: string, check: () => Promise<T | null | undefined | false>): Promise<T> {
  const end = Date.now() + 60_000;
  for (;;) {
    const v = await check();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** A server with an organisation (a viewer member besides the owner), an agent and its box serving a port. */
function withPreviewBox(env: Record<string, string>) {
  const ctx = {} as {
    t: TestServer;
    agent: { id: string; ports: { first: number } };
    sockets: WebSocket[];
    /** A preview WebSocket of `email` on the agent's port. */
    preview(email: string): Promise<Opened>;
    /** The terminal's WebSocket as `email`. */
    tty(email: string): Promise<Opened>;
  };
  let server: Promise<unknown> | undefined;
  const as = asMember(() => ctx.t);
  const P = () => ctx.agent.ports.first + 3;
  const session = async (email: string, path = "/") => {
    const moved = await ctx.t.inject({
      method: "GET",
      url: `/api/agents/${ctx.agent.id}/ports/${P()}${path}`,
      headers: { "x-forwarded-email": email },
    });
    assert.equal(moved.statusCode, 307, moved.body);
    const to = new URL(String(moved.headers.location));
    const first = await previewGet(ctx.t.previewPort!, to);
    return { cookie: String(first.headers["set-cookie"]).split(";")[0]!, origin: to.origin, host: to.host };
  };
  ctx.sockets = [];
  const keep = (o: Opened) => {
    if (o.ws) ctx.sockets.push(o.ws);
    return o;
  };
  ctx.preview = async (email) => {
    const s = await session(email);
    return keep(
      await openSocket(`ws://127.0.0.1:${ctx.t.previewPort}/live`, { host: s.host, cookie: s.cookie }),
    );
  };
  ctx.tty = async (email) =>
    keep(
      await openSocket(
        `${ctx.t.url!.replace(/^http/, "ws")}/api/agents/${ctx.agent.id}/cli/tty`,
        { "x-forwarded-email": email },
        false,
      ),
    );

  before(async () => {
    ctx.t = await startTestServer({ listen: true, env: { AUTH_MODE: "trusted-header", ...env } });
    const owner = as(OWNER);
    ctx.agent = (await orgWithAgent(owner, { members: [{ email: VIEWER, role: "viewer" }] })).agentBody;
    server = owner("POST", `/api/agents/${ctx.agent.id}/exec`, {
      argv: ["python3", "-c", HOLDING_BOX_SERVER, String(P())],
      timeout_ms: 600_000,
    });
    const s = await session(OWNER);
    await waitFor("the box's server", async () => {
      const r = await previewGet(ctx.t.previewPort!, new URL("/", s.origin), { cookie: s.cookie });
      return r.status === 200 && r.body === "hello";
    });
    assert.equal((await owner("POST", `/api/agents/${ctx.agent.id}/cli`)).status, 200);
  });
  after(async () => {
    for (const ws of ctx.sockets) ws.terminate();
    if (server && ctx.agent) {
      const s = await session(OWNER, "/quit").catch(() => undefined);
      if (s)
        await previewGet(ctx.t.previewPort!, new URL("/quit", s.origin), { cookie: s.cookie }).catch(
          () => {},
        );
      await server.catch(() => undefined);
    }
    await ctx.t?.close();
  });
  return ctx;
}

describe(
  "preview and terminal WebSockets and streamed execs in the stream budget",
  { skip: boxSkipReason() ?? false },
  () => {
    const ctx = withPreviewBox({ WARREN_STREAMS_PER_IDENTITY: "2", WARREN_STREAMS_MAX: "3" });
    const aborts: AbortController[] = [];
    after(() => {
      for (const a of aborts) a.abort();
    });

    /** A streamed exec of the owner's that runs until aborted: open once its first line came. */
    const ndjson = async () => {
      const abort = new AbortController();
      aborts.push(abort);
      const res = await fetch(`${ctx.t.url}/api/agents/${ctx.agent.id}/exec`, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          accept: "application/x-ndjson",
          "x-forwarded-email": OWNER,
        },
        body: JSON.stringify({ command: "echo started; sleep 300", timeout_ms: 300_000 }),
        signal: abort.signal,
      });
      if (res.status !== 200)
        return {
          status: res.status,
          retryAfter: res.headers.get("retry-after"),
          body: await res.json(),
          abort,
        };
      const reader = res.body!.getReader();
      let text = "";
      while (!text.includes("started")) {
        const { value, done } = await reader.read();
        if (done) throw new Error(`the streamed exec ended: ${text}`);
        text += new TextDecoder().decode(value);
      }
      return { status: 200, abort };
    };

    test("past one identity's cap: 429 for a preview WebSocket, the terminal and a streamed exec; another member's preview opens; the server's cap; a closed one frees its slot", async () => {
      const mine = await ctx.preview(OWNER);
      assert.equal(mine.status, 101);
      const exec = await ndjson();
      assert.equal(exec.status, 200);
      // two held: the owner's cap, whatever the kind
      assertTooMany(await ctx.preview(OWNER), /one identity may hold \(WARREN_STREAMS_PER_IDENTITY\)/);
      assertTooMany(await ctx.tty(OWNER), /one identity may hold/);
      assertTooMany(await ndjson(), /one identity may hold/);
      // another member is not held back by the owner's
      const theirs = await ctx.preview(VIEWER);
      assert.equal(theirs.status, 101, JSON.stringify(theirs.body));
      // three open: the server's cap, whoever asks
      assertTooMany(await ctx.preview(VIEWER), /the server has 3/);

      // the owner's streamed exec ends: its slot comes back, and a preview WebSocket takes it
      exec.abort.abort();
      const again = await waitFor("the exec's slot", async () => {
        const o = await ctx.preview(OWNER);
        return o.status === 101 ? o : null;
      });
      assert.equal(again.status, 101);
      // and one closed WebSocket frees its slot for the terminal
      mine.ws!.close();
      const tty = await waitFor("the WebSocket's slot", async () => {
        const o = await ctx.tty(OWNER);
        return o.status === 101 ? o : null;
      });
      assert.equal(tty.status, 101);
    });
  },
);

describe("idle WebSockets", { skip: boxSkipReason() ?? false }, () => {
  const ctx = withPreviewBox({ WARREN_STREAM_IDLE_S: "2", WARREN_STREAMS_PER_IDENTITY: "1" });

  test("a preview's and the terminal's, with nothing either way for the bound, are closed and their slot given back", async () => {
    const p = await ctx.preview(OWNER);
    assert.equal(p.status, 101, JSON.stringify(p.body));
    const opened = Date.now();
    await p.closed; // the box sends nothing after "open", nor does this side
    assert.ok(Date.now() - opened >= 1000, `closed after ${Date.now() - opened} ms`);

    // its slot is free again (one per identity here): the terminal opens, then idles out too
    const tty = await waitFor("the idle preview's slot", async () => {
      const o = await ctx.tty(OWNER);
      return o.status === 101 ? o : null;
    });
    const closed = await tty.closed!;
    assert.equal(closed.code, 1001);
    assert.match(closed.reason, /^idle: nothing sent either way for 2 s/);
    // and its slot too
    const back = await waitFor("the idle terminal's slot", async () => {
      const o = await ctx.preview(OWNER);
      return o.status === 101 ? o : null;
    });
    assert.equal(back.status, 101);
  });
});
