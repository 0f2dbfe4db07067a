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
import { getTableName } from "drizzle-orm";
import { PgTable } from "drizzle-orm/pg-core";
import { Changes, Memo, trackPglite, trackPool } from "./changes.js";

export type { Memo };
import * as schema from "./schema.js";

export { schema };
export type Db = PgDatabase<PgQueryResultHKT, typeof schema>;

const tables = (Object.values(schema) as unknown[]).filter((v): v is PgTable => v instanceof PgTable);
const changesOf = new WeakMap<object, Changes>();

/**
 * A memo of rows read through `db`, served while `from` (the tables they were read from)
 * are unchanged; a db not opened by openStore memoises nothing.
 */
export function memo<K, V>(db: Db, from: readonly PgTable[], max?: number): Memo<K, V> {
  return new Memo(changesOf.get(db), from.map(getTableName), max);
}

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
    const changes = new Changes(tables);
    const pool = new pg.Pool({ connectionString: opts.databaseUrl, max: 10 });
    // an idle connection the server ended (a restart, a terminated backend, a dropped
    // database) is an error of the pool's, not of any query: the pool drops that client and
    // the next query connects anew; unheard, it would end the process
    pool.on("error", () => undefined);
    const db = drizzlePg(trackPool(pool, changes), { schema });
    try {
      await migratePg(db, { migrationsFolder });
    } catch (err) {
      await pool.end();
      throw err;
    }
    changesOf.set(db, changes);
    return { db: db as unknown as Db, kind: "postgres", close: () => pool.end() };
  }
  if (opts.pgliteDir) await mkdir(opts.pgliteDir, { recursive: true });
  const client = opts.pgliteDir ? new PGlite(opts.pgliteDir) : new PGlite();
  const changes = new Changes(tables);
  const db = drizzlePglite(trackPglite(client, changes), { schema });
  try {
    await migratePglite(db, { migrationsFolder });
  } catch (err) {
    await client.close();
    throw err;
  }
  changesOf.set(db, changes);
  return { db: db as unknown as Db, kind: "pglite", close: () => client.close() };
}

export * from "./rows.js";
