// The set-up many suites share: requests as a person (AUTH_MODE=trusted-header), and an
// organisation with its machine "m" and an assistant on the scripted model, made through the
// API as the owner; optionally the organisation's areas and members.
import assert from "node:assert/strict";
import type { TestServer } from "./server.js";

/** A JSON request as one caller (the owner's, or TestServer.call itself). */
export type Call = (method: string, url: string, body?: any) => Promise<{ status: number; body: any }>;

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

/** The builtin tools of an agent's body, by name. */
export const builtins = (...names: string[]) => names.map((name) => ({ type: "builtin", name }));

/**
 * The organisation `name` and its machine (named "m" unless `machine.name`; its other fields
 * as given), made through the API as `call`; asserts both were made and answers their bodies.
 */
export async function orgAndMachine(
  call: Call,
  name: string,
  machine: Record<string, unknown> = {},
): Promise<{ org: any; machine: any }> {
  const org = await call("POST", "/api/orgs", { name });
  assert.equal(org.status, 201, JSON.stringify(org.body));
  const m = await call("POST", "/api/machines", { org_id: org.body.id, name: "m", ...machine });
  assert.equal(m.status, 201, JSON.stringify(m.body));
  return { org: org.body, machine: m.body };
}

/**
 * An agent made through the API as `call` on the organisation's machine (its ids, or the bodies
 * orgAndMachine answers), of the body `spec` and nothing more; asserts 201 and answers its body.
 */
export async function newAgent(
  call: Call,
  where: { org_id: string; machine_id: string } | { org: { id: string }; machine: { id: string } },
  spec: { name: string } & Record<string, unknown>,
): Promise<any> {
  const a = await call("POST", "/api/agents", {
    ...("org" in where ? { org_id: where.org.id, machine_id: where.machine.id } : where),
    ...spec,
  });
  assert.equal(a.status, 201, JSON.stringify(a.body));
  return a.body;
}

/** newAgent of an assistant on the scripted model's turns.json unless `spec` says otherwise. */
export const makeAgent = (
  call: Call,
  where: Parameters<typeof newAgent>[1],
  spec: Parameters<typeof newAgent>[2],
) => newAgent(call, where, { kind: "assistant", model: { provider: "script", name: "turns.json" }, ...spec });

/** A secret of the organisation (use "env" unless `use`) granted to one agent; asserts it was made. */
export async function agentSecret(
  call: Call,
  orgId: string,
  agentId: string,
  secret: { name: string; value: string; use?: string },
): Promise<void> {
  const s = await call("POST", "/api/secrets", {
    org_id: orgId,
    ...secret,
    grants: [{ scope: "agent", id: agentId }],
  });
  assert.equal(s.status, 201, JSON.stringify(s.body));
}

/**
 * A secret of use "model" named `name` (ANTHROPIC_KEY unless named), granted to the whole
 * organisation, that may go only to the fake providers' hosts; asserts it was made.
 */
export async function modelKey(
  call: Call,
  orgId: string,
  fakes: { baseUrl: string }[],
  value: string,
  name = "ANTHROPIC_KEY",
): Promise<void> {
  const s = await call("POST", "/api/secrets", {
    org_id: orgId,
    name,
    description: "",
    value,
    use: "model",
    hosts: fakes.map((f) => new URL(f.baseUrl).host),
    grants: [{ scope: "org", id: orgId }],
  });
  assert.equal(s.status, 201, JSON.stringify(s.body));
}

/** Makes the organisation, the machine "m" and the scripted agent; answers their ids and the agent as created. */
export async function orgWithAgent(
  call: Call,
  o: OrgSetUp = {},
): Promise<{ org: string; machine: string; agent: string; agentBody: any }> {
  const made = await orgAndMachine(call, o.org ?? "acme");
  const org = made.org.id as string;
  const machine = made.machine.id as string;
  const a = await makeAgent(call, made, {
    name: o.name ?? "a",
    model: { provider: "script", name: o.script ?? "turns.json" },
    ...(o.tools
      ? { tools: builtins(...o.tools), tool_policy: `@id("all") permit(principal, action, resource);` }
      : {}),
  });
  for (const [name, folders] of Object.entries(o.areas ?? {}))
    assert.equal((await call("PUT", `/api/orgs/${org}/areas/${name}`, { folders })).status, 200);
  for (const member of o.members ?? []) {
    const added = await call("PUT", `/api/orgs/${org}/members`, member);
    assert.equal(added.status, 200, JSON.stringify(added.body));
  }
  return { org, machine, agent: a.id, agentBody: a };
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
