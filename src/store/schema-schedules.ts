// A part of the schema (re-exported by schema.ts, which would pass its bound of lines).
import { sql } from "drizzle-orm";
import { boolean, check, index, integer, jsonb, pgTable, primaryKey, text } from "drizzle-orm/pg-core";
import { at, belongsTo, created } from "./columns.js";
import { agents, guilds, conversations } from "./schema.js";

// ---- Schedules and guild dispatch ----

/** A standing order to run an agent (src/schedules); catch-up starts from `last_slot_at`. */
export const schedules = pgTable(
  "schedules",
  {
    id: text("id").primaryKey(),
    orgId: text("org_id").notNull(),
    agentId: belongsTo("agent_id", () => agents.id),
    cron: text("cron"),
    everyS: integer("every_s"),
    timezone: text("timezone").notNull().default("UTC"),
    run: jsonb("run").$type<Record<string, unknown>>().notNull(),
    overlap: text("overlap", { enum: ["skip", "queue_one", "allow"] }).notNull(),
    catchUp: text("catch_up", { enum: ["one", "none"] }).notNull(),
    paused: boolean("paused").notNull().default(false),
    pausedReason: text("paused_reason"),
    startAt: at("start_at"),
    endAt: at("end_at"),
    createdBy: jsonb("created_by").$type<{ user_id: string; email: string }>().notNull(),
    lastSlotAt: at("last_slot_at"),
    failures: integer("failures").notNull().default(0),
    skipped: integer("skipped").notNull().default(0),
    lastError: text("last_error"),
    createdAt: created(),
  },
  (t) => [
    index("schedules_agent_idx").on(t.agentId, t.createdAt),
    check("schedules_one_timing", sql`(${t.cron} is null) <> (${t.everyS} is null)`),
  ],
);

/** The runs a schedule started: the run, its schedule and the slot it was for (runs outlive both). */
export const scheduleRuns = pgTable(
  "schedule_runs",
  {
    runId: text("run_id").primaryKey(),
    scheduleId: text("schedule_id").notNull(),
    scheduledFor: at("scheduled_for").notNull(),
    createdAt: created(),
  },
  (t) => [index("schedule_runs_schedule_idx").on(t.scheduleId, t.createdAt)],
);

/** Messages to a guild, queued durably until its dispatcher hands them out (src/dispatch). */
export const guildMessages = pgTable(
  "guild_messages",
  {
    id: text("id").primaryKey(),
    guildId: belongsTo("guild_id", () => guilds.id),
    orgId: text("org_id").notNull(),
    text: text("text").notNull(),
    fanOut: boolean("fan_out").notNull().default(false),
    author: jsonb("author").$type<{ user_id: string; email: string }>().notNull(),
    status: text("status", { enum: ["queued", "dispatched", "failed"] }).notNull(),
    statusReason: text("status_reason"),
    targets: jsonb("targets")
      .$type<{ agent_id: string; conversation_id: string; run_id: string }[]>()
      .notNull()
      .default([]),
    createdAt: created(),
    dispatchedAt: at("dispatched_at"),
  },
  (t) => [index("guild_messages_guild_idx").on(t.guildId, t.status, t.createdAt)],
);

/** The conversation each agent of a guild holds with that guild (its dispatched messages' turns). */
export const guildConversations = pgTable(
  "guild_conversations",
  {
    guildId: belongsTo("guild_id", () => guilds.id),
    agentId: belongsTo("agent_id", () => agents.id),
    conversationId: belongsTo("conversation_id", () => conversations.id),
  },
  (t) => [primaryKey({ columns: [t.guildId, t.agentId] })],
);
