// The stream budget over real HTTP: event streams and WebSockets past the cap of one identity,
// or of the server, are refused with 429 stream.too_many and Retry-After while another
// member's stream still opens and hears its events; a closed stream gives its slot back; an
// event stream with no event for WARREN_STREAM_IDLE_S is closed, and taken up again with
// Last-Event-ID it misses nothing and repeats nothing.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { waitFor } from "../conversations/support.js";
import { startTestServer, type TestServer } from "../support/server.js";
import { assertTooMany, openSocket } from "../support/sockets.js";

interface Event {
  id: number;
  event: string;
  data: any;
}

interface Stream {
  status: number;
  retryAfter: string | null;
  body: any;
  events: Event[];
  /** Everything read so far, comments included. */
  text(): string;
  /** Reads until `ok` says so; throws if the stream ends first or nothing comes in time. */
  until(what: string, ok: (s: Stream) => boolean, ms?: number): Promise<void>;
  /** Resolves once the server ended the stream. */
  ended: Promise<void>;
  close(): void;
}

/** Opens an event stream as `email`; a refusal resolves with its status and body. */
async function openStream(url: string, email: string, lastEventId?: number): Promise<Stream> {
  const abort = new AbortController();
  const res = await fetch(url, {
    headers: {
      accept: "text/event-stream",
      "x-forwarded-email": email,
      ...(lastEventId !== undefined ? { "last-event-id": String(lastEventId) } : {}),
    },
    signal: abort.signal,
  });
  const events: Event[] = [];
  let raw = "";
  let buf = "";
  let done = false;
  const waiters = new Set<() => void>();
  const stream: Stream = {
    status: res.status,
    retryAfter: res.headers.get("retry-after"),
    body: undefined,
    events,
    text: () => raw,
    until: (what, ok, ms = 30_000) =>
      new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`timed out waiting for ${what}; read: ${raw}`));
        }, ms);
        const check = () => {
          if (ok(stream)) {
            waiters.delete(check);
            clearTimeout(timer);
            resolve();
          } else if (done) {
            waiters.delete(check);
            clearTimeout(timer);
            reject(new Error(`the stream ended before ${what}; read: ${raw}`));
          }
        };
        waiters.add(check);
        check();
      }),
    ended: Promise.resolve(),
    close: () => abort.abort(),
  };
  if (res.status !== 200) {
    stream.body = await res.json();
    return stream;
  }
  const reader = res.body!.getReader();
  const dec = new TextDecoder();
  stream.ended = (async () => {
    try {
      for (;;) {
        const { value, done: end } = await reader.read();
        if (end) break;
        const chunk = dec.decode(value, { stream: true });
        raw += chunk;
        buf += chunk;
        for (let at = buf.indexOf("\n\n"); at >= 0; at = buf.indexOf("\n\n")) {
          const block = buf.slice(0, at);
          buf = buf.slice(at + 2);
          let id: number | undefined;
          let event = "message";
          const data: string[] = [];
          for (const line of block.split("\n")) {
            if (line.startsWith("id: ")) id = Number(line.slice(4));
            else if (line.startsWith("event: ")) event = line.slice(7);
            else if (line.startsWith("data: ")) data.push(line.slice(6));
          }
          if (id !== undefined) events.push({ id, event, data: JSON.parse(data.join("\n")) });
        }
        for (const w of [...waiters]) w();
      }
    } catch {
      // dropped by this side
    } finally {
      done = true;
      for (const w of [...waiters]) w();
    }
  })();
  // the server has sent its first line once the slot is held
  await stream.until("the stream's first line", (s) => s.text().startsWith("retry:"));
  return stream;
}

const A = "alice@example.com";
const B = "bob@example.com";

/** An organisation of `email`'s with an assistant agent and a conversation on it. */
async function conversationOf(
  t: TestServer,
  email: string,
): Promise<{ agent: string; conversation: string }> {
  const as = { "x-forwarded-email": email };
  const org = await t.call("POST", "/api/orgs", { name: `org-${email.split("@")[0]}` }, as);
  assert.equal(org.status, 201, JSON.stringify(org.body));
  const machine = await t.call("POST", "/api/machines", { org_id: org.body.id, name: "m" }, as);
  assert.equal(machine.status, 201, JSON.stringify(machine.body));
  const agent = await t.call(
    "POST",
    "/api/agents",
    {
      org_id: org.body.id,
      machine_id: machine.body.id,
      name: "talker",
      kind: "assistant",
      instructions: "",
      // never reached: the turns of this suite may fail, their messages are stored first
      model: { provider: "openai-compatible", name: "none", base_url: "http://127.0.0.1:9/v1" },
      tools: [],
      tool_policy: `@id("all") permit(principal, action, resource);`,
    },
    as,
  );
  assert.equal(agent.status, 201, JSON.stringify(agent.body));
  const c = await t.call("POST", `/api/agents/${agent.body.id}/conversations`, {}, as);
  assert.equal(c.status, 201, JSON.stringify(c.body));
  return { agent: agent.body.id, conversation: c.body.id };
}

async function say(t: TestServer, email: string, conversation: string, text: string): Promise<void> {
  const r = await t.call(
    "POST",
    `/api/conversations/${conversation}/messages`,
    { text },
    {
      "x-forwarded-email": email,
    },
  );
  assert.equal(r.status, 202, JSON.stringify(r.body));
}

describe("the stream budget", () => {
  let t: TestServer;
  let a: { agent: string; conversation: string };
  let b: { agent: string; conversation: string };
  const open: Stream[] = [];
  const events = (c: string) => `${t.url}/api/conversations/${c}/events`;
  const stream = async (c: string, email: string, lastEventId?: number) => {
    const s = await openStream(events(c), email, lastEventId);
    open.push(s);
    return s;
  };

  before(async () => {
    t = await startTestServer({
      listen: true,
      env: { AUTH_MODE: "trusted-header", WARREN_STREAMS_PER_IDENTITY: "2", WARREN_STREAMS_MAX: "3" },
    });
    a = await conversationOf(t, A);
    b = await conversationOf(t, B);
  });
  after(async () => {
    for (const s of open) s.close();
    await t?.close();
  });

  test("one identity past its cap: 429 with Retry-After, while another's stream opens and hears its events; the server's cap likewise; a closed stream frees its slot", async () => {
    const a1 = await stream(a.conversation, A);
    const a2 = await stream(a.conversation, A);
    assert.equal(a1.status, 200);
    assert.equal(a2.status, 200);
    assertTooMany(await stream(a.conversation, A), /one identity may hold \(WARREN_STREAMS_PER_IDENTITY\)/);

    // another member is not held back by the first one's streams
    const b1 = await stream(b.conversation, B);
    assert.equal(b1.status, 200);
    await say(t, B, b.conversation, "hello from bob");
    await b1.until("bob's message", (s) =>
      s.events.some((e) => e.event === "message" && e.data.data.text === "hello from bob"),
    );

    // three open: the server's cap, whoever asks
    assertTooMany(await stream(b.conversation, B), /the server has 3/);

    // a WebSocket draws on the same budget: refused before it is accepted, past either cap
    const tty = (agent: string) => `${t.url!.replace(/^http/, "ws")}/api/agents/${agent}/cli/tty`;
    assertTooMany(await openSocket(tty(a.agent), { "x-forwarded-email": A }, false), /one identity may hold/);
    assertTooMany(await openSocket(tty(b.agent), { "x-forwarded-email": B }, false), /the server has 3/);

    // one of alice's closed: its slot comes back (once the server has seen the close)
    a1.close();
    const again = await waitFor("a slot freed by the closed stream", async () => {
      const s = await stream(a.conversation, A);
      return s.status === 200 ? s : null;
    });
    assert.equal(again.status, 200);
    // and the other streams go on
    await say(t, A, a.conversation, "hello from alice");
    for (const s of [a2, again])
      await s.until("alice's message", (x) =>
        x.events.some((e) => e.event === "message" && e.data.data.text === "hello from alice"),
      );
  });
});

describe("idle event streams", () => {
  let t: TestServer;
  let a: { agent: string; conversation: string };
  const open: Stream[] = [];

  before(async () => {
    t = await startTestServer({
      listen: true,
      env: { AUTH_MODE: "trusted-header", WARREN_STREAM_IDLE_S: "1", WARREN_STREAMS_PER_IDENTITY: "1" },
    });
    a = await conversationOf(t, A);
  });
  after(async () => {
    for (const s of open) s.close();
    await t?.close();
  });

  test("closed after the idle bound with a last comment, its slot given back; Last-Event-ID takes it up with nothing lost or doubled", async () => {
    const url = `${t.url}/api/conversations/${a.conversation}/events`;
    const first = await openStream(url, A);
    open.push(first);
    assert.equal(first.status, 200);
    await say(t, A, a.conversation, "one");
    await first.until("the first message", (s) => s.events.some((e) => e.event === "message"));
    // nothing more for a second: the server closes it, saying why
    await first.ended;
    assert.match(
      first.text(),
      /\n: idle: no event for 1 s, closing; take it up again with Last-Event-ID\n\n$/,
    );
    const seen = first.events.map((e) => e.id);
    const last = seen[seen.length - 1]!;

    // its slot is free again (one per identity here), and the stream resumes after the last id
    await say(t, A, a.conversation, "two");
    const resumed = await waitFor("the slot of the idle stream", async () => {
      const s = await openStream(url, A, last);
      open.push(s);
      return s.status === 200 ? s : null;
    });
    await resumed.until("the second message", (s) =>
      s.events.some((e) => e.event === "message" && e.data.data.text === "two"),
    );
    const ids = resumed.events.map((e) => e.id);
    assert.ok(
      ids.every((id) => id > last),
      `resumed after ${last}: ${ids.join(",")}`,
    );
    // everything the conversation holds, once and in order, across the two streams
    await resumed.ended;
    const whole = await openStream(`${url}?after=0`, A);
    open.push(whole);
    await whole.ended;
    const again = [...seen, ...resumed.events.map((e) => e.id)];
    assert.deepEqual(
      again,
      whole.events.map((e) => e.id).filter((id) => id <= again[again.length - 1]!),
    );
  });
});
