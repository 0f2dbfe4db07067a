// The app's sessions (AUTH_MODE=oidc) and members' personal API tokens. Only hashes are
// stored: a session cookie's value and a token are shown once, to their holder. A session
// cookie is HttpOnly and SameSite=Lax, issued anew at each sign-in and rotated once it is
// older than ROTATE_MS (the old value stops working at once); a personal token works until
// it is revoked.
import { createHash, randomBytes } from "node:crypto";
import { and, asc, eq, isNull, lt } from "drizzle-orm";
import type { z } from "zod";
import type { Identity } from "../access/index.js";
import type { PersonalToken, PersonalTokenCreated } from "../contract/connections.js";
import { WarrenError } from "../errors.js";
import { newId } from "../ids.js";
import type { Db } from "../store/index.js";
import { schema } from "../store/index.js";

export const SESSION_COOKIE = "warren_session";
/** How long a session lasts without a new sign-in. */
const SESSION_MS = 12 * 3600_000;
/** A session cookie older than this is replaced by a new value at the app's next check. */
const ROTATE_MS = 15 * 60_000;
const TOKEN_PREFIX = "wpt_";

const hash = (s: string) => createHash("sha256").update(s).digest("hex");
const fresh = () => randomBytes(32).toString("base64url");

/** The value of one cookie of a Cookie header. */
export function cookieOf(header: string | undefined, name: string): string | undefined {
  for (const part of (header ?? "").split(";")) {
    const i = part.indexOf("=");
    if (i > 0 && part.slice(0, i).trim() === name) return part.slice(i + 1).trim();
  }
  return undefined;
}

/** The Set-Cookie of a session value (empty: cleared). */
export function sessionCookie(value: string, secure: boolean): string {
  const attrs = ["Path=/", "HttpOnly", "SameSite=Lax", ...(secure ? ["Secure"] : [])];
  return value
    ? `${SESSION_COOKIE}=${value}; Max-Age=${SESSION_MS / 1000}; ${attrs.join("; ")}`
    : `${SESSION_COOKIE}=; Max-Age=0; ${attrs.join("; ")}`;
}

export class Sessions {
  /** `rotateMs`: the age past which a session's cookie gets a new value (tests shorten it). */
  constructor(
    private readonly db: Db,
    private readonly rotateMs = ROTATE_MS,
  ) {}

  /** A new session of a person: the cookie's value. */
  async open(who: Identity): Promise<string> {
    const value = fresh();
    await this.db.delete(schema.signinSessions).where(lt(schema.signinSessions.expiresAt, new Date()));
    await this.db.insert(schema.signinSessions).values({
      hash: hash(value),
      userId: who.userId,
      expiresAt: new Date(Date.now() + SESSION_MS),
    });
    return value;
  }

  /** The email of a live session's cookie value, or undefined. */
  async emailOf(value: string): Promise<string | undefined> {
    const [row] = await this.db
      .select({ email: schema.users.email, expiresAt: schema.signinSessions.expiresAt })
      .from(schema.signinSessions)
      .innerJoin(schema.users, eq(schema.users.id, schema.signinSessions.userId))
      .where(eq(schema.signinSessions.hash, hash(value)));
    if (!row || row.expiresAt.getTime() < Date.now()) return undefined;
    return row.email;
  }

  /** A new value for a session older than the rotation age (the old one stops working), else undefined. */
  async rotate(value: string): Promise<string | undefined> {
    const [row] = await this.db
      .select()
      .from(schema.signinSessions)
      .where(eq(schema.signinSessions.hash, hash(value)));
    if (!row || Date.now() - row.issuedAt.getTime() < this.rotateMs) return undefined;
    const next = fresh();
    const [moved] = await this.db
      .update(schema.signinSessions)
      .set({ hash: hash(next), issuedAt: new Date() })
      .where(eq(schema.signinSessions.hash, row.hash))
      .returning({ hash: schema.signinSessions.hash });
    return moved ? next : undefined;
  }

  async close(value: string): Promise<void> {
    await this.db.delete(schema.signinSessions).where(eq(schema.signinSessions.hash, hash(value)));
  }

  // ---- personal tokens

  static isToken(s: string): boolean {
    return s.startsWith(TOKEN_PREFIX);
  }

  async createToken(who: Identity, name: string): Promise<z.input<typeof PersonalTokenCreated>> {
    const token = TOKEN_PREFIX + fresh();
    const [row] = await this.db
      .insert(schema.personalTokens)
      .values({ id: newId("ptk"), userId: who.userId, name, hash: hash(token) })
      .returning();
    return { ...tokenView(row!), token };
  }

  async listTokens(who: Identity): Promise<z.input<typeof PersonalToken>[]> {
    const rows = await this.db
      .select()
      .from(schema.personalTokens)
      .where(eq(schema.personalTokens.userId, who.userId))
      .orderBy(asc(schema.personalTokens.createdAt));
    return rows.map(tokenView);
  }

  async revokeToken(who: Identity, id: string): Promise<void> {
    const [row] = await this.db
      .update(schema.personalTokens)
      .set({ revokedAt: new Date() })
      .where(
        and(
          eq(schema.personalTokens.id, id),
          eq(schema.personalTokens.userId, who.userId),
          isNull(schema.personalTokens.revokedAt),
        ),
      )
      .returning({ id: schema.personalTokens.id });
    if (!row) throw new WarrenError("not_found", `no personal token ${id} of yours that is not revoked`);
  }

  /** The email of a personal token's holder; why not, when it is unknown or revoked. */
  async emailOfToken(token: string): Promise<{ email: string } | { why: string }> {
    const [row] = await this.db
      .select({
        id: schema.personalTokens.id,
        email: schema.users.email,
        revokedAt: schema.personalTokens.revokedAt,
      })
      .from(schema.personalTokens)
      .innerJoin(schema.users, eq(schema.users.id, schema.personalTokens.userId))
      .where(eq(schema.personalTokens.hash, hash(token)));
    if (!row) return { why: "the personal token is unknown" };
    if (row.revokedAt) return { why: `the personal token was revoked at ${row.revokedAt.toISOString()}` };
    await this.db
      .update(schema.personalTokens)
      .set({ lastUsedAt: new Date() })
      .where(eq(schema.personalTokens.id, row.id));
    return { email: row.email };
  }
}

function tokenView(r: typeof schema.personalTokens.$inferSelect): z.input<typeof PersonalToken> {
  return {
    id: r.id,
    name: r.name,
    created_at: r.createdAt.toISOString(),
    last_used_at: r.lastUsedAt?.toISOString() ?? null,
    revoked_at: r.revokedAt?.toISOString() ?? null,
  };
}
