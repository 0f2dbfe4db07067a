// Versions, canary, evaluations, approvals (src/versions), a part of the schema re-exported by
// schema.ts (which would pass its bound of lines): the records that outlive their agent (no
// foreign key), then the versions' authors, canaries, suites and gates, which go with it.
import { index, integer, jsonb, pgTable, primaryKey, real, text, uniqueIndex } from "drizzle-orm/pg-core";
import { at, belongsTo, created, updated } from "./columns.js";
import { agents, conversations } from "./schema.js";

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
    /** Who the asking permits name to decide (emails, roles); empty: owners, admins, editors. */
    deciders: jsonb("deciders").$type<string[]>().notNull().default([]),
    status: text("status", { enum: ["waiting", "allowed", "denied", "expired"] }).notNull(),
    message: text("message"),
    decidedBy: text("decided_by"),
    createdAt: created(),
    decidedAt: at("decided_at"),
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
    endedAt: at("ended_at"),
  },
  (t) => [index("eval_runs_agent_idx").on(t.agentId, t.version)],
);

/** Evidence packs: the governance record of a period, as gzipped JSON Lines chained by SHA-256. */
export const evidencePacks = pgTable(
  "evidence_packs",
  {
    id: text("id").primaryKey(),
    orgId: text("org_id").notNull(),
    fromAt: at("from_at").notNull(),
    toAt: at("to_at").notNull(),
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
  /** Hosts, domains below (*.example.com) and addresses or CIDRs no agent's program may reach, whatever its policy allows. */
  networkDeny: jsonb("network_deny").$type<string[]>().notNull().default([]),
  /** Days run outputs and traces are kept; null: kept for ever. */
  retentionDays: integer("retention_days"),
  updatedBy: text("updated_by").notNull(),
  updatedAt: updated(),
});

// the versions' authors, canaries, suites and gates (these go with their agent)

/** Who wrote each version of an agent's spec (agent_specs), and when. */
export const agentVersionAuthors = pgTable(
  "agent_version_authors",
  {
    agentId: belongsTo("agent_id", () => agents.id),
    version: integer("version").notNull(),
    createdBy: text("created_by").notNull(),
    createdAt: created(),
  },
  (t) => [primaryKey({ columns: [t.agentId, t.version] })],
);

/** An agent's canary: a share of its runs sent to another version, sticky by routing key. */
export const agentCanaries = pgTable("agent_canaries", {
  agentId: text("agent_id")
    .primaryKey()
    .references(() => agents.id, { onDelete: "cascade" }),
  version: integer("version").notNull(),
  share: real("share").notNull(),
  startedBy: text("started_by").notNull(),
  createdAt: created(),
});

/** An agent's evaluation suites: cases (an input and what the answer must hold) and a pass rate. */
export const evalSuites = pgTable(
  "eval_suites",
  {
    id: text("id").primaryKey(),
    orgId: text("org_id").notNull(),
    agentId: belongsTo("agent_id", () => agents.id),
    name: text("name").notNull(),
    cases: jsonb("cases").notNull(),
    passRate: real("pass_rate").notNull(),
    createdBy: text("created_by").notNull(),
    createdAt: created(),
  },
  (t) => [uniqueIndex("eval_suites_agent_name_uq").on(t.agentId, t.name)],
);

/** An agent's evaluation gate: making a version current needs a passed evaluation by this suite. */
export const agentEvalGates = pgTable("agent_eval_gates", {
  agentId: text("agent_id")
    .primaryKey()
    .references(() => agents.id, { onDelete: "cascade" }),
  suiteName: text("suite_name").notNull(),
});

/**
 * Every change of an agent's evaluation gate: the suite it names after the change (null: the
 * gate was turned off), who made it and when.
 */
export const agentEvalGateChanges = pgTable(
  "agent_eval_gate_changes",
  {
    agentId: belongsTo("agent_id", () => agents.id),
    revision: integer("revision").notNull(),
    suiteName: text("suite_name"),
    by: text("by").notNull(),
    createdAt: created(),
  },
  (t) => [primaryKey({ columns: [t.agentId, t.revision] })],
);

/**
 * The version a conversation keeps for its whole life when the canary chose it at its start
 * (sticky by its routing key); a conversation without a row runs the current version.
 */
export const conversationVersions = pgTable("conversation_versions", {
  conversationId: text("conversation_id")
    .primaryKey()
    .references(() => conversations.id, { onDelete: "cascade" }),
  version: integer("version").notNull(),
});
