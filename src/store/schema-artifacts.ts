// A part of the schema (re-exported by schema.ts, which would pass its bound of lines).
import { foreignKey, index, integer, pgTable, primaryKey, text } from "drizzle-orm/pg-core";
import { at, belongsTo, created, updated } from "./columns.js";
import { orgs } from "./schema.js";

// ---- Artifacts (src/artifacts): notes, memory, scripts and collection records as rows under
// display paths, memory's every revision, and the access lists of notes and collections. No
// foreign key to agents or guilds: the rows outlive them, and the ids in their paths are never
// reused (a reused name is a new id, so fresh rows).

/** One artifact's current content under its display path in its organisation. */
export const artifacts = pgTable(
  "artifacts",
  {
    orgId: belongsTo("org_id", () => orgs.id),
    /** The display path, relative to the organisation: `agents/<agent id>/memory.md`, ... */
    path: text("path").notNull(),
    kind: text("kind", { enum: ["memory", "note", "script", "record"] }).notNull(),
    /** The agent whose memory, note or script it is; null for guild and organisation notes and records. */
    agentId: text("agent_id"),
    content: text("content").notNull(),
    revision: integer("revision").notNull(),
    /** Who wrote the current revision: an agent's id or a person's email. */
    updatedBy: text("updated_by").notNull(),
    updatedAt: updated(),
    createdAt: created(),
  },
  (t) => [primaryKey({ columns: [t.orgId, t.path] }), index("artifacts_agent_idx").on(t.agentId)],
);

/** Every revision of every memory (the current one too); only operators read them. */
export const memoryRevisions = pgTable(
  "memory_revisions",
  {
    orgId: text("org_id").notNull(),
    path: text("path").notNull(),
    revision: integer("revision").notNull(),
    content: text("content").notNull(),
    by: text("by").notNull(),
    at: at("at").notNull().defaultNow(),
  },
  (t) => [
    primaryKey({ columns: [t.orgId, t.path, t.revision] }),
    foreignKey({ columns: [t.orgId, t.path], foreignColumns: [artifacts.orgId, artifacts.path] }).onDelete(
      "cascade",
    ),
  ],
);

/** The access list of a note or a collection (`collections/<name>`): one row a scope. */
export const artifactAccess = pgTable(
  "artifact_access",
  {
    orgId: belongsTo("org_id", () => orgs.id),
    path: text("path").notNull(),
    scope: text("scope", { enum: ["org", "guild", "agent"] }).notNull(),
    subjectId: text("subject_id").notNull(),
    mode: text("mode", { enum: ["read", "write", "none"] }).notNull(),
    createdAt: created(),
  },
  (t) => [primaryKey({ columns: [t.orgId, t.path, t.scope, t.subjectId] })],
);
