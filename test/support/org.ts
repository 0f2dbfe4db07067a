// The set-up many suites share: requests as a person (AUTH_MODE=trusted-header), and an
// organisation with its machine "m" and an assistant on the scripted model, made through the
// API as the owner; optionally the organisation's areas and members.
import assert from "node:assert/strict";
import type { TestServer } from "./server.js";

/** A JSON request as one caller (the owner's, or TestServer.call itself). */
export type Call = (method: string, url: string, body?: unknown) => Promise<{ status: number; body: any }>;

/**
 * `as(email)` calls as that person (AUTH_MODE=trusted-header). The server is read at each
 * call: suites start it in before().
 */
export const asMember =
  (server: () => TestServer) =>
  (email: string): Call =>
  (method, url, body) =>
    server().call(method, url, body, { "x-forwarded-email": email });

export interface OrgSetUp {
  /** The organisation's name (default "acme"). */
  org?: string;
  /** The agent's name (default "a"). */
  name?: string;
  /** The scripted model's file in the agent's home (default "turns.json"). */
  script?: string;
  /** Builtin tools the agent holds, every call permitted by its policy (default none). */
  tools?: string[];
  /** Areas to define once the agent is made: name → folders. */
  areas?: Record<string, string[]>;
  /** Members to add after the areas, each with its role and the areas it holds. */
  members?: { email: string; role: string; areas?: string[] }[];
}

/** Makes the organisation, the machine "m" and the scripted agent; answers their ids and the agent as created. */
export async function orgWithAgent(
  call: Call,
  o: OrgSetUp = {},
): Promise<{ org: string; machine: string; agent: string; agentBody: any }> {
  const org = (await call("POST", "/api/orgs", { name: o.org ?? "acme" })).body.id as string;
  const machine = (await call("POST", "/api/machines", { org_id: org, name: "m" })).body.id as string;
  const a = await call("POST", "/api/agents", {
    org_id: org,
    machine_id: machine,
    name: o.name ?? "a",
    kind: "assistant",
    model: { provider: "script", name: o.script ?? "turns.json" },
    ...(o.tools
      ? {
          tools: o.tools.map((name) => ({ type: "builtin", name })),
          tool_policy: `@id("all") permit(principal, action, resource);`,
        }
      : {}),
  });
  assert.equal(a.status, 201, JSON.stringify(a.body));
  for (const [name, folders] of Object.entries(o.areas ?? {}))
    assert.equal((await call("PUT", `/api/orgs/${org}/areas/${name}`, { folders })).status, 200);
  for (const member of o.members ?? []) {
    const added = await call("PUT", `/api/orgs/${org}/members`, member);
    assert.equal(added.status, 200, JSON.stringify(added.body));
  }
  return { org, machine, agent: a.body.id, agentBody: a.body };
}

/**
 * A shell command in the agent's box through the exec route as `call` (the owner: the
 * agent's own unfenced work); asserts it ran and exited 0, and answers its stdout.
 */
export const shellOf =
  (call: Call, agentId: () => string) =>
  async (command: string): Promise<string> => {
    const r = await call("POST", `/api/agents/${agentId()}/exec`, { command });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.equal(r.body.exit_code, 0, `${command}: ${r.body.stderr}`);
    return r.body.stdout as string;
  };
