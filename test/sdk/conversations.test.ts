// The SDK's conversations against a real server (PGlite, real boxes, the scripted model), its
// event streams read through a TCP relay on loopback that the test cuts in the middle of a
// turn: the stream opens again with Last-Event-ID and gives every event once, in order.
import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { WarrenClient, isWarrenApiError, type StreamEvent } from "../../src/sdk/index.js";
import { ALLOW_READS, putHomeFile, putNotesHome } from "../support/agent-runs.js";
import { startTestServer, type TestServer } from "../support/server.js";

/**
 * A TCP relay to `target()` (asked at each connection: a restarted server listens elsewhere):
 * every connection's request head is kept; `cut()` drops them all.
 */
async function relay(target: () => URL): Promise<{
  url: string;
  heads: string[];
  cut(): void;
  close(): Promise<void>;
}> {
  const open = new Set<net.Socket>();
  const heads: string[] = [];
  const server = net.createServer((inbound) => {
    const to = target();
    const outbound = net.connect(Number(to.port), to.hostname);
    open.add(inbound).add(outbound);
    let first = true;
    inbound.on("data", (chunk: Buffer) => {
      if (first) heads.push(chunk.toString("latin1").split("\r\n\r\n")[0] ?? "");
      first = false;
      outbound.write(chunk);
    });
    outbound.pipe(inbound);
    const drop = () => {
      inbound.destroy();
      outbound.destroy();
      open.delete(inbound);
      open.delete(outbound);
    };
    inbound.on("error", drop).on("close", drop);
    outbound.on("error", drop).on("close", drop);
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return {
    url: `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`,
    heads,
    cut: () => {
      for (const s of open) s.destroy();
      open.clear();
    },
    close: () =>
      new Promise<void>((r) => {
        for (const s of open) s.destroy();
        server.close(() => r());
      }),
  };
}

let t: TestServer;
let agentId = "";
let direct: WarrenClient;
let relayed: Awaited<ReturnType<typeof relay>>;
let viaRelay: WarrenClient;

let stateRoot = "";

before(async () => {
  stateRoot = await mkdtemp(path.join(os.tmpdir(), "warren-sdk-conv-"));
  t = await startTestServer({ listen: true, stateRoot });
  direct = new WarrenClient({ baseUrl: t.url ?? "" });
  relayed = await relay(() => new URL(t.url ?? ""));
  viaRelay = new WarrenClient({ baseUrl: relayed.url, retries: 0 });
  const org = await direct.orgs.create({ name: "sdk-conv" });
  const machine = await direct.machines.create({ org_id: org.id, name: "sdk-conv-m" });
  const agent = await direct.agents.create({
    org_id: org.id,
    machine_id: machine.id,
    name: "helper",
    kind: "assistant",
    model: { provider: "script", name: "turns.json" },
    tools: [{ type: "builtin", name: "read_file" }],
    tool_policy: ALLOW_READS,
  });
  agentId = agent.id;
  await putNotesHome(
    (p, data) => putHomeFile(t, agentId, p, data),
    ["The notes say: tea at five, and the kettle is in the second cupboard from the left.", "Five o'clock."],
  );
});

after(async () => {
  try {
    await relayed?.close();
  } finally {
    try {
      await t?.close();
    } finally {
      if (stateRoot) await rm(stateRoot, { recursive: true, force: true, maxRetries: 3 });
    }
  }
});

/** Reads `stream` until `until` says stop; answers what it gave. */
async function collect(
  stream: AsyncIterable<StreamEvent>,
  until: (e: StreamEvent, seen: StreamEvent[]) => boolean,
  onEach: (e: StreamEvent, seen: StreamEvent[]) => void = () => {},
): Promise<StreamEvent[]> {
  const seen: StreamEvent[] = [];
  for await (const e of stream) {
    seen.push(e);
    onEach(e, seen);
    if (until(e, seen)) break;
  }
  return seen;
}

const ids = (events: readonly StreamEvent[]) => events.map((e) => Number(e.id));

describe("conversations through the SDK", { concurrency: false }, () => {
  let conversationId = "";

  test("a conversation's stream, cut in the middle of each turn, gives every event once and in order", async () => {
    const agent = direct.agent(agentId);
    const c = await agent.conversations.create({ title: "tea" });
    conversationId = c.id;
    assert.equal(c.status, "open");
    assert.equal((await agent.conversations.list()).items[0]?.id, c.id);

    const runs: string[] = [];
    const stop = new AbortController();
    const stream = viaRelay.conversations.events(c.id, { signal: stop.signal, timeoutMs: 0 });
    const reading = collect(
      stream,
      (e) => e.type === "exit" && e.run_id === runs[1],
      // the connection is cut at the first tool call and at the second turn's start
      (e) => {
        if (e.type === "tool_call" || (e.type === "started" && e.run_id === runs[1])) relayed.cut();
      },
    );
    const first = await agent.conversations.send(c.id, "What do the notes say?");
    assert.equal(first.message.role, "user");
    assert.equal(first.message.text, "What do the notes say?");
    runs.push(first.run_id);
    // queued behind the first turn
    const second = await agent.conversations.send(c.id, "When?");
    runs.push(second.run_id);
    const live = await reading;
    stop.abort();

    // the same events read again in one go, straight from the server
    const all = await collect(
      direct.conversations.events(c.id),
      (e) => Number(e.id) >= Number(live.at(-1)?.id),
    );
    assert.deepEqual(ids(live), ids(all));
    assert.deepEqual(
      ids(live),
      [...new Set(ids(live))].sort((a, b) => a - b),
    );
    assert.deepEqual(
      live.map((e) => `${e.id}:${e.type}`),
      all.map((e) => `${e.id}:${e.type}`),
    );
    const resumed = relayed.heads.filter((h) => /^last-event-id: \d+$/im.test(h));
    assert.ok(
      resumed.length >= 2,
      `the stream opened again with Last-Event-ID: ${relayed.heads.join("\n---\n")}`,
    );

    const answers = live.filter((e) => e.type === "message" && (e.data as { role: string }).role === "agent");
    assert.deepEqual(
      answers.map((e) => (e.data as { text: string }).text),
      [
        "The notes say: tea at five, and the kettle is in the second cupboard from the left.",
        "Five o'clock.",
      ],
    );
    assert.ok(live.some((e) => e.type === "tool_call" && e.run_id === runs[0]));

    // in the order they were stored: the queued message came before the first answer
    const thread = await agent.conversations.messages(c.id);
    assert.deepEqual(
      thread.items.map((m) => [m.role, m.text.slice(0, 16), m.run_id]),
      [
        ["user", "What do the note", runs[0]],
        ["user", "When?", runs[1]],
        ["agent", "The notes say: t", runs[0]],
        ["agent", "Five o'clock.", runs[1]],
      ],
    );
  });

  test("a run's stream, cut in the middle, ends after the run with the same events as its trace", async () => {
    const c = await direct.conversations.get(conversationId);
    const turns = (await direct.conversations.messages(c.id)).items.filter((m) => m.role === "user");
    const runId = turns[0]?.run_id ?? "";
    let cuts = 0;
    const streamed = await collect(
      viaRelay.runs.stream(runId),
      () => false,
      () => {
        if (cuts++ < 2) relayed.cut();
      },
    );
    const trace = await direct.runs.events(runId);
    assert.deepEqual(
      ids(streamed),
      trace.items.map((e) => e.id),
    );
    assert.ok(streamed.some((e) => e.type === "exit"));
  });

  test("close: the conversation says so and a new message is conversation.closed", async () => {
    const closed = await direct.agent(agentId).conversations.close(conversationId);
    assert.equal(closed.status, "closed");
    await assert.rejects(direct.conversations.send(conversationId, "Hello?"), (e: unknown) => {
      assert.ok(isWarrenApiError(e));
      assert.equal(e.code, "conversation.closed");
      assert.equal(e.status, 409);
      return true;
    });
  });

  test("personas: create, list, start a conversation as one, delete", async () => {
    const personas = direct.agent(agentId).personas;
    const p = await personas.create({ name: "reader", instructions: "Only read.", tools: ["read_file"] });
    assert.equal(p.name, "reader");
    assert.deepEqual(
      (await personas.list()).items.map((x) => x.id),
      [p.id],
    );
    const c = await direct.agent(agentId).conversations.create({ persona_id: p.id });
    assert.equal(c.persona_id, p.id);
    await direct.conversations.close(c.id);
    await personas.delete(p.id);
    assert.deepEqual((await personas.list()).items, []);
  });

  test("a conversation's stream goes on across a restart of the server: nothing lost or given twice", async () => {
    const c = await direct.agent(agentId).conversations.create({ title: "restart" });
    const runs: string[] = [];
    let restarted = false;
    const stop = new AbortController();
    const reading = collect(
      viaRelay.conversations.events(c.id, { signal: stop.signal, timeoutMs: 0 }),
      (e) => restarted && e.type === "exit" && e.run_id === runs[1],
    );
    runs.push((await direct.conversations.send(c.id, "What do the notes say?")).run_id);
    await direct.runs.wait(runs[0] ?? "", { timeoutMs: 60_000 });
    // the server stops (its streams end with it) and another starts on the same state
    await t.close();
    t = await startTestServer({ listen: true, stateRoot });
    direct = new WarrenClient({ baseUrl: t.url ?? "" });
    restarted = true;
    runs.push((await direct.conversations.send(c.id, "When?")).run_id);
    const live = await reading;
    stop.abort();
    const all = await collect(
      direct.conversations.events(c.id),
      (e) => Number(e.id) >= Number(live.at(-1)?.id),
    );
    assert.deepEqual(
      live.map((e) => `${e.id}:${e.type}`),
      all.map((e) => `${e.id}:${e.type}`),
    );
    assert.deepEqual(
      ids(live),
      [...new Set(ids(live))].sort((a, b) => a - b),
    );
    assert.deepEqual(
      live
        .filter((e) => e.type === "message" && (e.data as { role: string }).role === "agent")
        .map((e) => e.run_id),
      runs,
    );
  });
});
