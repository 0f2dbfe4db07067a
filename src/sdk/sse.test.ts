// The event-stream reader: the wire format in any chunking, and a stream that resumes with
// Last-Event-ID after the connection drops (a scripted event-stream server on loopback).
import assert from "node:assert/strict";
import http from "node:http";
import { test } from "node:test";
import { onLoopback } from "../../test/support/loopback.js";
import { WarrenClient } from "./client.js";
import { isWarrenApiError } from "./errors.js";
import { sseMessages, streamEventOf, type SseMessage } from "./sse.js";

function bodyOf(chunks: readonly string[]): ReadableStream<Uint8Array> {
  const bytes = chunks.map((c) => new TextEncoder().encode(c));
  return new ReadableStream({
    start(controller) {
      for (const b of bytes) controller.enqueue(b);
      controller.close();
    },
  });
}

async function all(chunks: readonly string[]): Promise<SseMessage[]> {
  const out: SseMessage[] = [];
  for await (const m of sseMessages(bodyOf(chunks))) out.push(m);
  return out;
}

test("messages: fields, comments, multi-line data, any line ending, split anywhere", async () => {
  const text =
    ': a comment\r\nretry: 250\nid: 1\nevent: output\ndata: {"a":\ndata: 1}\n\n' +
    "id: 2\rdata: plain\r\r" +
    "event: ignored-without-data\n\n" +
    "data:no space\r\n\r\n";
  const whole = await all([text]);
  assert.deepEqual(whole, [
    { id: "1", event: "output", data: '{"a":\n1}', retry: 250 },
    { id: "2", event: "message", data: "plain", retry: undefined },
    // the id goes on until another is given
    { id: "2", event: "message", data: "no space", retry: undefined },
  ]);
  // the same bytes one character at a time (a CRLF split between chunks included)
  assert.deepEqual(await all([...text]), whole);
  // a message without its blank line at the end is not dispatched
  assert.deepEqual(await all(["data: cut"]), []);
});

test("an event: the whole event in the data, or only what it says with the message's type", () => {
  assert.deepEqual(
    streamEventOf({
      id: "7",
      event: "tool_call",
      data: JSON.stringify({
        id: 7,
        type: "tool_call",
        at: "2026-01-01T00:00:00Z",
        run_id: "run_1",
        data: { x: 1 },
      }),
      retry: undefined,
    }),
    { id: "7", type: "tool_call", at: "2026-01-01T00:00:00Z", run_id: "run_1", data: { x: 1 } },
  );
  assert.deepEqual(
    streamEventOf({ id: "8", event: "exit", data: '{"status":"succeeded"}', retry: undefined }),
    {
      id: "8",
      type: "exit",
      at: undefined,
      run_id: undefined,
      data: { status: "succeeded" },
    },
  );
  assert.throws(
    () => streamEventOf({ id: "9", event: "x", data: "not json", retry: undefined }),
    (e: unknown) => isWarrenApiError(e) && e.code === "response.invalid",
  );
});

// A run of 10 events; the server drops the connection after every third event it writes, and
// resumes after the Last-Event-ID it is given.
const TOTAL = 10;
const asked: (string | undefined)[] = [];
let mode: "drop" | "refuse" = "drop";
const server = http.createServer((req, res) => {
  const last = req.headers["last-event-id"];
  asked.push(typeof last === "string" ? last : undefined);
  if (req.headers.accept !== "text/event-stream") {
    res.writeHead(406).end();
    return;
  }
  if (mode === "refuse") {
    res.writeHead(404, { "content-type": "application/json" });
    res.end(JSON.stringify({ error: { code: "not_found", message: "no such run" } }));
    return;
  }
  res.writeHead(200, { "content-type": "text/event-stream" });
  res.write("retry: 5\n\n");
  let n = typeof last === "string" ? Number(last) : 0;
  for (let sent = 0; sent < 3 && n < TOTAL; sent++) {
    n++;
    const type = n === TOTAL - 1 ? "exit" : n === TOTAL ? "measurement" : "output";
    res.write(`id: ${n}\nevent: ${type}\ndata: ${JSON.stringify({ id: n, type, at: "t", data: { n } })}\n\n`);
  }
  if (n >= TOTAL) res.end();
  // once what was written has left, the connection drops without the stream's end
  else res.write(": bye\n", () => res.socket?.destroy());
});
const loopback = onLoopback(server);

test("a run's stream resumes after each dropped connection: every event once, in order, to its end", async () => {
  asked.length = 0;
  mode = "drop";
  const client = new WarrenClient({ baseUrl: loopback.url, retries: 0 });
  const seen: number[] = [];
  for await (const e of client.runs.stream("run_1")) seen.push((e.data as { n: number }).n);
  assert.deepEqual(
    seen,
    Array.from({ length: TOTAL }, (_, i) => i + 1),
  );
  assert.deepEqual(asked, [undefined, "3", "6", "9"]);
  // from a given event on
  const rest: string[] = [];
  for await (const e of client.runs.stream("run_1", { after: "8" })) rest.push(`${e.id}:${e.type}`);
  assert.deepEqual(rest, ["9:exit", "10:measurement"]);
});

test("an error answer ends the stream with the server's code; leaving the loop closes it", async () => {
  mode = "refuse";
  const client = new WarrenClient({ baseUrl: loopback.url, retries: 0 });
  await assert.rejects(
    async () => {
      for await (const _ of client.conversations.events("cnv_1")) assert.fail("no event was sent");
    },
    (e: unknown) => isWarrenApiError(e) && e.code === "not_found" && e.status === 404,
  );
  mode = "drop";
  let count = 0;
  for await (const _ of client.conversations.events("cnv_1")) if (++count === 2) break;
  assert.equal(count, 2);
});
