// What the stream-budget suites share: opening a WebSocket that may be refused before its
// upgrade, and the 429 stream.too_many answer such a refusal must be.
import assert from "node:assert/strict";
import WebSocket from "ws";

export interface Opened {
  ws?: WebSocket;
  closed?: Promise<{ code: number; reason: string }>;
  status: number;
  retryAfter?: string | undefined;
  body?: any;
}

/**
 * Opens a WebSocket: open (once the far side said something when `said`, else at the
 * upgrade), or the refused upgrade's status, Retry-After and JSON answer.
 */
export function openSocket(url: string, headers: Record<string, string>, said = true): Promise<Opened> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, { headers });
    const closed = new Promise<{ code: number; reason: string }>((r) =>
      ws.once("close", (code, reason) => r({ code, reason: reason.toString() })),
    );
    ws.once("unexpected-response", (req, res) => {
      let body = "";
      res.on("data", (c: Buffer) => (body += c.toString()));
      res.on("end", () => {
        req.destroy();
        resolve({
          status: res.statusCode ?? 0,
          retryAfter: res.headers["retry-after"],
          body: JSON.parse(body),
        });
      });
    });
    if (said) ws.once("message", () => resolve({ ws, closed, status: 101 }));
    else ws.once("open", () => resolve({ ws, closed, status: 101 }));
    ws.once("error", reject);
  });
}

/** A refusal past a stream cap: 429 stream.too_many saying which cap, with a Retry-After in seconds. */
export const assertTooMany = (
  r: { status: number; retryAfter?: string | null | undefined; body?: any },
  about: RegExp,
) => {
  assert.equal(r.status, 429, JSON.stringify(r.body));
  assert.equal(r.body?.error?.code, "stream.too_many");
  assert.match(r.body.error.message, about);
  assert.ok(
    r.retryAfter && /^\d+$/.test(r.retryAfter) && Number(r.retryAfter) > 0,
    `Retry-After: ${r.retryAfter}`,
  );
};
