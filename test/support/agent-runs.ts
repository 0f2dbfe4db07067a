// What the suites that run agents share: writing a file into a home through the API, and
// starting an agent run and waiting for its end with its events.
import assert from "node:assert/strict";
import type { TestServer } from "./server.js";

/** An agent's model: the scripted Anthropic server at `baseUrl`, its key the secret `key`. */
export const anthropicAt = (baseUrl: string, key = "ANTHROPIC_KEY") => ({
  provider: "anthropic",
  name: "claude-sonnet-4-5",
  base_url: baseUrl,
  key_secret: key,
});

/**
 * The body of an assistant on the scripted Anthropic server at `baseUrl` (its key the secret
 * ANTHROPIC_KEY), given run_command and a policy that permits everything.
 */
export const scriptedAssistant = (baseUrl: string) => ({
  kind: "assistant",
  model: anthropicAt(baseUrl),
  tools: [{ type: "builtin", name: "run_command" }],
  tool_policy: `permit(principal, action, resource);`,
});

/** A tool policy that permits reading files and nothing else. */
export const ALLOW_READS = '@id("reads") permit(principal, action, resource == Tool::"read_file");';

/**
 * The home of an agent that answers from its notes, written by `put`: notes.txt holds "tea at
 * five", and the scripted model's turns.json reads it first, then answers `answers`, one a turn.
 */
export async function putNotesHome(
  put: (p: string, data: string) => Promise<unknown>,
  answers: string[],
): Promise<void> {
  const turns = [
    { tool_calls: [{ name: "read_file", input: { path: "notes.txt" } }] },
    ...answers.map((text) => ({ text })),
  ];
  await put("turns.json", JSON.stringify(turns));
  await put("notes.txt", "tea at five");
}

export const TERMINAL_STATUSES = ["succeeded", "failed", "timed_out", "cancelled", "lost"];

export interface TraceEvent {
  type: string;
  data: any;
}

/**
 * PUT a file into the agent's home by the files API (as the person `as`, by the trusted
 * header, when named); fails the test unless 204.
 */
export async function putHomeFile(
  t: TestServer,
  agentId: string,
  p: string,
  data: string,
  as?: string,
): Promise<void> {
  const r = await t.inject({
    method: "PUT",
    url: `/api/agents/${agentId}/files/${p}`,
    payload: data,
    headers: { "content-type": "application/octet-stream", ...(as ? { "x-forwarded-email": as } : {}) },
  });
  assert.equal(r.statusCode, 204, r.body);
}

/**
 * Starts `{kind: "agent", input}` and polls until the run ends; answers the run and its
 * events. Past `timeoutMs` it throws with the run's status and the start of its events.
 */
export async function runAgent(
  t: TestServer,
  agentId: string,
  input: string,
  opts: { timeoutMs?: number; pollMs?: number } = {},
): Promise<{ run: any; events: TraceEvent[] }> {
  const r = await t.call("POST", `/api/agents/${agentId}/runs`, { kind: "agent", input });
  assert.equal(r.status, 202, JSON.stringify(r.body));
  const end = Date.now() + (opts.timeoutMs ?? 60_000);
  const eventsOf = async (): Promise<TraceEvent[]> =>
    (await t.call("GET", `/api/runs/${r.body.id}/events`)).body.items as TraceEvent[];
  for (;;) {
    const run = (await t.call("GET", `/api/runs/${r.body.id}`)).body;
    if (TERMINAL_STATUSES.includes(run.status)) return { run, events: await eventsOf() };
    if (Date.now() > end)
      throw new Error(
        `run ${r.body.id} still ${run.status}: ${JSON.stringify(await eventsOf()).slice(0, 6000)}`,
      );
    await new Promise((res) => setTimeout(res, opts.pollMs ?? 50));
  }
}

/** The data of the events of one type, in order. */
export const eventsOfType = (events: TraceEvent[], type: string): any[] =>
  events.filter((e) => e.type === type).map((e) => e.data);
