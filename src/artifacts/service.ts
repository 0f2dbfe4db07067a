// The artifact store as operators see it (the Markdown view and the app): list, read and
// write artifacts under their display paths, read memory's earlier revisions (only here: no
// agent tool reads them), and set the access lists of notes and collections. Agents reach the
// store only through their tools (agent.ts), as themselves.
import { and, asc, desc, eq } from "drizzle-orm";
import type { Access, Identity } from "../access/index.js";
import { WarrenError } from "../errors.js";
import { schema, type Db } from "../store/index.js";
import type { AccessMode, AccessScope } from "./access.js";
import { AgentArtifacts, type ArtifactAgent } from "./agent.js";
import { parseAccessPath, parseArtifactPath, type ArtifactKind, type ArtifactPath } from "./paths.js";
import { listItems, readRow, writeRow, type ArtifactItem } from "./rows.js";

export interface Grant {
  scope: AccessScope;
  id: string;
  mode: AccessMode;
}

export interface RevisionItem {
  revision: number;
  by: string;
  at: string;
  bytes: number;
}

export interface ArtifactsOptions {
  db: Db;
  access: Access;
  /** The agent's redaction of what it writes (every secret that reaches it), by the record writer. */
  redactorOf(agentId: string): Promise<{ redactText(s: string): string }>;
}

/** A record's text as stored: JSON, normalised; anything else is refused. */
export function recordText(text: string): string {
  try {
    return JSON.stringify(JSON.parse(text) as unknown);
  } catch {
    throw new WarrenError("request.invalid", "body: a collection's record is JSON, and this is not", {
      field: "body",
    });
  }
}

export class Artifacts {
  constructor(private readonly o: ArtifactsOptions) {}

  async list(who: Identity, orgId: string, prefix = ""): Promise<ArtifactItem[]> {
    await this.o.access.require(orgId, who, "read", "organisation");
    return listItems(this.o.db, orgId, { prefix });
  }

  async read(who: Identity, orgId: string, raw: string): Promise<{ kind: ArtifactKind; content: string }> {
    await this.o.access.require(orgId, who, "inspect", "organisation");
    const p = parseArtifactPath(raw);
    const row = await readRow(this.o.db, orgId, p.path);
    if (!row) throw new WarrenError("not_found", `there is no artifact at ${p.path}`);
    return { kind: row.kind, content: row.content };
  }

  async write(
    who: Identity,
    orgId: string,
    raw: string,
    text: string,
  ): Promise<{ path: string; revision: number }> {
    await this.o.access.require(orgId, who, "write", "organisation");
    const p = parseArtifactPath(raw);
    await this.#checkOwner(orgId, p);
    const content = p.kind === "record" ? recordText(text) : text;
    return writeRow(this.o.db, {
      orgId,
      path: p.path,
      kind: p.kind,
      agentId: "agentId" in p ? p.agentId : null,
      content,
      by: who.email,
    });
  }

  /** An artifact's revisions, newest first: every one of a memory; the current one of anything else. */
  async revisions(who: Identity, orgId: string, raw: string): Promise<RevisionItem[]> {
    await this.o.access.require(orgId, who, "inspect", "organisation");
    const p = parseArtifactPath(raw);
    const row = await readRow(this.o.db, orgId, p.path);
    if (!row) throw new WarrenError("not_found", `there is no artifact at ${p.path}`);
    if (p.kind !== "memory")
      return [
        {
          revision: row.revision,
          by: row.updatedBy,
          at: row.updatedAt.toISOString(),
          bytes: Buffer.byteLength(row.content),
        },
      ];
    const m = schema.memoryRevisions;
    const rows = await this.o.db
      .select()
      .from(m)
      .where(and(eq(m.orgId, orgId), eq(m.path, p.path)))
      .orderBy(desc(m.revision));
    return rows.map((r) => ({
      revision: r.revision,
      by: r.by,
      at: r.at.toISOString(),
      bytes: Buffer.byteLength(r.content),
    }));
  }

  /** The text of one revision of a memory (operators only). */
  async revision(who: Identity, orgId: string, raw: string, revision: number): Promise<string> {
    await this.o.access.require(orgId, who, "inspect", "organisation");
    const p = parseArtifactPath(raw);
    if (p.kind !== "memory")
      throw new WarrenError("request.invalid", "revision: only a memory keeps its earlier revisions", {
        field: "revision",
      });
    const m = schema.memoryRevisions;
    const [row] = await this.o.db
      .select({ content: m.content })
      .from(m)
      .where(and(eq(m.orgId, orgId), eq(m.path, p.path), eq(m.revision, revision)));
    if (!row) throw new WarrenError("not_found", `${p.path} has no revision ${revision}`);
    return row.content;
  }

  async getAccess(who: Identity, orgId: string, raw: string): Promise<Grant[]> {
    await this.o.access.require(orgId, who, "read", "organisation");
    const p = parseAccessPath(raw);
    const t = schema.artifactAccess;
    const rows = await this.o.db
      .select()
      .from(t)
      .where(and(eq(t.orgId, orgId), eq(t.path, p.path)))
      .orderBy(asc(t.scope), asc(t.subjectId));
    return rows.map((r) => ({ scope: r.scope, id: r.subjectId, mode: r.mode }));
  }

  /** Replaces the access list of a note or a collection, in one transaction. */
  async setAccess(who: Identity, orgId: string, raw: string, grants: Grant[]): Promise<Grant[]> {
    await this.o.access.require(orgId, who, "write", "organisation");
    const p = parseAccessPath(raw);
    const seen = new Set<string>();
    for (const [i, g] of grants.entries()) {
      const key = `${g.scope}:${g.id}`;
      if (seen.has(key))
        throw new WarrenError("request.invalid", `grants[${i}]: ${key} is listed twice`, {
          field: `grants[${i}]`,
        });
      seen.add(key);
      if (!(await this.#inOrg(orgId, g.scope, g.id)))
        throw new WarrenError(
          "request.invalid",
          `grants[${i}].id: ${g.id} is not ${g.scope === "org" ? "this organisation" : `a ${g.scope} of this organisation`}`,
          { field: `grants[${i}].id` },
        );
    }
    const t = schema.artifactAccess;
    await this.o.db.transaction(async (tx) => {
      await tx.delete(t).where(and(eq(t.orgId, orgId), eq(t.path, p.path)));
      if (grants.length > 0)
        await tx
          .insert(t)
          .values(
            grants.map((g) => ({ orgId, path: p.path, scope: g.scope, subjectId: g.id, mode: g.mode })),
          );
    });
    return this.getAccess(who, orgId, raw);
  }

  /** The store as one agent's tools see it. */
  forAgent(agent: ArtifactAgent): AgentArtifacts {
    return new AgentArtifacts(this.o.db, agent, () => this.o.redactorOf(agent.id));
  }

  async #inOrg(orgId: string, scope: AccessScope, id: string): Promise<boolean> {
    if (scope === "org") return id === orgId;
    const table = scope === "guild" ? schema.guilds : schema.agents;
    const [row] = await this.o.db
      .select({ id: table.id })
      .from(table)
      .where(and(eq(table.id, id), eq(table.orgId, orgId)));
    return !!row;
  }

  /** A new write under an agent's or a guild's path needs that agent or guild in this organisation. */
  async #checkOwner(orgId: string, p: ArtifactPath): Promise<void> {
    if ("agentId" in p && !(await this.#inOrg(orgId, "agent", p.agentId)))
      throw new WarrenError("not_found", `agent ${p.agentId} was not found in this organisation`);
    if ("guildId" in p && !(await this.#inOrg(orgId, "guild", p.guildId)))
      throw new WarrenError("not_found", `guild ${p.guildId} was not found in this organisation`);
  }
}
