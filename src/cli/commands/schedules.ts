// `warren schedules ...`: standing orders to run an agent, by cron or every N seconds.
import type { Schedule, ScheduleCreateRequest, ScheduleUpdateRequest } from "../../sdk/index.js";
import { defineCommand, defineGroup, type Input, type OptionDef } from "../command.js";
import { detailView, listView, short, type Column } from "../format.js";
import { commandOption } from "../options.js";

export const scheduleColumns: Column<Schedule>[] = [
  { header: "ID", value: (s) => s.id },
  { header: "WHEN", value: (s) => (s.cron !== null ? `${s.cron} (${s.timezone})` : `every ${s.every_s} s`) },
  {
    header: "RUNS",
    value: (s) => (s.kind === "agent" ? "(agent)" : short(s.command ?? (s.argv ?? []).join(" "), 30)),
  },
  { header: "NEXT", value: (s) => s.next_fire_at ?? (s.paused ? "paused" : "-") },
  { header: "FAILURES", value: (s) => s.failures },
];

const timingOptions: readonly OptionDef[] = [
  { name: "cron", value: "<expr>", help: 'five cron fields, e.g. "0 9 * * mon-fri", or @daily' },
  { name: "every-s", value: "<s>", help: "every this many seconds instead of a cron" },
  { name: "timezone", value: "<tz>", help: "the time zone the cron is read in (default UTC)" },
  { name: "input", value: "<text>", help: "the input of each run (/agent/input)" },
  commandOption,
  { name: "timeout-s", value: "<s>", help: "each run's time limit, in seconds" },
  {
    name: "overlap",
    value: "<policy>",
    help: "skip (default), queue_one or allow: what a fire does while the last run goes on",
  },
  {
    name: "catch-up",
    value: "<policy>",
    help: "one (default) or none: fires missed while the server was down",
  },
  { name: "start-at", value: "<time>", help: "no fire before this ISO-8601 time" },
  { name: "end-at", value: "<time>", help: "no fire after this ISO-8601 time" },
  { name: "name", value: "<name>", help: "a name for people" },
];

function oneOf<T extends string>(i: Input, name: string, values: readonly T[]): T | undefined {
  const v = i.str(name);
  if (v === undefined) return undefined;
  if (!(values as readonly string[]).includes(v))
    throw i.error(`--${name} must be one of ${values.join(", ")}`);
  return v as T;
}

/** The fields given on the command line (a command after -- or --command makes a command run). */
function readFields(i: Input): ScheduleUpdateRequest {
  const command = i.str("command");
  if (command !== undefined && i.rest.length > 0)
    throw i.error("give the command after -- or as --command, not both");
  const target =
    command !== undefined
      ? { kind: "command" as const, command }
      : i.rest.length > 0
        ? { kind: "command" as const, argv: [...i.rest] }
        : {};
  const every = i.whole("every-s");
  const timeout = i.whole("timeout-s");
  const body: ScheduleUpdateRequest = {
    ...target,
    ...(i.str("cron") !== undefined ? { cron: i.str("cron") } : {}),
    ...(every !== undefined ? { every_s: every } : {}),
    ...(i.str("timezone") !== undefined ? { timezone: i.str("timezone") } : {}),
    ...(i.str("input") !== undefined ? { input: i.str("input") } : {}),
    ...(timeout !== undefined ? { timeout_s: timeout } : {}),
    ...(i.str("start-at") !== undefined ? { start_at: i.str("start-at") } : {}),
    ...(i.str("end-at") !== undefined ? { end_at: i.str("end-at") } : {}),
    ...(i.str("name") !== undefined ? { name: i.str("name") } : {}),
  };
  const overlap = oneOf(i, "overlap", ["skip", "queue_one", "allow"] as const);
  const catchUp = oneOf(i, "catch-up", ["one", "none"] as const);
  if (overlap) body.overlap = overlap;
  if (catchUp) body.catch_up = catchUp;
  return body;
}

const scheduleArg = (i: Input) => ({ id: i.arg("schedule") });

export const schedules = defineGroup(
  "schedules",
  "standing orders to run an agent (cron or every N seconds)",
  {
    create: defineCommand({
      summary:
        "schedule an agent: by --cron or --every-s; a command after -- (or --command), else the agent on --input",
      args: ["agent"],
      options: [...timingOptions, { name: "paused", help: "create it paused" }],
      rest: true,
      parse: (i) => {
        const fields = readFields(i);
        if ((fields.cron === undefined) === (fields.every_s === undefined))
          throw i.error("give exactly one of --cron or --every-s");
        const body = { ...fields, ...(i.flag("paused") ? { paused: true } : {}) } as ScheduleCreateRequest;
        return { agentId: i.arg("agent"), body };
      },
      run: async (ctx, p) => {
        const s = await ctx.client.schedules.create(p.agentId, p.body);
        return ctx.show(s, () => detailView(s));
      },
    }),
    list: defineCommand({
      summary: "list an agent's schedules",
      args: ["agent"],
      parse: (i) => ({ agentId: i.arg("agent") }),
      run: async (ctx, p) => {
        const list = await ctx.client.schedules.list(p.agentId);
        return ctx.show(list, () => listView("schedules", scheduleColumns, list.items));
      },
    }),
    get: defineCommand({
      summary: "show a schedule: its next slot, failures in a row, why it paused",
      args: ["schedule"],
      parse: scheduleArg,
      run: async (ctx, p) => {
        const s = await ctx.client.schedules.get(p.id);
        return ctx.show(s, () => detailView(s));
      },
    }),
    update: defineCommand({
      summary: "change a schedule's fields",
      args: ["schedule"],
      options: timingOptions,
      rest: true,
      parse: (i) => {
        const body = readFields(i);
        if (Object.keys(body).length === 0) throw i.error("give at least one field to change");
        return { id: i.arg("schedule"), body };
      },
      run: async (ctx, p) => {
        const s = await ctx.client.schedules.update(p.id, p.body);
        return ctx.show(s, () => detailView(s));
      },
    }),
    pause: defineCommand({
      summary: "pause a schedule",
      args: ["schedule"],
      parse: scheduleArg,
      run: async (ctx, p) => {
        const s = await ctx.client.schedules.update(p.id, { paused: true });
        return ctx.show(s, () => `paused ${s.id}\n`);
      },
    }),
    resume: defineCommand({
      summary: "resume a paused schedule (its failures are cleared; what it missed is not caught up)",
      args: ["schedule"],
      parse: scheduleArg,
      run: async (ctx, p) => {
        const s = await ctx.client.schedules.update(p.id, { paused: false });
        return ctx.show(s, () => `resumed ${s.id}; next ${s.next_fire_at ?? "never"}\n`);
      },
    }),
    trigger: defineCommand({
      summary: "start a run of a schedule now",
      args: ["schedule"],
      parse: scheduleArg,
      run: async (ctx, p) => {
        const r = await ctx.client.schedules.trigger(p.id);
        return ctx.show(r, () => `${r.run_id}\n`);
      },
    }),
    delete: defineCommand({
      summary: "delete a schedule (its runs stay)",
      args: ["schedule"],
      parse: scheduleArg,
      run: async (ctx, p) => {
        await ctx.client.schedules.delete(p.id);
        return ctx.show(undefined, () => `deleted ${p.id}\n`);
      },
    }),
  },
);
