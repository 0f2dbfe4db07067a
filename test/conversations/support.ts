// What the conversation suites share: an agent of kind assistant on a fake model, waiting for
// a condition, and a reader of server-sent events over real HTTP.
import assert from "node:assert/strict";
import type { TestServer } from "../support/server.js";

export interface SseEvent {
  id: number;
  event: string;
  data: any;
}

/** Polls `check` until it answers something truthy; throws with `what` past `ms`. */
export async function waitFor<T>(
  what: string,
  check: () => Promise<T | null | undefined | false>,
  ms = 60_000,
): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await check();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/**
 * Reads the server-sent events of `url` until `until` says so (or the stream ends), then drops
 * the connection. `lastEventId` is sent as the Last-Event-ID header.
 */
export async function readSse(
  url: string,
  opts: { lastEventId?: number; until: (events: SseEvent[]) => boolean; ms?: number },
): Promise<{ events: SseEvent[]; contentType: string | null }> {
  const abort = new AbortController();
  const timer = setTimeout(
    () => abort.abort(new Error(`no end of the stream of ${url} in time`)),
    opts.ms ?? 60_000,
  );
  const events: SseEvent[] = [];
  try {
    const res = await fetch(url, {
      headers: {
        accept: "text/event-stream",
        ...(opts.lastEventId !== undefined ? { "last-event-id": String(opts.lastEventId) } : {}),
      },
      signal: abort.signal,
    });
    assert.equal(res.status, 200, await (res.status === 200 ? Promise.resolve("") : res.text()));
    const contentType = res.headers.get("content-type");
    const dec = new TextDecoder();
    let buf = "";
    const reader = res.body!.getReader();
    for (;;) {
      if (opts.until(events)) break;
      const { value, done } = await reader.read();
      if (done) break;
      buf += dec.decode(value, { stream: true });
      for (let at = buf.indexOf("\n\n"); at >= 0; at = buf.indexOf("\n\n")) {
        const block = buf.slice(0, at);
        buf = buf.slice(at + 2);
        const e: Partial<SseEvent> & { lines: string[] } = { lines: [] };
        for (const line of block.split("\n")) {
          if (line.startsWith("id: ")) e.id = Number(line.slice(4));
          else if (line.startsWith("event: ")) e.event = line.slice(7);
          else if (line.startsWith("data: ")) e.lines.push(line.slice(6));
        }
        if (e.id !== undefined)
          events.push({ id: e.id, event: e.event ?? "message", data: JSON.parse(e.lines.join("\n")) });
        if (opts.until(events)) break;
      }
    }
    await reader.cancel().catch(() => undefined);
    return { events, contentType };
  } finally {
    clearTimeout(timer);
    abort.abort();
  }
}

/** An agent of kind assistant whose model is the fake OpenAI-compatible server, named `model`. */
export async function assistantAgent(
  t: TestServer,
  where: { org: string; machine: string },
  name: string,
  opts: { baseUrl: string; model: string; tools?: string[]; instructions?: string },
): Promise<{ id: string }> {
  const r = await t.call("POST", "/api/agents", {
    org_id: where.org,
    machine_id: where.machine,
    name,
    kind: "assistant",
    instructions: opts.instructions ?? "",
    model: { provider: "openai-compatible", name: opts.model, base_url: opts.baseUrl },
    tools: (opts.tools ?? []).map((n) => ({ type: "builtin", name: n })),
    tool_policy: `@id("all") permit(principal, action, resource);`,
  });
  assert.equal(r.status, 201, JSON.stringify(r.body));
  return r.body;
}

/** Posts a message; answers its run id. */
export async function say(t: TestServer, conversationId: string, text: string): Promise<string> {
  const r = await t.call("POST", `/api/conversations/${conversationId}/messages`, { text });
  assert.equal(r.status, 202, JSON.stringify(r.body));
  return r.body.run_id as string;
}

const TERMINAL = ["succeeded", "failed", "timed_out", "cancelled", "lost"];

/** Waits for a run to end; answers it. */
export async function runEnded(t: TestServer, runId: string, ms = 90_000): Promise<any> {
  try {
    return await waitFor(
      `run ${runId} to end`,
      async () => {
        const r = (await t.call("GET", `/api/runs/${runId}`)).body;
        return TERMINAL.includes(r.status) ? r : null;
      },
      ms,
    );
  } catch (err) {
    const events = (await t.call("GET", `/api/runs/${runId}/events`)).body;
    throw new Error(`${(err as Error).message}: ${JSON.stringify(events).slice(0, 4000)}`);
  }
}

/** The conversation's whole stream so far, as the JSON list of its events (read through SSE with ?after=0). */
export async function allEvents(t: TestServer, conversationId: string): Promise<SseEvent[]> {
  const last = (await t.call("GET", `/api/conversations/${conversationId}`)).body.last_event_id as number;
  if (last === 0) return [];
  const { events } = await readSse(`${t.url}/api/conversations/${conversationId}/events?after=0`, {
    until: (ev) => ev.length > 0 && ev[ev.length - 1]!.id >= last,
  });
  return events;
}
