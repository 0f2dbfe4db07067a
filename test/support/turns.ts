// A conversation's turn as the suites that fence members take it: a message sent as one person,
// its run waited for and read, with its events, as another (the owner, who sees every run).
import assert from "node:assert/strict";
import { waitFor } from "../conversations/support.js";
import type { Call } from "./org.js";

/**
 * Sends `text` to the conversation as `as` (asserts 202), waits as `reader` until its run has
 * left queued and running (`ms` at the most), and answers the run and its events.
 */
export async function sendTurn(
  as: Call,
  reader: Call,
  conversation: string,
  text: string,
  ms?: number,
): Promise<{ run: any; events: { type: string; data: any }[] }> {
  const m = await as("POST", `/api/conversations/${conversation}/messages`, { text });
  assert.equal(m.status, 202, JSON.stringify(m.body));
  const run = await waitFor(
    `run ${m.body.run_id}`,
    async () => {
      const r = (await reader("GET", `/api/runs/${m.body.run_id}`)).body;
      return ["running", "queued"].includes(r.status) ? null : r;
    },
    ms,
  );
  const events = (await reader("GET", `/api/runs/${m.body.run_id}/events`)).body.items;
  return { run, events };
}
