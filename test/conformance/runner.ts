// The TypeScript runner of the conformance cases (test/conformance/cases.json): each action
// through src/sdk, its result shaped as the Python runner (sdk/python/tests/conformance.py)
// shapes it, and the same expectations checked.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { isExecExit, isWarrenApiError, WarrenClient, type StreamEvent } from "../../src/sdk/index.js";

export interface Step {
  do: string;
  as?: string;
  save?: Record<string, string>;
  expect?: {
    equals?: Record<string, unknown>;
    includes?: Record<string, unknown[]>;
    at_least?: Record<string, number>;
    error?: { status: number; code: string };
  };
  [arg: string]: unknown;
}

export interface Case {
  name: string;
  steps: Step[];
}

/** What a runner is given: the server, the callers' identities, the fixture's variables. */
export interface Fixture {
  base_url: string;
  /** The trusted header's value for each caller a step may name (`owner`, `viewer`). */
  identities: Record<string, string>;
  vars: Record<string, string>;
}

export const casesPath = path.join(path.dirname(fileURLToPath(import.meta.url)), "cases.json");

export function loadCases(): Case[] {
  return (JSON.parse(readFileSync(casesPath, "utf8")) as { cases: Case[] }).cases;
}

/** `$name` in every string of `value` replaced by the variable. */
function fill(value: unknown, vars: Record<string, string>): unknown {
  if (typeof value === "string")
    return value.replace(/\$([a-z_]+)/g, (whole, name: string) => vars[name] ?? whole);
  if (Array.isArray(value)) return value.map((v) => fill(v, vars));
  if (value && typeof value === "object")
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, fill(v, vars)]));
  return value;
}

function at(result: unknown, dotted: string): unknown {
  let v: any = result;
  for (const key of dotted.split(".")) v = v?.[key];
  return v;
}

async function collect(stream: AsyncIterable<StreamEvent>, until: (e: StreamEvent) => boolean) {
  const seen: StreamEvent[] = [];
  for await (const e of stream) {
    seen.push(e);
    if (until(e)) break;
  }
  return seen;
}

const str = (v: unknown) => String(v);

/** One action through the SDK; answers its result. */
async function act(client: WarrenClient, step: Step): Promise<unknown> {
  const a = step.agent === undefined ? undefined : client.agent(str(step.agent));
  switch (step.do) {
    case "exec":
      return a!.exec(step.body as never);
    case "exec_stream": {
      const out = { stdout: "", stderr: "", exit_code: null as number | null, last_is_exit: false };
      for await (const e of a!.execStream(step.body as never)) {
        out.last_is_exit = isExecExit(e);
        if (isExecExit(e)) out.exit_code = e.exit_code;
        else out[e.stream] += e.data;
      }
      return out;
    }
    case "write_file":
      await a!.files.write(str(step.path), str(step.text));
      return null;
    case "read_file":
      return { text: await a!.files.readText(str(step.path)) };
    case "list_folder":
      return { names: (await a!.files.list(str(step.path))).entries.map((e) => e.name) };
    case "start_run":
      return a!.runs.create(step.body as never);
    case "wait_run":
      return client.runs.wait(str(step.run), { timeoutMs: 120_000 });
    case "get_run":
      return client.runs.get(str(step.run));
    case "run_events":
      return { types: (await client.runs.events(str(step.run))).items.map((e) => e.type) };
    case "run_stream": {
      const streamed = await collect(client.runs.stream(str(step.run)), () => false);
      const trace = (await client.runs.events(str(step.run))).items.map((e) => String(e.id));
      return {
        types: streamed.map((e) => e.type),
        same_ids_as_events: JSON.stringify(streamed.map((e) => e.id)) === JSON.stringify(trace),
      };
    }
    case "create_conversation":
      return a!.conversations.create(step.body as never);
    case "send_message":
      return client.conversations.send(str(step.conversation), str(step.text));
    case "follow_conversation": {
      const run = str(step.run);
      const stop = new AbortController();
      const timer = setTimeout(() => stop.abort(new Error("no end of the turn in 120 s")), 120_000);
      try {
        const events = await collect(
          client.conversations.events(str(step.conversation), { signal: stop.signal, timeoutMs: 0 }),
          (e) => e.type === "exit" && e.run_id === run,
        );
        const mine = events.filter((e) => e.run_id === run);
        const text = mine.filter((e) => e.type === "output" && (e.data as any)?.stream === "text");
        const answer = mine.find((e) => e.type === "message" && (e.data as any)?.role === "agent");
        return {
          types: mine.map((e) => e.type),
          streamed: text.map((e) => str((e.data as any).data)).join(""),
          pieces: text.length,
          answer: (answer?.data as any)?.text,
          exit_status: (await client.runs.wait(run, { timeoutMs: 120_000 })).status,
        };
      } finally {
        clearTimeout(timer);
      }
    }
    default:
      throw new Error(`no action ${step.do}`);
  }
}

/** Runs one case's steps in order, each checked against its expectations. */
export async function runCase(c: Case, fixture: Fixture, sdk: string): Promise<void> {
  const vars: Record<string, string> = { ...fixture.vars, sdk };
  const clients = new Map<string, WarrenClient>();
  const clientOf = (who: string) => {
    const email = fixture.identities[who];
    if (!email) throw new Error(`no identity ${who}`);
    if (!clients.has(who))
      clients.set(
        who,
        new WarrenClient({ baseUrl: fixture.base_url, headers: { "x-forwarded-email": email } }),
      );
    return clients.get(who)!;
  };
  for (const [i, raw] of c.steps.entries()) {
    const step = fill(raw, vars) as Step;
    const where = `${c.name}, step ${i + 1} (${step.do})`;
    const want = step.expect ?? {};
    let result: unknown;
    try {
      result = await act(clientOf(step.as ?? "owner"), step);
    } catch (err) {
      if (!want.error || !isWarrenApiError(err)) throw err;
      assert.deepEqual({ status: err.status, code: err.code }, want.error, `${where}: ${err.message}`);
      continue;
    }
    assert.equal(want.error, undefined, `${where}: expected ${JSON.stringify(want.error)}, it succeeded`);
    for (const [k, v] of Object.entries(want.equals ?? {}))
      assert.deepEqual(at(result, k), v, `${where}: ${k}`);
    for (const [k, values] of Object.entries(want.includes ?? {})) {
      const list = at(result, k);
      assert.ok(Array.isArray(list), `${where}: ${k} is not a list`);
      for (const v of values) assert.ok(list.includes(v), `${where}: ${k} lacks ${JSON.stringify(v)}`);
    }
    for (const [k, n] of Object.entries(want.at_least ?? {}))
      assert.ok(Number(at(result, k)) >= n, `${where}: ${k} is ${String(at(result, k))}, below ${n}`);
    for (const [name, p] of Object.entries(step.save ?? {})) vars[name] = str(at(result, p));
  }
}
