// Versions, canary, evaluations, approvals (src/versions): the records that outlive their agent,
// kept apart from schema.ts (which re-exports them) so that no file grows past its bound.
import { index, integer, jsonb, pgTable, real, text, timestamp } from "drizzle-orm/pg-core";

const created = () => timestamp("created_at", { withTimezone: true, mode: "date" }).notNull().defaultNow();

/**
 * A person's decision on one exact tool call: the run and the model's call id, the tool, its
 * arguments (as recorded, redacted) and their SHA-256, the spec version whose policy asked.
 */
export const approvals = pgTable(
  "approvals",
  {
    id: text("id").primaryKey(),
    orgId: text("org_id").notNull(),
    agentId: text("agent_id").notNull(),
    runId: text("run_id").notNull(),
    toolCallId: text("tool_call_id").notNull(),
    tool: text("tool").notNull(),
    arguments: jsonb("arguments").notNull(),
    argsSha256: text("args_sha256").notNull(),
    policyVersion: integer("policy_version"),
    policies: jsonb("policies").$type<string[]>().notNull(),
    status: text("status", { enum: ["waiting", "allowed", "denied", "expired"] }).notNull(),
    message: text("message"),
    decidedBy: text("decided_by"),
    createdAt: created(),
    decidedAt: timestamp("decided_at", { withTimezone: true, mode: "date" }),
  },
  (t) => [index("approvals_run_idx").on(t.runId), index("approvals_org_status_idx").on(t.orgId, t.status)],
);

/** One evaluation of a version by a suite: each case a real run of that version, and the verdict. */
export const evalRuns = pgTable(
  "eval_runs",
  {
    id: text("id").primaryKey(),
    orgId: text("org_id").notNull(),
    agentId: text("agent_id").notNull(),
    suiteId: text("suite_id").notNull(),
    suiteName: text("suite_name").notNull(),
    version: integer("version").notNull(),
    status: text("status", { enum: ["running", "passed", "failed", "error"] }).notNull(),
    passRate: real("pass_rate"),
    cases: jsonb("cases").notNull(),
    startedBy: text("started_by").notNull(),
    createdAt: created(),
    endedAt: timestamp("ended_at", { withTimezone: true, mode: "date" }),
  },
  (t) => [index("eval_runs_agent_idx").on(t.agentId, t.version)],
);

/** Evidence packs: the governance record of a period, as gzipped JSON Lines chained by SHA-256. */
export const evidencePacks = pgTable(
  "evidence_packs",
  {
    id: text("id").primaryKey(),
    orgId: text("org_id").notNull(),
    fromAt: timestamp("from_at", { withTimezone: true, mode: "date" }).notNull(),
    toAt: timestamp("to_at", { withTimezone: true, mode: "date" }).notNull(),
    agentIds: jsonb("agent_ids").$type<string[] | null>(),
    createdBy: text("created_by").notNull(),
    sha256: text("sha256").notNull(),
    bytes: integer("bytes").notNull(),
    /** The gzipped pack, base64. */
    content: text("content").notNull(),
    createdAt: created(),
  },
  (t) => [index("evidence_packs_org_idx").on(t.orgId, t.createdAt)],
);

/** An organisation's guardrails, written by its admins: a Cedar policy every tool decision must also pass. */
export const orgGuardrails = pgTable("org_guardrails", {
  orgId: text("org_id").primaryKey(),
  toolPolicy: text("tool_policy").notNull(),
  updatedBy: text("updated_by").notNull(),
  updatedAt: timestamp("updated_at", { withTimezone: true, mode: "date" }).notNull().defaultNow(),
});
