// Identities and memberships. The HTTP layer resolves who is asking (AUTH_MODE); services
// call `require` before touching anything of an organisation.
import { eq } from "drizzle-orm";
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
};

export class Access {
  readonly #db: Db;
  readonly #cache = new Map<string, Identity>();
  /** Per user: their role in each of their organisations, read again after any change of a membership. */
  readonly #roles;

  constructor(db: Db) {
    this.#db = db;
    this.#roles = memo<string, ReadonlyMap<string, Role>>(db, [schema.memberships]);
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
    return role;
  }

  /** The organisations a list may show: all of the caller's, or the one asked for (not_found if not theirs). */
  async visibleOrgIds(who: Identity, orgId?: string): Promise<string[]> {
    const mine = await this.orgIdsOf(who);
    if (orgId === undefined) return mine;
    if (!mine.includes(orgId)) throw new WarrenError("not_found", "organisation was not found");
    return [orgId];
  }

  async orgIdsOf(who: Identity): Promise<string[]> {
    return [...(await this.#rolesOf(who)).keys()];
  }
}
