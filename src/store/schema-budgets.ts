// Budgets (src/budgets/ledger.ts), a part of the schema re-exported by schema.ts: an
// organisation's limits of dollars and tokens per day and per month, for the organisation and
// per agent, and what each period used and holds (the reservations of calls under way).
import { bigint, doublePrecision, pgTable, primaryKey, text } from "drizzle-orm/pg-core";
import { belongsTo, updated } from "./columns.js";
import { orgs } from "./schema.js";

/** One limit: of the organisation (agent_id "") or of one agent, for a day or a month. */
export const orgBudgets = pgTable(
  "org_budgets",
  {
    orgId: belongsTo("org_id", () => orgs.id),
    /** "" for the organisation as a whole. */
    agentId: text("agent_id").notNull(),
    period: text("period").$type<"day" | "month">().notNull(),
    maxUsd: doublePrecision("max_usd"),
    maxTokens: bigint("max_tokens", { mode: "number" }),
    updatedBy: text("updated_by").notNull(),
    updatedAt: updated(),
  },
  (t) => [primaryKey({ columns: [t.orgId, t.agentId, t.period] })],
);

/**
 * What one period (a UTC day "2026-12-02" or month "2026-12") of the organisation ("") or of
 * an agent used, and what the calls under way hold: a call reserves its maximum here before it
 * is sent (the rows locked) and is settled with its real usage once recorded.
 */
export const budgetUsage = pgTable(
  "budget_usage",
  {
    orgId: belongsTo("org_id", () => orgs.id),
    agentId: text("agent_id").notNull(),
    period: text("period").$type<"day" | "month">().notNull(),
    periodStart: text("period_start").notNull(),
    spentTokens: bigint("spent_tokens", { mode: "number" }).notNull().default(0),
    spentUsd: doublePrecision("spent_usd").notNull().default(0),
    reservedTokens: bigint("reserved_tokens", { mode: "number" }).notNull().default(0),
    reservedUsd: doublePrecision("reserved_usd").notNull().default(0),
  },
  (t) => [primaryKey({ columns: [t.orgId, t.agentId, t.period, t.periodStart] })],
);
