// Shared assertions for the HTTP suites: the error envelope, ids, the routes of the contract.
import assert from "node:assert/strict";

/** JSON for a failure message, cut to a readable length. */
export const show = (v: unknown): string => {
  const s = JSON.stringify(v) ?? String(v);
  return s.length > 300 ? `${s.slice(0, 300)}... (${s.length} chars)` : s;
};

export interface Answer {
  status: number;
  body: any;
}

/** Every error is {"error": {"code": "<string>", "message": "<string>"}} and nothing else. */
export function assertEnvelope(
  body: unknown,
  context = "",
): asserts body is { error: { code: string; message: string } } {
  assert.ok(
    body && typeof body === "object" && !Array.isArray(body),
    `${context}: the error body is not an object: ${show(body)}`,
  );
  const b = body as Record<string, unknown>;
  assert.deepEqual(
    Object.keys(b),
    ["error"],
    `${context}: the error body has other keys than "error": ${show(body)}`,
  );
  const e = b.error as Record<string, unknown> | null;
  assert.ok(e && typeof e === "object", `${context}: "error" is not an object: ${show(body)}`);
  assert.equal(typeof e.code, "string", `${context}: error.code is not a string: ${show(body)}`);
  assert.ok((e.code as string).length > 0, `${context}: error.code is empty`);
  assert.equal(typeof e.message, "string", `${context}: error.message is not a string: ${show(body)}`);
}

/** An error answer with this status and code; `mentions` must appear in the message (a field name). */
export function assertError(r: Answer, status: number, code: string, mentions?: string | RegExp): void {
  const ctx = `expected ${status} ${code}, got ${r.status} ${show(r.body)}`;
  assert.equal(r.status, status, ctx);
  assertEnvelope(r.body, ctx);
  assert.equal(r.body.error.code, code, ctx);
  if (mentions !== undefined) {
    if (typeof mentions === "string")
      assert.ok(r.body.error.message.includes(mentions), `${ctx}: the message does not name ${mentions}`);
    else assert.match(r.body.error.message, mentions, ctx);
  }
}

export function assertStatus(r: Answer, status: number, what = ""): void {
  assert.equal(r.status, status, `${what} expected ${status}, got ${r.status} ${show(r.body)}`);
}

export const idRe = (prefix: string): RegExp => new RegExp(`^${prefix}_[0-9a-z]{16}$`);

/** A well-formed id that names nothing. */
export const ghostId = (prefix: string): string => `${prefix}_zzzzzzzzzzzzzzzz`;

export const isoRe = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;

/** The routes of the contract (and the server's additions), as in the OpenAPI document. */
export const contractRoutes: { method: string; path: string }[] = [
  { method: "post", path: "/api/orgs" },
  { method: "get", path: "/api/orgs" },
  { method: "get", path: "/api/orgs/{id}" },
  { method: "patch", path: "/api/orgs/{id}" },
  { method: "delete", path: "/api/orgs/{id}" },
  { method: "get", path: "/api/orgs/{id}/members" },
  { method: "put", path: "/api/orgs/{id}/members" },
  { method: "delete", path: "/api/orgs/{id}/members/{user_id}" },
  { method: "post", path: "/api/machines" },
  { method: "get", path: "/api/machines" },
  { method: "get", path: "/api/machines/{id}" },
  { method: "patch", path: "/api/machines/{id}" },
  { method: "post", path: "/api/machines/{id}/stop" },
  { method: "delete", path: "/api/machines/{id}" },
  { method: "post", path: "/api/agents" },
  { method: "get", path: "/api/agents" },
  { method: "get", path: "/api/agents/{id}" },
  { method: "patch", path: "/api/agents/{id}" },
  { method: "delete", path: "/api/agents/{id}" },
  { method: "post", path: "/api/agents/{id}/exec" },
  { method: "post", path: "/api/agents/{id}/cli" },
  { method: "get", path: "/api/agents/{id}/cli/tty" },
  { method: "post", path: "/api/guilds" },
  { method: "get", path: "/api/guilds" },
  { method: "get", path: "/api/guilds/{id}" },
  { method: "delete", path: "/api/guilds/{id}" },
  { method: "post", path: "/api/guilds/{id}/agents" },
  { method: "delete", path: "/api/guilds/{id}/agents/{agent_id}" },
];
