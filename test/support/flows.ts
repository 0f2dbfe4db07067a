// What the flow suites share: a command run of an agent inside a flow instance, waited for.
import assert from "node:assert/strict";
import { TERMINAL_STATUSES } from "./agent-runs.js";
import type { Call } from "./org.js";

/** Starts a command run of the agent in the instance (asserts 202) and answers the run once it has ended. */
export async function flowRun(
  call: Call,
  agentId: string,
  command: string,
  instanceId: string,
): Promise<any> {
  const r = await call("POST", `/api/flow-instances/${instanceId}/runs`, {
    agent_id: agentId,
    kind: "command",
    command,
  });
  assert.equal(r.status, 202, JSON.stringify(r.body));
  const end = Date.now() + 120_000;
  for (;;) {
    const got = (await call("GET", `/api/runs/${r.body.id}`)).body;
    if (TERMINAL_STATUSES.includes(got.status)) return got;
    if (Date.now() > end) throw new Error(`run ${r.body.id} still ${got.status}`);
    await new Promise((res) => setTimeout(res, 50));
  }
}
