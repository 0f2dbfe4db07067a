// The headers of an agent's http and MCP tools name secrets; only the tool gateway in the
// server reads them, so they must be of use tool. At save, a header that names a secret of
// another use is refused, unless the agent's current spec already held it (saved before use
// tool existed): that one keeps working, and the agent's answer warns until the secret is
// moved to tool.
import { and, eq, inArray } from "drizzle-orm";
import type { AgentSpec } from "../contract/spec.js";
import type { SecretUse } from "../contract/types.js";
import { WarrenError } from "../errors.js";
import type { Db, Memo } from "../store/index.js";
import { memo, schema } from "../store/index.js";

export interface HeaderSecret {
  /** Where in the spec: `tools[2].headers.Authorization`. */
  where: string;
  tool: string;
  header: string;
  secret: string;
}

/** Every header of the spec's http and MCP tools, with the secret it names. */
export function headerSecrets(spec: Pick<AgentSpec, "tools">): HeaderSecret[] {
  const out: HeaderSecret[] = [];
  spec.tools.forEach((t, i) => {
    if (t.type === "builtin") return;
    for (const [header, secret] of Object.entries(t.headers ?? {}))
      out.push({ where: `tools[${i}].headers.${header}`, tool: t.name, header, secret });
  });
  return out;
}

const key = (h: HeaderSecret) => `${h.tool}\n${h.header}\n${h.secret}`;

/** Per store: the uses of an organisation's named secrets, read again after any change of a secret. */
const memos = new WeakMap<Db, Memo<string, ReadonlyMap<string, SecretUse>>>();

async function usesOf(db: Db, orgId: string, names: string[]): Promise<ReadonlyMap<string, SecretUse>> {
  if (names.length === 0) return new Map();
  let m = memos.get(db);
  if (!m) memos.set(db, (m = memo(db, [schema.secrets])));
  return m.get(JSON.stringify([orgId, ...names]), async () => {
    const rows = await db
      .select({ name: schema.secrets.name, use: schema.secrets.use })
      .from(schema.secrets)
      .where(and(eq(schema.secrets.orgId, orgId), inArray(schema.secrets.name, names)));
    return new Map(rows.map((r) => [r.name, r.use]));
  });
}

/**
 * Refuses (request.invalid) a header of `spec` that names a secret of the organisation of
 * use env or model, unless `current` (the spec saved so far) held the same header of the
 * same tool naming the same secret. A name no secret has yet is let through: it is looked
 * up, as a secret of use tool, when a run opens its tools.
 */
export async function checkToolHeaders(
  db: Db,
  orgId: string,
  spec: Pick<AgentSpec, "tools">,
  current: Pick<AgentSpec, "tools"> | null,
): Promise<void> {
  const held = new Set((current ? headerSecrets(current) : []).map(key));
  const fresh = headerSecrets(spec).filter((h) => !held.has(key(h)));
  const uses = await usesOf(db, orgId, [...new Set(fresh.map((h) => h.secret))]);
  for (const h of fresh) {
    const use = uses.get(h.secret);
    if (use === "env" || use === "model")
      throw new WarrenError(
        "request.invalid",
        `${h.where}: the secret ${h.secret} is of use ${use}; a tool's header takes only a secret of use tool, which no command can read (create it with use tool, or move it: PATCH /api/secrets/:id {"use": "tool"})`,
      );
  }
}

/** What an agent's answer says of its tools' headers that still name secrets of use env. */
export async function toolHeaderWarnings(
  db: Db,
  orgId: string,
  spec: Pick<AgentSpec, "tools">,
): Promise<string[]> {
  const all = headerSecrets(spec);
  const uses = await usesOf(db, orgId, [...new Set(all.map((h) => h.secret))]);
  return all
    .filter((h) => uses.get(h.secret) === "env")
    .map(
      (h) =>
        `${h.where}: the secret ${h.secret} is of use env, so every command of the agent can read it; move it to use tool (PATCH /api/secrets/:id {"use": "tool"}, warren secrets update <id> --use tool)`,
    );
}
