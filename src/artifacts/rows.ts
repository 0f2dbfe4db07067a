// The artifact rows' reads and writes, shared by the operators' routes and the agents' tools.
// A write is one transaction: the row's revision is bumped under a row lock, and a memory's
// new revision is archived beside it (memory keeps every revision).
import { and, asc, eq, like, or, sql } from "drizzle-orm";
import { WarrenError } from "../errors.js";
import { schema, type Db } from "../store/index.js";
import type { ArtifactKind } from "./paths.js";

/** The most bytes an artifact holds (a note, a memory, a script, a record). */
export const ARTIFACT_MAX_BYTES = 1024 * 1024;

export interface ArtifactItem {
  path: string;
  kind: ArtifactKind;
  bytes: number;
  revision: number;
  updated_at: string;
}

export interface ArtifactWrite {
  orgId: string;
  path: string;
  kind: ArtifactKind;
  agentId: string | null;
  content: string;
  /** An agent's id or a person's email. */
  by: string;
}

/** Refuses content no artifact can hold: too large (request.too_large), a NUL (request.invalid). */
export function checkContent(content: string): void {
  const bytes = Buffer.byteLength(content, "utf8");
  if (bytes > ARTIFACT_MAX_BYTES)
    throw new WarrenError(
      "request.too_large",
      `the content is ${bytes} bytes, above the ${ARTIFACT_MAX_BYTES} bytes an artifact holds; split it`,
    );
  if (content.includes("\u0000"))
    throw new WarrenError("request.invalid", "body: an artifact's text cannot hold a NUL character", {
      field: "body",
    });
}

const itemOf = (r: {
  path: string;
  kind: ArtifactKind;
  bytes: number;
  revision: number;
  updatedAt: Date;
}): ArtifactItem => ({
  path: r.path,
  kind: r.kind,
  bytes: Number(r.bytes),
  revision: r.revision,
  updated_at: r.updatedAt.toISOString(),
});

const itemColumns = {
  path: schema.artifacts.path,
  kind: schema.artifacts.kind,
  bytes: sql<number>`octet_length(${schema.artifacts.content})`,
  revision: schema.artifacts.revision,
  updatedAt: schema.artifacts.updatedAt,
};

/** Escapes LIKE's wildcards in a prefix. */
const likePrefix = (prefix: string): string => `${prefix.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;

export async function listItems(
  db: Db,
  orgId: string,
  opts: { prefix?: string; kind?: ArtifactKind; agentId?: string; paths?: string[]; limit?: number },
): Promise<ArtifactItem[]> {
  const a = schema.artifacts;
  const where = [eq(a.orgId, orgId)];
  if (opts.prefix) where.push(like(a.path, likePrefix(opts.prefix)));
  if (opts.kind) where.push(eq(a.kind, opts.kind));
  const mine = opts.agentId !== undefined ? eq(a.agentId, opts.agentId) : undefined;
  const listed =
    opts.paths !== undefined && opts.paths.length > 0
      ? sql`${a.path} = ANY(${sql.param(opts.paths)}::text[])`
      : undefined;
  if (mine && listed) where.push(or(mine, listed)!);
  else if (mine) where.push(mine);
  else if (opts.paths !== undefined) {
    if (!listed) return [];
    where.push(listed);
  }
  const rows = await db
    .select(itemColumns)
    .from(a)
    .where(and(...where))
    .orderBy(asc(a.path))
    .limit(opts.limit ?? 10_000);
  return rows.map(itemOf);
}

export async function readRow(db: Db, orgId: string, path: string) {
  const [row] = await db
    .select()
    .from(schema.artifacts)
    .where(and(eq(schema.artifacts.orgId, orgId), eq(schema.artifacts.path, path)));
  return row;
}

/**
 * Writes the artifact's new content as its next revision, in one transaction (one upsert: two
 * writers at once get consecutive revisions); a memory's revision is archived beside it.
 */
export async function writeRow(db: Db, w: ArtifactWrite): Promise<{ path: string; revision: number }> {
  checkContent(w.content);
  return db.transaction(async (tx) => {
    const a = schema.artifacts;
    const at = new Date();
    const [row] = await tx
      .insert(a)
      .values({
        orgId: w.orgId,
        path: w.path,
        kind: w.kind,
        agentId: w.agentId,
        content: w.content,
        revision: 1,
        updatedBy: w.by,
        updatedAt: at,
      })
      .onConflictDoUpdate({
        target: [a.orgId, a.path],
        set: { content: w.content, revision: sql`${a.revision} + 1`, updatedBy: w.by, updatedAt: at },
      })
      .returning({ revision: a.revision });
    const revision = row!.revision;
    if (w.kind === "memory")
      await tx
        .insert(schema.memoryRevisions)
        .values({ orgId: w.orgId, path: w.path, revision, content: w.content, by: w.by, at });
    return { path: w.path, revision };
  });
}
