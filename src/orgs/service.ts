import { and, asc, desc, eq, inArray } from "drizzle-orm";
import type { Access, Identity, Role } from "../access/index.js";
import { WarrenError } from "../errors.js";
import { newId } from "../ids.js";
import type { Db } from "../store/index.js";
import { memo, schema } from "../store/index.js";
import type { Member, MemberRevision, Org } from "../contract/types.js";

type Tx = Parameters<Parameters<Db["transaction"]>[0]>[0];

/**
 * Records a change of a member's access as their next revision: the role and areas after it
 * (role null: removed), by whom. Inside the transaction that makes the change.
 */
async function revise(
  tx: Tx,
  orgId: string,
  target: { userId: string; email: string },
  role: Role | null,
  areas: readonly string[],
  by: string,
): Promise<void> {
  const r = schema.memberRevisions;
  const [last] = await tx
    .select({ revision: r.revision })
    .from(r)
    .where(and(eq(r.orgId, orgId), eq(r.userId, target.userId)))
    .orderBy(desc(r.revision))
    .limit(1);
  await tx.insert(r).values({
    orgId,
    userId: target.userId,
    revision: (last?.revision ?? 0) + 1,
    email: target.email,
    role,
    areas: [...areas],
    by,
  });
}

export class Orgs {
  /** Per user: their organisations with their role, read again after a change of either. */
  readonly #lists;
  /** An organisation's name by id (null: none), read again after a change of any. */
  readonly #names;

  constructor(
    private readonly db: Db,
    private readonly access: Access,
  ) {
    this.#lists = memo<string, readonly Omit<Org, "areas">[]>(db, [schema.memberships, schema.orgs]);
    this.#names = memo<string, string | null>(db, [schema.orgs]);
  }

  async create(who: Identity, name: string): Promise<Org> {
    const id = newId("org");
    await this.db.transaction(async (tx) => {
      await tx.insert(schema.orgs).values({ id, name });
      await tx.insert(schema.memberships).values({ orgId: id, userId: who.userId, role: "owner" });
      await revise(tx, id, who, "owner", [], who.email);
    });
    return { id, name, role: "owner", areas: [] };
  }

  async list(who: Identity): Promise<Org[]> {
    const rows = await this.#lists.get(who.userId, () =>
      this.db
        .select({ id: schema.orgs.id, name: schema.orgs.name, role: schema.memberships.role })
        .from(schema.memberships)
        .innerJoin(schema.orgs, eq(schema.orgs.id, schema.memberships.orgId))
        .where(eq(schema.memberships.userId, who.userId))
        .orderBy(schema.orgs.createdAt),
    );
    return Promise.all(rows.map(async (r) => ({ ...r, areas: [...(await this.access.areasOf(r.id, who))] })));
  }

  async get(who: Identity, id: string): Promise<Org> {
    const role = await this.access.require(id, who, "read", "organisation");
    const name = await this.#names.get(id, async () => {
      const [row] = await this.db
        .select({ name: schema.orgs.name })
        .from(schema.orgs)
        .where(eq(schema.orgs.id, id));
      return row?.name ?? null;
    });
    if (name === null) throw new WarrenError("not_found", "organisation was not found");
    return { id, name, role, areas: [...(await this.access.areasOf(id, who))] };
  }

  async rename(who: Identity, id: string, name: string): Promise<Org> {
    const role = await this.access.require(id, who, "manage", "organisation");
    await this.db.update(schema.orgs).set({ name }).where(eq(schema.orgs.id, id));
    return { id, name, role, areas: [...(await this.access.areasOf(id, who))] };
  }

  /** Deletes an organisation with nothing left in it (no machine, no agent). */
  async delete(who: Identity, id: string): Promise<void> {
    const role = await this.access.require(id, who, "manage", "organisation");
    if (role !== "owner") throw new WarrenError("access.denied", "only an owner can delete an organisation");
    const [m] = await this.db
      .select({ id: schema.machines.id })
      .from(schema.machines)
      .where(eq(schema.machines.orgId, id))
      .limit(1);
    if (m) {
      throw new WarrenError(
        "machine.not_empty",
        "the organisation still has machines; delete its agents and machines first",
      );
    }
    await this.db.delete(schema.orgs).where(eq(schema.orgs.id, id));
  }

  async members(who: Identity, orgId: string): Promise<Member[]> {
    await this.access.require(orgId, who, "read", "organisation");
    const rows = await this.db
      .select({ user_id: schema.users.id, email: schema.users.email, role: schema.memberships.role })
      .from(schema.memberships)
      .innerJoin(schema.users, eq(schema.users.id, schema.memberships.userId))
      .where(eq(schema.memberships.orgId, orgId))
      .orderBy(schema.memberships.createdAt);
    const held = await this.db
      .select({ userId: schema.memberAreas.userId, area: schema.memberAreas.area })
      .from(schema.memberAreas)
      .where(eq(schema.memberAreas.orgId, orgId));
    return rows.map((r) => ({
      ...r,
      areas: held
        .filter((h) => h.userId === r.user_id)
        .map((h) => h.area)
        .sort(),
    }));
  }

  /**
   * Adds a member or changes their role and areas. Only an owner makes or unmakes owners. An
   * owner or admin holds no area (a fence on the tier that reads every credential would be only
   * a line on a screen). An editor may hold areas (its files and conversations are fenced to
   * them) or none (the whole organisation); a writer needs one (where it may change files), a
   * guest too (its personas are those homed in its areas): area.required.
   */
  async setMember(
    who: Identity,
    orgId: string,
    email: string,
    role: Role,
    areasAsked?: readonly string[],
  ): Promise<Member> {
    const mine = await this.access.require(orgId, who, "manage", "organisation");
    const target = await this.access.identify(email);
    // absent: what the member holds stays (an owner or admin holds none)
    const kept =
      areasAsked ?? (role === "owner" || role === "admin" ? [] : await this.access.areasOf(orgId, target));
    const areas = [...new Set(kept)].sort();
    if ((role === "owner" || role === "admin") && areas.length > 0)
      throw new WarrenError(
        "area.not_allowed",
        `an ${role} cannot be given areas: that tier reads every credential, so a folder fence on it would only be a line on a screen; give the areas to an editor, writer, viewer or guest`,
      );
    if ((role === "writer" || role === "guest") && areas.length === 0)
      throw new WarrenError(
        "area.required",
        role === "writer"
          ? "areas: a writer needs at least one area (it is where they may change files); define one (PUT /api/orgs/:id/areas/:name) and give it, or make them an editor (who may hold none)"
          : "areas: a guest needs at least one area (it talks through the personas homed in its areas); define one (PUT /api/orgs/:id/areas/:name) and give it",
        { field: "areas" },
      );
    if (areas.length > 0) {
      const known = await this.db
        .select({ name: schema.areas.name })
        .from(schema.areas)
        .where(and(eq(schema.areas.orgId, orgId), inArray(schema.areas.name, areas)));
      const missing = areas.filter((a) => !known.some((k) => k.name === a));
      if (missing.length > 0)
        throw new WarrenError(
          "request.invalid",
          `areas: the organisation has no area ${missing.join(", ")}; define it first (PUT /api/orgs/:id/areas/:name)`,
          { field: "areas" },
        );
    }
    const current = await this.access.roleIn(orgId, target);
    if ((role === "owner" || current === "owner") && mine !== "owner") {
      throw new WarrenError("access.denied", "only an owner can make or change an owner");
    }
    if (current === "owner" && role !== "owner") await this.#keepOneOwner(orgId, target.userId);
    const before = current === null ? null : await this.access.areasOf(orgId, target);
    const same = current === role && before !== null && before.join("\n") === areas.join("\n");
    await this.db.transaction(async (tx) => {
      await tx
        .insert(schema.memberships)
        .values({ orgId, userId: target.userId, role })
        .onConflictDoUpdate({
          target: [schema.memberships.orgId, schema.memberships.userId],
          set: { role },
        });
      await tx
        .delete(schema.memberAreas)
        .where(and(eq(schema.memberAreas.orgId, orgId), eq(schema.memberAreas.userId, target.userId)));
      if (areas.length > 0)
        await tx
          .insert(schema.memberAreas)
          .values(areas.map((area) => ({ orgId, userId: target.userId, area })));
      // who gained or lost a role or an area is a revision with its author
      if (!same) await revise(tx, orgId, target, role, areas, who.email);
    });
    if (!same) this.access.changed(orgId, target.userId);
    return { user_id: target.userId, email: target.email, role, areas };
  }

  async removeMember(who: Identity, orgId: string, userId: string): Promise<void> {
    const mine = await this.access.require(orgId, who, "manage", "organisation");
    const [m] = await this.db
      .select()
      .from(schema.memberships)
      .where(and(eq(schema.memberships.orgId, orgId), eq(schema.memberships.userId, userId)));
    if (!m) throw new WarrenError("not_found", "member was not found");
    if (m.role === "owner") {
      if (mine !== "owner") throw new WarrenError("access.denied", "only an owner can remove an owner");
      await this.#keepOneOwner(orgId, userId);
    }
    const [user] = await this.db
      .select({ email: schema.users.email })
      .from(schema.users)
      .where(eq(schema.users.id, userId));
    await this.db.transaction(async (tx) => {
      await tx
        .delete(schema.memberships)
        .where(and(eq(schema.memberships.orgId, orgId), eq(schema.memberships.userId, userId)));
      await revise(tx, orgId, { userId, email: user?.email ?? "" }, null, [], who.email);
    });
    this.access.changed(orgId, userId);
  }

  /**
   * Every change of the members' access (role and areas), oldest first, with who made it; of
   * one member with `email`. Like area revisions: not for a member who holds areas.
   */
  async memberRevisions(who: Identity, orgId: string, email?: string): Promise<MemberRevision[]> {
    await this.access.require(orgId, who, "read", "organisation");
    await this.access.requireUnfenced(orgId, who);
    const r = schema.memberRevisions;
    const rows = await this.db
      .select()
      .from(r)
      .where(email === undefined ? eq(r.orgId, orgId) : and(eq(r.orgId, orgId), eq(r.email, email)))
      .orderBy(asc(r.at), asc(r.userId), asc(r.revision));
    return rows.map((x) => ({
      user_id: x.userId,
      email: x.email,
      revision: x.revision,
      role: x.role as Role | null,
      areas: x.areas,
      by: x.by,
      at: x.at.toISOString(),
    }));
  }

  async #keepOneOwner(orgId: string, leavingUserId: string): Promise<void> {
    const owners = await this.db
      .select({ userId: schema.memberships.userId })
      .from(schema.memberships)
      .where(and(eq(schema.memberships.orgId, orgId), inArray(schema.memberships.role, ["owner"])));
    if (owners.filter((o) => o.userId !== leavingUserId).length === 0) {
      throw new WarrenError(
        "request.invalid",
        "an organisation keeps at least one owner; make another owner first",
      );
    }
  }
}
