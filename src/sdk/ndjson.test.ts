import assert from "node:assert/strict";
import { test } from "node:test";
import { WarrenApiError } from "./errors.js";
import { ndjson } from "./ndjson.js";

function streamOf(chunks: (string | Uint8Array)[], fail?: Error): ReadableStream<Uint8Array> {
  const enc = new TextEncoder();
  return new ReadableStream({
    start(controller) {
      for (const c of chunks) controller.enqueue(typeof c === "string" ? enc.encode(c) : c);
      if (fail) controller.error(fail);
      else controller.close();
    },
  });
}

async function all(body: ReadableStream<Uint8Array>): Promise<unknown[]> {
  const out: unknown[] = [];
  for await (const v of ndjson(body)) out.push(v);
  return out;
}

test("lines split anywhere, blank lines, CRLF and a last line without a newline", async () => {
  const bytes = new TextEncoder().encode('{"a":"é"}\n');
  const mid = bytes.indexOf(0xc3) + 1; // inside the two bytes of é
  const got = await all(
    streamOf([bytes.subarray(0, mid), bytes.subarray(mid), '\n{"b"', ":2}\r\n", "", '{"c":3}']),
  );
  assert.deepEqual(got, [{ a: "é" }, { b: 2 }, { c: 3 }]);
  assert.deepEqual(await all(streamOf([])), []);
});

test("a line that is not JSON is response.invalid", async () => {
  await assert.rejects(
    all(streamOf(['{"a":1}\nnope\n'])),
    (err: unknown) => err instanceof WarrenApiError && err.code === "response.invalid",
  );
});

test("a broken connection is a network error", async () => {
  await assert.rejects(
    all(streamOf(['{"a":1}\n'], new TypeError("terminated"))),
    (err: unknown) => err instanceof WarrenApiError && err.code === "network" && err.status === 0,
  );
});

test("leaving early cancels the stream", async () => {
  let cancelled = false;
  const body = new ReadableStream<Uint8Array>({
    pull(controller) {
      controller.enqueue(new TextEncoder().encode('{"x":1}\n'));
    },
    cancel() {
      cancelled = true;
    },
  });
  for await (const v of ndjson(body)) {
    assert.deepEqual(v, { x: 1 });
    break;
  }
  assert.equal(cancelled, true);
});
