// Machines' environments (src/machines/environment.ts), a part of the schema re-exported by
// schema.ts: each revision of a machine's layer (the Debian and npm packages built over its
// base, the build's log) and the proposals that ask for one, decided by an owner or admin.
import { index, integer, jsonb, pgTable, primaryKey, text } from "drizzle-orm/pg-core";
import { at, created } from "./columns.js";
import { machines } from "./schema.js";

/** One package of a layer: its name and the exact version resolved when it was asked for. */
export interface EnvPackage {
  name: string;
  version: string;
}

export const envRevisions = pgTable(
  "env_revisions",
  {
    machineId: text("machine_id")
      .notNull()
      .references(() => machines.id, { onDelete: "cascade" }),
    revision: integer("revision").notNull(),
    packages: jsonb("packages").$type<EnvPackage[]>().notNull(),
    npm: jsonb("npm").$type<EnvPackage[]>().notNull(),
    /** building, ready (the machine may run it) or failed (the machine stayed on its last good one). */
    status: text("status", { enum: ["building", "ready", "failed"] }).notNull(),
    log: text("log").notNull().default(""),
    /** The proposal it was built for, when one. */
    proposalId: text("proposal_id"),
    createdBy: text("created_by").notNull(),
    createdAt: created(),
    finishedAt: at("finished_at"),
  },
  (t) => [primaryKey({ columns: [t.machineId, t.revision] })],
);

export const envProposals = pgTable(
  "env_proposals",
  {
    id: text("id").primaryKey(),
    machineId: text("machine_id")
      .notNull()
      .references(() => machines.id, { onDelete: "cascade" }),
    orgId: text("org_id").notNull(),
    /** The agent whose tool call made it (null: a member through the API). */
    agentId: text("agent_id"),
    proposedBy: text("proposed_by").notNull(),
    packages: jsonb("packages").$type<EnvPackage[]>().notNull(),
    npm: jsonb("npm").$type<EnvPackage[]>().notNull(),
    why: text("why").notNull(),
    state: text("state", { enum: ["pending", "approved", "refused"] }).notNull(),
    decidedBy: text("decided_by"),
    decidedAt: at("decided_at"),
    /** The revision its approval built. */
    revision: integer("revision"),
    createdAt: created(),
  },
  (t) => [index("env_proposals_machine_idx").on(t.machineId, t.createdAt)],
);
