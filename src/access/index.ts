// Identities and memberships. The HTTP layer resolves who is asking (AUTH_MODE); services
// call `require` before touching anything of an organisation.
import { and, desc, eq } from "drizzle-orm";
import { WarrenError } from "../errors.js";
import { newId } from "../ids.js";
import type { Db } from "../store/index.js";
import { memo, schema } from "../store/index.js";
import { allows, type Permission, type Role } from "./roles.js";

export type { Permission, Role } from "./roles.js";
export { allows } from "./roles.js";

export interface Identity {
  userId: string;
  email: string;
}

/** The identity of compat-cookie mode: whoever reaches the loopback port. */
export const OPERATOR_EMAIL = "operator@localhost";

const emailPattern = /^[^\s@<>,;"]{1,128}@[^\s@<>,;"]{1,255}$/;

const denied: Record<Permission, string> = {
  read: "see this",
  inspect: "see workloads (files, output, traces)",
  write: "change anything",
  manage: "manage it",
  edit: "change files",
  converse: "talk with agents",
};

export class Access {
  readonly #db: Db;
  readonly #cache = new Map<string, Identity>();
  /** Per user: their role in each of their organisations, read again after any change of a membership. */
  readonly #roles;
  /** Per organisation and user: the names of the areas they hold, read again after any change. */
  readonly #areas;
  /** Per organisation and user: their last access revision (0: none kept), read again after any change. */
  readonly #revisions;
  /** Told of every change of a member's access, once it is committed. */
  readonly #watchers = new Set<(orgId: string, userId: string) => void>();

  constructor(db: Db) {
    this.#db = db;
    this.#roles = memo<string, ReadonlyMap<string, Role>>(db, [schema.memberships]);
    this.#areas = memo<string, readonly string[]>(db, [schema.memberAreas]);
    this.#revisions = memo<string, number>(db, [schema.memberRevisions]);
  }

  /**
   * The revision of a member's access (role and areas) in an organisation: it changes with
   * every change of either, a removal and an addition again included (0: none recorded yet).
   */
  async revisionOf(orgId: string, userId: string): Promise<number> {
    return this.#revisions.get(`${orgId}\n${userId}`, async () => {
      const r = schema.memberRevisions;
      const [last] = await this.#db
        .select({ revision: r.revision })
        .from(r)
        .where(and(eq(r.orgId, orgId), eq(r.userId, userId)))
        .orderBy(desc(r.revision))
        .limit(1);
      return last?.revision ?? 0;
    });
  }

  /** Calls `fn` after each committed change of a member's access; answers the function that stops. */
  watch(fn: (orgId: string, userId: string) => void): () => void {
    this.#watchers.add(fn);
    return () => this.#watchers.delete(fn);
  }

  /** Tells the watchers that a member's access changed (called once the change is committed). */
  changed(orgId: string, userId: string): void {
    for (const fn of [...this.#watchers]) fn(orgId, userId);
  }

  /** The names of the areas a member holds in an organisation (none: the whole home). */
  async areasOf(orgId: string, who: Identity): Promise<readonly string[]> {
    return this.#areas.get(`${orgId}\n${who.userId}`, async () => {
      const rows = await this.#db
        .select({ area: schema.memberAreas.area })
        .from(schema.memberAreas)
        .where(and(eq(schema.memberAreas.orgId, orgId), eq(schema.memberAreas.userId, who.userId)));
      return rows.map((r) => r.area).sort();
    });
  }

  /**
   * Requires the whole of the organisation's agents: refused (area.refused) to a member who
   * holds areas, for what an area cannot fence (a command or a terminal in the box, an agent's
   * configuration: its spec, secrets, policies, personas).
   */
  async requireUnfenced(orgId: string, who: Identity): Promise<void> {
    if ((await this.areasOf(orgId, who)).length > 0)
      throw new WarrenError(
        "area.refused",
        "you hold areas in this organisation, so you work with its agents through conversations; ask an owner or admin",
      );
  }

  /** The caller's organisations and their role in each: one read per change of any membership. */
  #rolesOf(who: Identity): Promise<ReadonlyMap<string, Role>> {
    return this.#roles.get(who.userId, async () => {
      const rows = await this.#db
        .select({ orgId: schema.memberships.orgId, role: schema.memberships.role })
        .from(schema.memberships)
        .where(eq(schema.memberships.userId, who.userId));
      return new Map(rows.map((r) => [r.orgId, r.role]));
    });
  }

  /** The user for an email, created on first sight. */
  async identify(emailRaw: string): Promise<Identity> {
    const email = emailRaw.trim().toLowerCase();
    if (!emailPattern.test(email)) {
      throw new WarrenError("auth.required", "the identity header does not hold an email address");
    }
    const cached = this.#cache.get(email);
    if (cached) return cached;
    await this.#db
      .insert(schema.users)
      .values({ id: newId("usr"), email })
      .onConflictDoNothing();
    const [row] = await this.#db.select().from(schema.users).where(eq(schema.users.email, email));
    if (!row) throw new Error(`user ${email} vanished after insert`);
    const id = { userId: row.id, email: row.email };
    this.#cache.set(email, id);
    return id;
  }

  async roleIn(orgId: string, who: Identity): Promise<Role | null> {
    return (await this.#rolesOf(who)).get(orgId) ?? null;
  }

  /**
   * Requires `perm` in the organisation. A non-member gets not_found for `what` (the
   * resource asked for), so nothing reveals that it exists.
   */
  async require(orgId: string, who: Identity, perm: Permission, what: string): Promise<Role> {
    const role = await this.roleIn(orgId, who);
    if (!role) throw new WarrenError("not_found", `${what} was not found`);
    if (!allows(role, perm)) {
      throw new WarrenError(
        "access.denied",
        `your role in this organisation is ${role}, which cannot ${denied[perm]}; ask an owner or admin`,
      );
    }
    // what an area cannot fence (a command or terminal in the box, the configuration of
    // agents, machines and secrets) is not for a member who holds areas
    if (perm === "write") await this.requireUnfenced(orgId, who);
    return role;
  }

  /**
   * The organisations a list may show: all of the caller's where they may read, or the one
   * asked for (not_found if not theirs; a guest reads no list).
   */
  async visibleOrgIds(who: Identity, orgId?: string): Promise<string[]> {
    const roles = await this.#rolesOf(who);
    if (orgId === undefined) return [...roles].filter(([, role]) => allows(role, "read")).map(([id]) => id);
    if (!roles.has(orgId)) throw new WarrenError("not_found", "organisation was not found");
    await this.require(orgId, who, "read", "organisation");
    return [orgId];
  }

  async orgIdsOf(who: Identity): Promise<string[]> {
    return [...(await this.#rolesOf(who)).keys()];
  }
}
