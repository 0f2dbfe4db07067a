// Columns every part of the schema uses (a leaf module: the schema's files import it, never
// each other, so no part is read before the one it needs).
import { type AnyPgColumn, text, timestamp } from "drizzle-orm/pg-core";

/** A moment: a time with its zone (timestamptz), read as a Date. */
export const at = (name: string) => timestamp(name, { withTimezone: true, mode: "date" });

/** When the row was made. */
export const created = () => at("created_at").notNull().defaultNow();

/** When the row was last changed (set by its writers). */
export const updated = () => at("updated_at").notNull().defaultNow();

/**
 * A row's owner: a column naming another table's row (given lazily: this module imports no
 * part of the schema), the row going with it, or (`restrict`) holding it.
 */
export const belongsTo = (
  name: string,
  to: () => AnyPgColumn,
  onDelete: "cascade" | "restrict" = "cascade",
) => text(name).notNull().references(to, { onDelete });
