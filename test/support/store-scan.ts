// What the suites that keep a value out of the store share: every table of the server's store
// whose rows, as text, hold the value in the clear.
import { sql, type SQL } from "drizzle-orm";
import type { TestServer } from "./server.js";

/** The tables of `t`'s store with a row whose text holds `needle`. */
export async function tablesHolding(t: TestServer, needle: string): Promise<string[]> {
  const db = t.server.store.db;
  const rowsOf = async <T>(q: SQL): Promise<T[]> => {
    const res: unknown = await db.execute(q);
    return (res as { rows: T[] }).rows;
  };
  const tables = await rowsOf<{ table_name: string }>(
    sql`select table_name from information_schema.tables where table_schema = current_schema() and table_type = 'BASE TABLE'`,
  );
  const holding: string[] = [];
  const like = needle.replace(/'/g, "''").replace(/[\\%_]/g, (c) => `\\${c}`);
  for (const { table_name } of tables) {
    const [row] = await rowsOf<{ n: number }>(
      sql.raw(`select count(*)::int as n from "${table_name}" t where t::text like '%${like}%'`),
    );
    if ((row?.n ?? 0) > 0) holding.push(table_name);
  }
  return holding;
}
