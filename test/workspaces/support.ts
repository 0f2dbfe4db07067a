// What the workspaces' tests share: a policy file with one class of each scope, a STATE_ROOT
// that holds it and a server on one, an agent of a class on its own machine, and a command run
// waited for until it ends.
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { TERMINAL_STATUSES } from "../support/agent-runs.js";
import { startTestServer, type TestServer } from "../support/server.js";

export const POLICY = `workspace_classes:
  private_scratch:
    description: Each agent gets its own working directory.
    workspace_scope: per-agent
  shared_instance:
    description: Agents on one flow instance share a directory.
    workspace_scope: per-flow-instance
`;

export async function stateWithPolicy(policy = POLICY): Promise<string> {
  const root = await mkdtemp(path.join(os.tmpdir(), "warren-ws-"));
  await writeFile(path.join(root, "policy.yaml"), policy);
  return root;
}

/** A test server on a fresh STATE_ROOT that holds `policy`; its close() removes that STATE_ROOT too. */
export async function serverWithPolicy(
  opts: Omit<NonNullable<Parameters<typeof startTestServer>[0]>, "stateRoot"> = {},
  policy = POLICY,
): Promise<TestServer> {
  const root = await stateWithPolicy(policy);
  let t: TestServer;
  try {
    t = await startTestServer({ ...opts, stateRoot: root });
  } catch (err) {
    await rm(root, { recursive: true, force: true, maxRetries: 3 });
    throw err;
  }
  return {
    ...t,
    async close() {
      try {
        await t.close();
      } finally {
        await rm(root, { recursive: true, force: true, maxRetries: 3 });
      }
    },
  };
}

/** The organisation `org`, its machine "m" and its agent "a" of the workspace class `cls`. */
export async function classAgent(
  t: TestServer,
  org: string,
  cls: string,
): Promise<{ org: { id: string }; m: { id: string }; a: any }> {
  const o = (await t.call("POST", "/api/orgs", { name: org })).body;
  const m = (await t.call("POST", "/api/machines", { org_id: o.id, name: "m" })).body;
  const a = (
    await t.call("POST", "/api/agents", { org_id: o.id, machine_id: m.id, name: "a", workspace_class: cls })
  ).body;
  return { org: o, m, a };
}

/**
 * Starts a command run (inside the flow instance when one is named) and polls it until it
 * ends: answers the refusal as it came, or the ended run (its status 200).
 */
export async function commandRun(
  t: TestServer,
  agentId: string,
  command: string,
  instanceId?: string,
): Promise<{ status: number; body: any }> {
  const r = instanceId
    ? await t.call("POST", `/api/flow-instances/${instanceId}/runs`, {
        agent_id: agentId,
        kind: "command",
        command,
      })
    : await t.call("POST", `/api/agents/${agentId}/runs`, { kind: "command", command });
  if (r.status !== 202) return r;
  const end = Date.now() + 60_000;
  for (;;) {
    const got = await t.call("GET", `/api/runs/${r.body.id}`);
    if (TERMINAL_STATUSES.includes(got.body.status)) return got;
    if (Date.now() > end) throw new Error(`run ${r.body.id} still ${got.body.status}`);
    await new Promise((res) => setTimeout(res, 50));
  }
}
