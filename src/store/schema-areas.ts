// A part of the schema (re-exported by schema.ts, which would pass its bound of lines).
import { foreignKey, integer, jsonb, pgTable, primaryKey, text } from "drizzle-orm/pg-core";
import { at, belongsTo, created, updated } from "./columns.js";
import { orgs, memberships, conversations } from "./schema.js";

// ---------------------------------------------------------------------------------------------
// Areas, tiers and branches: named sets of folders of an agent's home, defined once per
// organisation, every change kept as a revision, and handed to members (who then see only those
// folders); and a conversation's own git branch and worktree.

/** An area as it is now: its folders (paths relative to the home) and its last revision. */
export const areas = pgTable(
  "areas",
  {
    orgId: belongsTo("org_id", () => orgs.id),
    name: text("name").notNull(),
    folders: jsonb("folders").$type<string[]>().notNull(),
    revision: integer("revision").notNull(),
    updatedAt: updated(),
  },
  (t) => [primaryKey({ columns: [t.orgId, t.name] })],
);

/** Every change of an area: its folders after the change, who made it and when. */
export const areaRevisions = pgTable(
  "area_revisions",
  {
    orgId: belongsTo("org_id", () => orgs.id),
    name: text("name").notNull(),
    revision: integer("revision").notNull(),
    /** null: the area was deleted by this revision. */
    folders: jsonb("folders").$type<string[] | null>(),
    by: text("by").notNull(),
    at: at("at").notNull().defaultNow(),
  },
  (t) => [primaryKey({ columns: [t.orgId, t.name, t.revision] })],
);

/** The areas a member holds (none: the whole home, as their role allows). */
export const memberAreas = pgTable(
  "member_areas",
  {
    orgId: text("org_id").notNull(),
    userId: text("user_id").notNull(),
    area: text("area").notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.orgId, t.userId, t.area] }),
    foreignKey({
      columns: [t.orgId, t.userId],
      foreignColumns: [memberships.orgId, memberships.userId],
    }).onDelete("cascade"),
  ],
);

/**
 * Every change of a member's access in an organisation: their role and areas after it (role
 * null: removed), who made it and when. A member's last revision is what a preview session
 * was opened under: any later change ends it.
 */
export const memberRevisions = pgTable(
  "member_revisions",
  {
    orgId: belongsTo("org_id", () => orgs.id),
    userId: text("user_id").notNull(),
    revision: integer("revision").notNull(),
    email: text("email").notNull(),
    /** null: the member was removed by this revision. */
    role: text("role"),
    areas: jsonb("areas").$type<string[]>().notNull(),
    by: text("by").notNull(),
    at: at("at").notNull().defaultNow(),
  },
  (t) => [primaryKey({ columns: [t.orgId, t.userId, t.revision] })],
);

/**
 * A conversation's branch: created with `repo` (a git repository folder of the home), it works
 * on `branch` in its own worktree (a folder of the home), made from `base`, the repository's
 * branch when it was created; null worktree: removed (the conversation closed), branch kept.
 */
export const conversationBranches = pgTable("conversation_branches", {
  conversationId: text("conversation_id")
    .primaryKey()
    .references(() => conversations.id, { onDelete: "cascade" }),
  repo: text("repo").notNull(),
  branch: text("branch").notNull(),
  base: text("base").notNull(),
  worktree: text("worktree"),
  landedCommit: text("landed_commit"),
  createdAt: created(),
});
