// Columns every part of the schema uses (a leaf module: the schema's files import it, never
// each other, so no part is read before the one it needs).
import { timestamp } from "drizzle-orm/pg-core";

/** When the row was made. */
export const created = () =>
  timestamp("created_at", { withTimezone: true, mode: "date" }).notNull().defaultNow();
