// The client's defaults for a network that fails: retries with backoff for idempotent calls
// after a connection error or a 503, never for others; a timeout on the wait for an answer.
import assert from "node:assert/strict";
import http from "node:http";
import { test } from "node:test";
import { onLoopback } from "../../test/support/loopback.js";
import { WarrenClient } from "./client.js";
import { isWarrenApiError } from "./errors.js";
import { backoffMs } from "./transport.js";

type Handler = (req: http.IncomingMessage, res: http.ServerResponse) => void;
let handler: Handler = (_req, res) => res.end();
let hits: string[] = [];
const server = http.createServer((req, res) => {
  hits.push(`${req.method} ${req.url}`);
  handler(req, res);
});
const loopback = onLoopback(server);

const envelope = (res: http.ServerResponse, status: number, code: string) => {
  res.writeHead(status, { "content-type": "application/json", "retry-after": "0" });
  res.end(JSON.stringify({ error: { code, message: `${code} here` } }));
};

test("an idempotent call is tried again after a 503 and succeeds", async () => {
  hits = [];
  handler = (_req, res) => {
    if (hits.length < 3) return envelope(res, 503, "box.unavailable");
    res.writeHead(200, { "content-type": "application/json" });
    res.end(JSON.stringify({ items: [] }));
  };
  const c = new WarrenClient({ baseUrl: loopback.url, retries: 2 });
  assert.deepEqual(await c.orgs.list(), { items: [] });
  assert.equal(hits.length, 3);
});

test("retries run out: the last answer's error", async () => {
  hits = [];
  handler = (_req, res) => envelope(res, 503, "box.unavailable");
  const c = new WarrenClient({ baseUrl: loopback.url, retries: 1 });
  await assert.rejects(c.machines.get("mch_aaaaaaaaaaaaaaaa"), (e) => {
    assert.ok(isWarrenApiError(e));
    assert.equal(e.code, "box.unavailable");
    assert.equal(e.status, 503);
    return true;
  });
  assert.equal(hits.length, 2);
});

test("a POST is never tried twice", async () => {
  hits = [];
  handler = (_req, res) => envelope(res, 503, "box.unavailable");
  const c = new WarrenClient({ baseUrl: loopback.url, retries: 3 });
  await assert.rejects(
    c.orgs.create({ name: "x" }),
    (e) => isWarrenApiError(e) && e.code === "box.unavailable",
  );
  assert.equal(hits.length, 1);
  hits = [];
  handler = (req) => req.socket.destroy();
  await assert.rejects(c.orgs.create({ name: "x" }), (e) => isWarrenApiError(e) && e.code === "network");
  assert.equal(hits.length, 1);
});

test("a connection dropped before the answer is tried again, then reported as network", async () => {
  hits = [];
  handler = (req) => req.socket.destroy();
  const c = new WarrenClient({ baseUrl: loopback.url, retries: 2 });
  await assert.rejects(c.orgs.list(), (e) => isWarrenApiError(e) && e.code === "network");
  assert.equal(hits.length, 3);
});

test("no answer within the timeout is a timeout error, not a hang", async () => {
  hits = [];
  handler = () => {}; // never answers
  const c = new WarrenClient({ baseUrl: loopback.url, timeoutMs: 150, retries: 2 });
  const started = Date.now();
  await assert.rejects(c.orgs.list(), (e) => isWarrenApiError(e) && e.code === "timeout" && e.status === 0);
  assert.ok(Date.now() - started < 5000);
  assert.equal(hits.length, 1, "a timed-out call is not tried again");
  // a call's own timeout wins over the client's
  await assert.rejects(
    c.orgs.list({ timeoutMs: 50 }),
    (e) => isWarrenApiError(e) && /within 50 ms/.test(e.message),
  );
  server.closeAllConnections();
});

test("client options are checked", () => {
  assert.throws(() => new WarrenClient({ baseUrl: loopback.url, timeoutMs: -1 }), /timeoutMs/);
  assert.throws(() => new WarrenClient({ baseUrl: loopback.url, retries: Number.NaN }), /retries/);
});

test("backoff grows, is capped, and follows Retry-After", () => {
  const mid = () => 0.5;
  assert.equal(backoffMs(1, null, mid), 188);
  assert.ok(backoffMs(2, null, mid) > backoffMs(1, null, mid));
  assert.ok(backoffMs(20, null, () => 1) <= 4000);
  assert.equal(backoffMs(1, "2"), 2000);
  assert.equal(backoffMs(1, "600"), 10_000);
});
