// The two database legs every store-touching suite runs on: PGlite, and the real PostgreSQL
// server that scripts/test.sh starts (WARREN_TEST_DATABASE_URL). Without that server the
// postgres leg is reported as skipped with its reason, or fails under WARREN_REQUIRE_POSTGRES=1.
import { randomBytes } from "node:crypto";
import pg from "pg";

export interface DbLeg {
  name: "pglite" | "postgres";
  /** Why the leg cannot run here, or null. */
  skip: string | null;
  /** A fresh, empty database for one suite: a URL (postgres) or undefined (PGlite). */
  fresh(): Promise<{ url: string | undefined; drop(): Promise<void> }>;
}

const adminUrl = process.env.WARREN_TEST_DATABASE_URL;

export const dbLegs: DbLeg[] = [
  {
    name: "pglite",
    skip: null,
    fresh: async () => ({ url: undefined, drop: async () => {} }),
  },
  {
    name: "postgres",
    skip: adminUrl
      ? null
      : "no PostgreSQL server: WARREN_TEST_DATABASE_URL is unset (scripts/test.sh starts one)",
    fresh: async () => {
      if (!adminUrl) throw new Error("WARREN_TEST_DATABASE_URL is unset");
      const name = `t_${randomBytes(6).toString("hex")}`;
      const admin = new pg.Client({ connectionString: adminUrl });
      await admin.connect();
      try {
        await admin.query(`CREATE DATABASE ${name}`);
      } finally {
        await admin.end();
      }
      const u = new URL(adminUrl);
      u.pathname = `/${name}`;
      return {
        url: u.toString(),
        drop: async () => {
          const c = new pg.Client({ connectionString: adminUrl });
          await c.connect();
          try {
            await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
          } finally {
            await c.end();
          }
        },
      };
    },
  },
];

if (process.env.WARREN_REQUIRE_POSTGRES === "1" && !adminUrl) {
  throw new Error(
    "WARREN_REQUIRE_POSTGRES=1 but WARREN_TEST_DATABASE_URL is unset: the postgres leg cannot be skipped here",
  );
}
