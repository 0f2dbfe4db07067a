// The store's memo, on PGlite and on a real PostgreSQL server: a row kept in memory is
// served only while nothing has written its table (through drizzle, raw SQL, a transaction,
// or a cascade from another table).
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { eq, sql } from "drizzle-orm";
import { memo, openStore, schema, type Store } from "../../src/store/index.js";
import { Changes } from "../../src/store/changes.js";
import { dbLegs } from "../support/db.js";

test("the table a statement writes is told from its text; what cannot be told is every table", () => {
  assert.equal(Changes.written('select * from "agents"'), undefined);
  assert.equal(Changes.written("  begin"), undefined);
  assert.equal(Changes.written('(select "id" from "a") union (select "id" from "b")'), undefined);
  assert.equal(Changes.written("(delete from orgs)"), null);
  assert.deepEqual(Changes.written('insert into "agents" ("id") values ($1)'), {
    table: "agents",
    delete: false,
  });
  assert.deepEqual(Changes.written('update "memberships" set "role" = $1'), {
    table: "memberships",
    delete: false,
  });
  assert.deepEqual(Changes.written("delete from public.orgs where id = $1"), { table: "orgs", delete: true });
  assert.equal(Changes.written("with x as (delete from orgs returning 1) select 1"), null);
  assert.equal(Changes.written("truncate orgs"), null);
});

for (const leg of dbLegs) {
  describe(`the store's memo on ${leg.name}`, { skip: leg.skip ?? false }, () => {
    let store: Store;
    let drop: () => Promise<void>;
    let reads = 0;
    const roleOf = () => memo<string, string | null>(store.db, [schema.memberships]);
    let roles: ReturnType<typeof roleOf>;
    const role = (userId: string) =>
      roles.get(userId, async () => {
        reads++;
        const [m] = await store.db
          .select({ role: schema.memberships.role })
          .from(schema.memberships)
          .where(eq(schema.memberships.userId, userId));
        return m?.role ?? null;
      });

    before(async () => {
      const db = await leg.fresh();
      drop = () => db.drop();
      store = await openStore({ databaseUrl: db.url });
      roles = roleOf();
      await store.db.insert(schema.users).values({ id: "usr_1", email: "one@example.com" });
      await store.db.insert(schema.orgs).values({ id: "org_1", name: "o" });
      await store.db.insert(schema.memberships).values({ orgId: "org_1", userId: "usr_1", role: "editor" });
    });
    after(async () => {
      await store?.close();
      await drop?.();
    });

    const expect = async (want: string | null, readsMore: number) => {
      const before = reads;
      assert.equal(await role("usr_1"), want);
      assert.equal(reads - before, readsMore, `reads for ${want}`);
    };

    test("a kept row is served until its table is written, whoever writes it", async () => {
      await expect("editor", 1);
      await expect("editor", 0);
      // a write to another table leaves it kept
      await store.db.update(schema.orgs).set({ name: "o2" }).where(eq(schema.orgs.id, "org_1"));
      await expect("editor", 0);
      await store.db.update(schema.memberships).set({ role: "viewer" });
      await expect("viewer", 1);
      await store.db.execute(sql`update memberships set role = 'admin'`);
      await expect("admin", 1);
      await store.db.transaction(async (tx) => {
        await tx.update(schema.memberships).set({ role: "auditor" });
      });
      await expect("auditor", 1);
      await expect("auditor", 0);
      // a rolled back write is read again too (and finds the row as it was)
      await assert.rejects(
        store.db.transaction(async (tx) => {
          await tx.update(schema.memberships).set({ role: "owner" });
          throw new Error("no");
        }),
      );
      await expect("auditor", 1);
    });

    test("a delete of a parent row is a change of the rows its cascade removes", async () => {
      await expect("auditor", 0);
      await store.db.delete(schema.orgs).where(eq(schema.orgs.id, "org_1"));
      await expect(null, 1);
    });

    test("a read racing a write is never kept past it", async () => {
      await store.db.insert(schema.orgs).values({ id: "org_2", name: "p" });
      await store.db.insert(schema.memberships).values({ orgId: "org_2", userId: "usr_1", role: "editor" });
      await expect("editor", 1);
      // the read starts before the write and may see either; whatever it saw is not kept
      const write = store.db.update(schema.memberships).set({ role: "viewer" });
      const fresh = memo<string, string | null>(store.db, [schema.memberships]);
      roles = fresh;
      await Promise.all([role("usr_1"), write]);
      await expect("viewer", 1);
    });

    test("one read that answers for several keys keeps them all, until their table is written", async () => {
      const many = memo<string, string | null>(store.db, [schema.memberships]);
      let loads = 0;
      const everyRole = async () => {
        loads++;
        const rows = await store.db
          .select({ userId: schema.memberships.userId, role: schema.memberships.role })
          .from(schema.memberships);
        return new Map(rows.map((r) => [r.userId, r.role]));
      };
      await store.db.insert(schema.users).values({ id: "usr_2", email: "two@example.com" });
      await store.db.insert(schema.memberships).values({ orgId: "org_2", userId: "usr_2", role: "admin" });
      assert.equal(await many.getAmong("usr_1", everyRole, null), "viewer");
      assert.equal(await many.getAmong("usr_2", everyRole, null), "admin");
      assert.equal(await many.getAmong("usr_9", everyRole, null), null, "absent: one more read");
      assert.equal(loads, 2);
      assert.equal(await many.getAmong("usr_9", everyRole, null), null);
      assert.equal(loads, 2, "an absent key is kept as absent too");
      await store.db
        .update(schema.memberships)
        .set({ role: "editor" })
        .where(eq(schema.memberships.userId, "usr_2"));
      assert.equal(await many.getAmong("usr_2", everyRole, null), "editor");
      assert.equal(await many.getAmong("usr_1", everyRole, null), "viewer");
      assert.equal(loads, 3);
    });
  });
}
