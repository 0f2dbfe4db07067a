// Migration 0019 (the role ladder): an editor who held areas was what a writer is now, so it
// becomes a writer (with its areas, and a revision of its membership saying why); an editor
// who held none stays an editor. Run on a store migrated up to 0018 with members in it, then
// opened as the server opens it (every migration), on PGlite and on PostgreSQL.
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, test } from "node:test";
import { PGlite } from "@electric-sql/pglite";
import { drizzle as drizzlePg } from "drizzle-orm/node-postgres";
import { migrate as migratePg } from "drizzle-orm/node-postgres/migrator";
import { drizzle as drizzlePglite } from "drizzle-orm/pglite";
import { migrate as migratePglite } from "drizzle-orm/pglite/migrator";
import pg from "pg";
import { migrationsFolder, openStore } from "../../src/store/index.js";
import { dbLegs } from "../support/db.js";

/** The checked-in migrations before the role ladder, as a folder of their own. */
function migrationsBeforeLadder(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "warren-ladder-migrations-"));
  fs.cpSync(migrationsFolder, dir, { recursive: true });
  const journalFile = path.join(dir, "meta", "_journal.json");
  const journal = JSON.parse(fs.readFileSync(journalFile, "utf8")) as { entries: { tag: string }[] };
  const at = journal.entries.findIndex((e) => e.tag === "0019_role_ladder");
  assert.ok(at > 0, "the role ladder's migration is checked in");
  journal.entries = journal.entries.slice(0, at);
  fs.writeFileSync(journalFile, JSON.stringify(journal));
  return dir;
}

const SEED = [
  `INSERT INTO orgs (id, name) VALUES ('org_ladder000000001', 'acme')`,
  `INSERT INTO users (id, email) VALUES ('usr_fenced', 'fenced@x.test'), ('usr_whole', 'whole@x.test'), ('usr_viewer', 'viewer@x.test')`,
  `INSERT INTO areas (org_id, name, folders, revision) VALUES ('org_ladder000000001', 'proj', '["proj"]', 1)`,
  `INSERT INTO memberships (org_id, user_id, role) VALUES ('org_ladder000000001', 'usr_fenced', 'editor'), ('org_ladder000000001', 'usr_whole', 'editor'), ('org_ladder000000001', 'usr_viewer', 'viewer')`,
  `INSERT INTO member_areas (org_id, user_id, area) VALUES ('org_ladder000000001', 'usr_fenced', 'proj'), ('org_ladder000000001', 'usr_viewer', 'proj')`,
];

for (const leg of dbLegs) {
  describe(`the role ladder's migration on ${leg.name}`, { skip: leg.skip ?? false }, () => {
    test("an editor holding areas becomes a writer with them; one holding none stays an editor", async () => {
      const before = migrationsBeforeLadder();
      const db = await leg.fresh();
      const pgliteDir = fs.mkdtempSync(path.join(os.tmpdir(), "warren-ladder-db-"));
      try {
        if (db.url) {
          const pool = new pg.Pool({ connectionString: db.url, max: 1 });
          try {
            await migratePg(drizzlePg(pool), { migrationsFolder: before });
            for (const q of SEED) await pool.query(q);
          } finally {
            await pool.end();
          }
        } else {
          const client = new PGlite(pgliteDir);
          try {
            await migratePglite(drizzlePglite(client), { migrationsFolder: before });
            for (const q of SEED) await client.query(q);
          } finally {
            await client.close();
          }
        }
        const store = await openStore(db.url ? { databaseUrl: db.url } : { pgliteDir });
        try {
          const rows = (q: string) =>
            store.db.execute(q as never).then((r) => (r as { rows: Record<string, unknown>[] }).rows);
          const roles = await rows(
            `SELECT user_id, role FROM memberships WHERE org_id = 'org_ladder000000001' ORDER BY user_id`,
          );
          assert.deepEqual(
            roles.map((r) => [r.user_id, r.role]),
            [
              ["usr_fenced", "writer"],
              ["usr_viewer", "viewer"],
              ["usr_whole", "editor"],
            ],
          );
          const areas = await rows(`SELECT user_id, area FROM member_areas ORDER BY user_id`);
          assert.deepEqual(
            areas.map((r) => [r.user_id, r.area]),
            [
              ["usr_fenced", "proj"],
              ["usr_viewer", "proj"],
            ],
          );
          const revisions = await rows(
            `SELECT user_id, revision, email, role, areas, by FROM member_revisions`,
          );
          assert.equal(revisions.length, 1, "one revision: the editor made a writer");
          assert.equal(revisions[0]!.user_id, "usr_fenced");
          assert.equal(revisions[0]!.role, "writer");
          assert.deepEqual(revisions[0]!.areas, ["proj"]);
          assert.match(String(revisions[0]!.by), /role ladder/);
        } finally {
          await store.close();
        }
      } finally {
        await db.drop();
        fs.rmSync(before, { recursive: true, force: true });
        fs.rmSync(pgliteDir, { recursive: true, force: true });
      }
    });
  });
}
