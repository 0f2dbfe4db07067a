// A member of a seat the API no longer hands out: an editor without an area, as a deployment
// made before editors needed one still holds it (its role and areas untouched since). Such an
// editor keeps the whole home and every write of the role, the widest seat below admin, so
// the hostile suites attack from it.
import { and, eq } from "drizzle-orm";
import { schema } from "../../src/store/index.js";
import type { TestServer } from "./server.js";

/**
 * Makes a member an editor who holds no area, in the server's own store. `put` adds the
 * member first through the API (any role but owner or admin); its answer names the user.
 */
export async function editorOfOld(
  t: TestServer,
  orgId: string,
  put: Promise<{ status: number; body: { user_id?: string } }>,
): Promise<{ status: number; body: { user_id?: string; role?: string } }> {
  const added = await put;
  if (added.status !== 200 || !added.body.user_id) return added;
  const userId = added.body.user_id;
  await t.server.store.db
    .update(schema.memberships)
    .set({ role: "editor" })
    .where(and(eq(schema.memberships.orgId, orgId), eq(schema.memberships.userId, userId)));
  return { status: 200, body: { ...added.body, role: "editor" } };
}
