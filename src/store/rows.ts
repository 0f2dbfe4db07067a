// The rows of the tables services pass around, and the one test of what a failed write
// means, spelled once.
import type * as schema from "./schema.js";

export type AgentRow = typeof schema.agents.$inferSelect;
export type AgentInsert = typeof schema.agents.$inferInsert;
export type MachineRow = typeof schema.machines.$inferSelect;
export type MachineInsert = typeof schema.machines.$inferInsert;
export type RunInsert = typeof schema.runs.$inferInsert;
export type EgressInsert = typeof schema.egressEvents.$inferInsert;
export type SecretRow = typeof schema.secrets.$inferSelect;
export type GrantRow = typeof schema.secretGrants.$inferSelect;

/** The SQLSTATE of a failed statement, found through the driver's causes. */
export function pgCode(e: unknown): string | undefined {
  for (let cur: unknown = e; cur && typeof cur === "object"; cur = (cur as { cause?: unknown }).cause) {
    const code = (cur as { code?: unknown }).code;
    if (typeof code === "string" && /^[0-9A-Z]{5}$/.test(code)) return code;
  }
  return undefined;
}

/** A unique constraint refused the write (another row holds the value). */
export const isUniqueViolation = (e: unknown): boolean => pgCode(e) === "23505";

/** A foreign key refused the write (the row it names is gone). */
export const isForeignKeyViolation = (e: unknown): boolean => pgCode(e) === "23503";
