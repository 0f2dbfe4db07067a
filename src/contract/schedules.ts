// Schedules (standing orders to run an agent) and guild dispatch. The wire contract of
// docs/api.md, "Schedules" and "Guild dispatch".
import { z } from "zod";
import { items } from "./common.js";
import { COMMAND_LIMITS } from "./lists.js";
import { argvField, commandField } from "./exec.js";

export const ScheduleOverlap = z
  .enum(["skip", "queue_one", "allow"])
  .describe(
    "skip (default): no fire while a run of the schedule is queued or going on; queue_one: at most one waits behind it; allow: every fire starts a run (queued behind the agent's work)",
  );
export const ScheduleCatchUp = z
  .enum(["one", "none"])
  .describe(
    "one (default): fires missed while the server was down become a single run; none: they are dropped",
  );

const when = z.iso.datetime({ offset: true }).describe("an ISO-8601 time");
const cron = z
  .string()
  .min(1)
  .max(200)
  .describe("5 fields (minute hour day-of-month month day-of-week), or @daily-style");
const everyS = z
  .number()
  .int("must be a whole number of seconds")
  .min(1)
  .max(366 * 24 * 3600)
  .describe("every this many seconds from start_at (or the schedule's creation)");
const timezone = z.string().min(1).max(64).describe("an IANA time zone the cron is read in (default UTC)");
const input = z
  .string()
  .max(4 * 1024 * 1024)
  .describe("the input of each run (/agent/input): at most 256 KiB");

/** The fields a schedule is made of; every one may be changed afterwards. */
const fields = {
  name: z.string().max(100).optional(),
  cron: cron.optional(),
  every_s: everyS.optional(),
  timezone: timezone.optional(),
  kind: z.enum(["agent", "command"]).optional().describe("the run's kind: agent (default) or command"),
  command: commandField.optional(),
  argv: argvField.optional(),
  input: input.optional(),
  timeout_s: z.number().int().min(1).max(COMMAND_LIMITS.runTimeoutSMax).optional(),
  overlap: ScheduleOverlap.optional(),
  catch_up: ScheduleCatchUp.optional(),
  paused: z
    .boolean()
    .optional()
    .describe("a paused schedule does not fire; unpausing it clears its failures"),
  start_at: when.optional().describe("no fire before this time"),
  end_at: when.optional().describe("no fire after this time"),
};

export const ScheduleCreateRequest = z
  .object(fields)
  .strict()
  .refine((b) => (b.cron === undefined) !== (b.every_s === undefined), {
    message: "give exactly one of cron or every_s",
    path: ["cron"],
  })
  .meta({ id: "ScheduleCreateRequest" });

export const ScheduleUpdateRequest = z
  .object({
    ...fields,
    cron: cron.nullable().optional().describe("setting one of cron and every_s clears the other"),
    every_s: everyS.nullable().optional(),
    command: commandField.nullable().optional(),
    argv: argvField.nullable().optional(),
    timeout_s: z.number().int().min(1).max(COMMAND_LIMITS.runTimeoutSMax).nullable().optional(),
    start_at: when.nullable().optional(),
    end_at: when.nullable().optional(),
  })
  .strict()
  .meta({ id: "ScheduleUpdateRequest" });

export const Schedule = z
  .object({
    id: z.string(),
    agent_id: z.string(),
    org_id: z.string(),
    name: z.string(),
    cron: z.string().nullable(),
    every_s: z.number().nullable(),
    timezone: z.string(),
    kind: z.enum(["agent", "command"]),
    command: z.string().nullable(),
    argv: z.array(z.string()).nullable(),
    input: z.string(),
    timeout_s: z.number().nullable(),
    overlap: ScheduleOverlap,
    catch_up: ScheduleCatchUp,
    paused: z.boolean(),
    paused_reason: z
      .string()
      .nullable()
      .describe("why the schedule paused itself (three failed runs in a row)"),
    start_at: z.string().nullable(),
    end_at: z.string().nullable(),
    next_fire_at: z.string().nullable().describe("the next slot it fires at; null when paused or ended"),
    last_fired_at: z.string().nullable().describe("the latest slot it fired for (or passed over)"),
    failures: z.number().describe("its runs that failed in a row; three pause it"),
    skipped: z.number().describe("fires skipped by its overlap policy"),
    last_error: z.string().nullable().describe("why its latest fire could not start a run, if it could not"),
    created_by: z.object({ user_id: z.string(), email: z.string() }),
    created_at: z.string(),
  })
  .meta({ id: "Schedule" });
export const ScheduleList = items(Schedule, "ScheduleList");

export const ScheduleTriggered = z.object({ run_id: z.string() }).meta({ id: "ScheduleTriggered" });

export const GuildMessageRequest = z
  .object({
    text: z
      .string()
      .min(1, "must not be empty")
      .max(4 * 1024 * 1024)
      .describe("the message: at most 256 KiB (413 run.input_too_large)"),
    fan_out: z
      .boolean()
      .optional()
      .describe("true: to every agent of the guild; false (default): to one, the least busy, then in turn"),
  })
  .strict()
  .meta({ id: "GuildMessageRequest" });

export const GuildMessage = z
  .object({
    id: z.string(),
    guild_id: z.string(),
    text: z.string(),
    fan_out: z.boolean(),
    status: z.enum(["queued", "dispatched", "failed"]),
    status_reason: z.string().nullable(),
    targets: z
      .array(z.object({ agent_id: z.string(), conversation_id: z.string(), run_id: z.string() }))
      .describe("where it went: each agent's conversation with the guild and the turn it started"),
    author: z.object({ user_id: z.string(), email: z.string() }),
    created_at: z.string(),
    dispatched_at: z.string().nullable(),
  })
  .meta({ id: "GuildMessage" });
export const GuildMessageList = items(GuildMessage, "GuildMessageList");
