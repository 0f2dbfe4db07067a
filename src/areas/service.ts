// Areas: named sets of folders of an agent's home, defined once per organisation and handed to
// members. Every change of an area is a revision (who, when, the folders after it); a member
// who holds areas sees only their folders (the file routes check every path, ./fence.ts), and
// the turns of the conversations they start run with only those folders on disk. The folders
// are read again at every check and every turn, so an edit moves everyone who holds the area
// at once, running conversations included.
import { and, asc, eq, inArray } from "drizzle-orm";
import type { Access, Identity } from "../access/index.js";
import type { Area, AreaRevision } from "../contract/types.js";
import { WarrenError } from "../errors.js";
import type { Db } from "../store/index.js";
import { memo, schema } from "../store/index.js";
import { folderProblem, MAX_AREA_FOLDERS, normalFolder, outermost, type Fence } from "./fence.js";

type AreaRow = typeof schema.areas.$inferSelect;

const view = (a: AreaRow): Area => ({ name: a.name, folders: a.folders, revision: a.revision });

export class Areas {
  /** An organisation's areas by name, read again after any change of an area. */
  readonly #defs;

  constructor(
    private readonly db: Db,
    private readonly access: Access,
  ) {
    this.#defs = memo<string, ReadonlyMap<string, readonly string[]>>(db, [schema.areas]);
  }

  async #definitions(orgId: string): Promise<ReadonlyMap<string, readonly string[]>> {
    return this.#defs.get(orgId, async () => {
      const rows = await this.db.select().from(schema.areas).where(eq(schema.areas.orgId, orgId));
      return new Map(rows.map((r) => [r.name, r.folders]));
    });
  }

  /** The folders of the named areas together (none named: no fence, the whole home). */
  async foldersOf(orgId: string, names: readonly string[]): Promise<Fence> {
    if (names.length === 0) return null;
    const defs = await this.#definitions(orgId);
    // an area deleted since holds nothing
    return outermost(names.flatMap((n) => defs.get(n) ?? []));
  }

  /** A person's fence in an organisation: owners and admins have none; else their areas'. */
  async fenceOf(orgId: string, who: Identity): Promise<Fence> {
    const role = await this.access.roleIn(orgId, who);
    if (role === null || role === "owner" || role === "admin") return null;
    return this.foldersOf(orgId, await this.access.areasOf(orgId, who));
  }

  async put(who: Identity, orgId: string, name: string, folders: readonly string[]): Promise<Area> {
    await this.access.require(orgId, who, "manage", "organisation");
    if (folders.length === 0 || folders.length > MAX_AREA_FOLDERS)
      throw new WarrenError(
        "request.invalid",
        `folders: an area names 1 to ${MAX_AREA_FOLDERS} folders of the home`,
        { field: "folders" },
      );
    for (const [i, f] of folders.entries()) {
      const problem = folderProblem(f);
      if (problem)
        throw new WarrenError("request.invalid", `folders[${i}]: ${JSON.stringify(f)} ${problem}`, {
          field: "folders",
        });
    }
    const kept = outermost(folders.map(normalFolder));
    return this.db.transaction(async (tx) => {
      const [old] = await tx
        .select()
        .from(schema.areas)
        .where(and(eq(schema.areas.orgId, orgId), eq(schema.areas.name, name)))
        .for("update");
      const revisions = await tx
        .select({ revision: schema.areaRevisions.revision })
        .from(schema.areaRevisions)
        .where(and(eq(schema.areaRevisions.orgId, orgId), eq(schema.areaRevisions.name, name)));
      // a name deleted and made again goes on counting
      const revision = Math.max(old?.revision ?? 0, ...revisions.map((r) => r.revision)) + 1;
      const [row] = await tx
        .insert(schema.areas)
        .values({ orgId, name, folders: kept, revision })
        .onConflictDoUpdate({
          target: [schema.areas.orgId, schema.areas.name],
          set: { folders: kept, revision, updatedAt: new Date() },
        })
        .returning();
      await tx.insert(schema.areaRevisions).values({ orgId, name, revision, folders: kept, by: who.email });
      if (!row) throw new Error("area upsert returned nothing");
      return view(row);
    });
  }

  /** The organisation's areas; a member who holds areas sees only theirs. */
  async list(who: Identity, orgId: string): Promise<Area[]> {
    await this.access.require(orgId, who, "read", "organisation");
    const held = await this.access.areasOf(orgId, who);
    const role = await this.access.roleIn(orgId, who);
    const fenced = held.length > 0 && role !== "owner" && role !== "admin";
    const rows = await this.db
      .select()
      .from(schema.areas)
      .where(
        fenced
          ? and(eq(schema.areas.orgId, orgId), inArray(schema.areas.name, [...held]))
          : eq(schema.areas.orgId, orgId),
      )
      .orderBy(asc(schema.areas.name));
    return rows.map(view);
  }

  async revisions(who: Identity, orgId: string, name: string): Promise<AreaRevision[]> {
    await this.access.require(orgId, who, "read", "organisation");
    await this.access.requireUnfenced(orgId, who);
    const rows = await this.db
      .select()
      .from(schema.areaRevisions)
      .where(and(eq(schema.areaRevisions.orgId, orgId), eq(schema.areaRevisions.name, name)))
      .orderBy(asc(schema.areaRevisions.revision));
    if (rows.length === 0) throw new WarrenError("not_found", "area was not found");
    return rows.map((r) => ({ revision: r.revision, folders: r.folders, by: r.by, at: r.at.toISOString() }));
  }

  async remove(who: Identity, orgId: string, name: string): Promise<void> {
    await this.access.require(orgId, who, "manage", "organisation");
    await this.db.transaction(async (tx) => {
      const [old] = await tx
        .select()
        .from(schema.areas)
        .where(and(eq(schema.areas.orgId, orgId), eq(schema.areas.name, name)))
        .for("update");
      if (!old) throw new WarrenError("not_found", "area was not found");
      const holders = await tx
        .select({ email: schema.users.email })
        .from(schema.memberAreas)
        .innerJoin(schema.users, eq(schema.users.id, schema.memberAreas.userId))
        .where(and(eq(schema.memberAreas.orgId, orgId), eq(schema.memberAreas.area, name)));
      if (holders.length > 0)
        throw new WarrenError(
          "area.in_use",
          `${holders.length} member(s) hold the area ${name} (${holders.map((h) => h.email).join(", ")}); take it from them first`,
        );
      await tx.delete(schema.areas).where(and(eq(schema.areas.orgId, orgId), eq(schema.areas.name, name)));
      await tx
        .insert(schema.areaRevisions)
        .values({ orgId, name, revision: old.revision + 1, folders: null, by: who.email });
    });
  }
}
