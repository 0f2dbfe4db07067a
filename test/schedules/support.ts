// Shared steps of the schedule suites: an organisation with a machine, agents on it, and
// waits on a schedule's state and its runs.
import type { TestServer } from "../support/server.js";

export const terminal = ["succeeded", "failed", "timed_out", "cancelled", "lost"];

/** Polls `probe` until `pred` holds; throws with what it saw last. */
export async function until<T>(
  probe: () => Promise<T>,
  pred: (v: T) => boolean,
  what: string,
  ms = 30_000,
): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await probe();
    if (pred(v)) return v;
    if (Date.now() > end) throw new Error(`not ${what} after ${ms} ms: ${JSON.stringify(v)}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** Resolves once the clock reads `at` (ms): the condition is the time itself. */
export const clockAt = (at: number) => new Promise<void>((r) => setTimeout(r, Math.max(0, at - Date.now())));

export async function orgWithMachine(t: TestServer, name: string) {
  const org = (await t.call("POST", "/api/orgs", { name })).body as { id: string };
  const machine = (await t.call("POST", "/api/machines", { org_id: org.id, name: "m" })).body as {
    id: string;
  };
  const agent = async (n: string) =>
    (await t.call("POST", "/api/agents", { org_id: org.id, machine_id: machine.id, name: n })).body as {
      id: string;
    };
  return { org, machine, agent };
}

/** The runs of the agent that the schedule started, oldest first. */
export async function scheduleRuns(t: TestServer, agentId: string, scheduleId: string): Promise<any[]> {
  const r = await t.call("GET", `/api/agents/${agentId}/runs?limit=500`);
  return (r.body.items as any[]).filter((x) => x.schedule_id === scheduleId).reverse();
}
