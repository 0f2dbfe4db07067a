// The store: Drizzle over PGlite (embedded, under STATE_ROOT/pglite) or node-postgres
// (DATABASE_URL). Migrations are checked in under drizzle/ and applied at open, all
// pending ones in one transaction.
import { mkdir } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { PGlite } from "@electric-sql/pglite";
import type { PgDatabase, PgQueryResultHKT } from "drizzle-orm/pg-core";
import { drizzle as drizzlePglite } from "drizzle-orm/pglite";
import { migrate as migratePglite } from "drizzle-orm/pglite/migrator";
import { drizzle as drizzlePg } from "drizzle-orm/node-postgres";
import { migrate as migratePg } from "drizzle-orm/node-postgres/migrator";
import pg from "pg";
import * as schema from "./schema.js";

export { schema };
export type Db = PgDatabase<PgQueryResultHKT, typeof schema>;

export interface Store {
  db: Db;
  kind: "pglite" | "postgres";
  close(): Promise<void>;
}

/** The checked-in migrations folder, found from this file in src/ or dist/. */
export const migrationsFolder = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../drizzle");

export interface StoreOptions {
  /** A PostgreSQL URL; when absent, PGlite under `pgliteDir` (or in memory when that is absent too). */
  databaseUrl?: string | undefined;
  pgliteDir?: string | undefined;
}

export async function openStore(opts: StoreOptions): Promise<Store> {
  if (opts.databaseUrl) {
    const pool = new pg.Pool({ connectionString: opts.databaseUrl, max: 10 });
    const db = drizzlePg(pool, { schema });
    try {
      await migratePg(db, { migrationsFolder });
    } catch (err) {
      await pool.end();
      throw err;
    }
    return { db: db as unknown as Db, kind: "postgres", close: () => pool.end() };
  }
  if (opts.pgliteDir) await mkdir(opts.pgliteDir, { recursive: true });
  const client = opts.pgliteDir ? new PGlite(opts.pgliteDir) : new PGlite();
  const db = drizzlePglite(client, { schema });
  try {
    await migratePglite(db, { migrationsFolder });
  } catch (err) {
    await client.close();
    throw err;
  }
  return { db: db as unknown as Db, kind: "pglite", close: () => client.close() };
}
