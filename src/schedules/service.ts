// Schedules: standing orders to run an agent, by cron in a time zone or every N seconds,
// between start_at and end_at, unless paused. This service checks access and what is asked,
// keeps the rows, and tells the firer (firing.ts) of each change; the firer's one ticker
// starts the runs.
import { and, desc, eq } from "drizzle-orm";
import type { Access, Identity } from "../access/index.js";
import type { Agents } from "../agents/service.js";
import type { Schedule, ScheduleCreateRequest, ScheduleUpdateRequest } from "../contract/types.js";
import { WarrenError } from "../errors.js";
import { newId } from "../ids.js";
import { MAX_INPUT_BYTES } from "../runs/service.js";
import type { Db } from "../store/index.js";
import { schema } from "../store/index.js";
import { isTimeZone, nextCron, parseCron } from "./cron.js";
import { invalid, type ScheduleFirer, type ScheduleRow } from "./firing.js";

/** At most this many schedules per agent. */
const MAX_PER_AGENT = 100;

export interface SchedulesOptions {
  db: Db;
  access: Access;
  agents: Pick<Agents, "load">;
  firer: ScheduleFirer;
}

interface RunFields {
  kind: "agent" | "command";
  command: string | null;
  argv: string[] | null;
  input: string;
  timeout_s: number | null;
  name: string;
}

const iso = (d: Date | null) => d?.toISOString() ?? null;

export class Schedules {
  readonly #o: SchedulesOptions;

  constructor(o: SchedulesOptions) {
    this.#o = o;
  }

  #view(r: ScheduleRow): Schedule {
    const run = r.run as unknown as RunFields;
    const next = this.#o.firer.nextOf(r.id);
    return {
      id: r.id,
      agent_id: r.agentId,
      org_id: r.orgId,
      name: run.name,
      cron: r.cron,
      every_s: r.everyS,
      timezone: r.timezone,
      kind: run.kind,
      command: run.command,
      argv: run.argv,
      input: run.input,
      timeout_s: run.timeout_s,
      overlap: r.overlap,
      catch_up: r.catchUp,
      paused: r.paused,
      paused_reason: r.pausedReason,
      start_at: iso(r.startAt),
      end_at: iso(r.endAt),
      next_fire_at: next === null ? null : new Date(next).toISOString(),
      last_fired_at: iso(r.lastSlotAt),
      failures: r.failures,
      skipped: r.skipped,
      last_error: r.lastError,
      created_by: r.createdBy,
      created_at: r.createdAt.toISOString(),
    };
  }

  async #load(who: Identity, id: string, perm: "read" | "write"): Promise<ScheduleRow> {
    const [r] = await this.#o.db.select().from(schema.schedules).where(eq(schema.schedules.id, id));
    if (!r) throw new WarrenError("not_found", "schedule was not found");
    await this.#o.access.require(r.orgId, who, perm, "schedule");
    return r;
  }

  async create(who: Identity, agentId: string, body: ScheduleCreateRequest): Promise<Schedule> {
    const agent = await this.#o.agents.load(who, agentId, "write");
    const existing = await this.#o.db
      .select({ id: schema.schedules.id })
      .from(schema.schedules)
      .where(eq(schema.schedules.agentId, agent.id))
      .limit(MAX_PER_AGENT);
    if (existing.length >= MAX_PER_AGENT)
      throw invalid("agent", `the agent already has ${MAX_PER_AGENT} schedules; delete one first`);
    const run: RunFields = {
      kind: body.kind ?? "agent",
      command: body.command ?? null,
      argv: body.argv ?? null,
      input: body.input ?? "",
      timeout_s: body.timeout_s ?? null,
      name: body.name ?? "",
    };
    const values = {
      cron: body.cron ?? null,
      everyS: body.every_s ?? null,
      timezone: body.timezone ?? "UTC",
      startAt: body.start_at ? new Date(body.start_at) : null,
      endAt: body.end_at ? new Date(body.end_at) : null,
    };
    check(values, run);
    const [row] = await this.#o.db
      .insert(schema.schedules)
      .values({
        id: newId("sch"),
        orgId: agent.orgId,
        agentId: agent.id,
        ...values,
        run: run as unknown as Record<string, unknown>,
        overlap: body.overlap ?? "skip",
        catchUp: body.catch_up ?? "one",
        paused: body.paused ?? false,
        createdBy: { user_id: who.userId, email: who.email },
      })
      .returning();
    if (!row) throw new Error("schedule insert returned nothing");
    this.#o.firer.changed(row);
    return this.#view(row);
  }

  async list(who: Identity, agentId: string): Promise<Schedule[]> {
    const agent = await this.#o.agents.load(who, agentId, "read");
    const rows = await this.#o.db
      .select()
      .from(schema.schedules)
      .where(eq(schema.schedules.agentId, agent.id))
      .orderBy(desc(schema.schedules.createdAt), desc(schema.schedules.id));
    return rows.map((r) => this.#view(r));
  }

  async get(who: Identity, id: string): Promise<Schedule> {
    return this.#view(await this.#load(who, id, "read"));
  }

  async update(who: Identity, id: string, body: ScheduleUpdateRequest): Promise<Schedule> {
    const r = await this.#load(who, id, "write");
    const old = r.run as unknown as RunFields;
    const run: RunFields = {
      kind: body.kind ?? old.kind,
      command: body.command !== undefined ? body.command : body.argv ? null : old.command,
      argv: body.argv !== undefined ? body.argv : body.command ? null : old.argv,
      input: body.input ?? old.input,
      timeout_s: body.timeout_s !== undefined ? body.timeout_s : old.timeout_s,
      name: body.name ?? old.name,
    };
    // setting one of cron and every_s clears the other
    const values = {
      cron: body.cron !== undefined ? body.cron : body.every_s ? null : r.cron,
      everyS: body.every_s !== undefined ? body.every_s : body.cron ? null : r.everyS,
      timezone: body.timezone ?? r.timezone,
      startAt: body.start_at !== undefined ? (body.start_at ? new Date(body.start_at) : null) : r.startAt,
      endAt: body.end_at !== undefined ? (body.end_at ? new Date(body.end_at) : null) : r.endAt,
    };
    check(values, run);
    const timingChanged =
      values.cron !== r.cron ||
      values.everyS !== r.everyS ||
      values.timezone !== r.timezone ||
      values.startAt?.getTime() !== r.startAt?.getTime();
    const unpaused = body.paused === false && r.paused;
    const [row] = await this.#o.db
      .update(schema.schedules)
      .set({
        ...values,
        run: run as unknown as Record<string, unknown>,
        ...(body.overlap ? { overlap: body.overlap } : {}),
        ...(body.catch_up ? { catchUp: body.catch_up } : {}),
        ...(body.paused !== undefined ? { paused: body.paused } : {}),
        // unpaused: its failures are cleared, and what it missed while paused is not caught up
        ...(unpaused ? { failures: 0, pausedReason: null, lastError: null } : {}),
        ...(unpaused || timingChanged ? { lastSlotAt: new Date() } : {}),
      })
      .where(and(eq(schema.schedules.id, r.id)))
      .returning();
    if (!row) throw new WarrenError("not_found", "schedule was not found");
    this.#o.firer.changed(row);
    return this.#view(row);
  }

  async remove(who: Identity, id: string): Promise<void> {
    const r = await this.#load(who, id, "write");
    this.#o.firer.removed(r.id);
    await this.#o.db.delete(schema.schedules).where(eq(schema.schedules.id, r.id));
  }

  /** Starts a run of the schedule now, as the caller (whatever its overlap policy says). */
  async trigger(who: Identity, id: string): Promise<{ run_id: string }> {
    const r = await this.#load(who, id, "write");
    await this.#o.agents.load(who, r.agentId, "write");
    return { run_id: await this.#o.firer.trigger(r, who) };
  }
}

/** Refuses a schedule that could never make a run. */
function check(
  v: {
    cron: string | null;
    everyS: number | null;
    timezone: string;
    startAt: Date | null;
    endAt: Date | null;
  },
  run: RunFields,
): void {
  if ((v.cron === null) === (v.everyS === null)) throw invalid("cron", "give exactly one of cron or every_s");
  if (!isTimeZone(v.timezone))
    throw invalid(
      "timezone",
      `"${v.timezone}" is not a time zone this server knows (an IANA name such as Europe/Paris)`,
    );
  if (v.cron !== null) {
    let c;
    try {
      c = parseCron(v.cron);
    } catch (err) {
      throw invalid("cron", (err as Error).message);
    }
    if (nextCron(c, new Date(), v.timezone) === null)
      throw invalid("cron", `"${v.cron}" names a date that never comes`);
  }
  if (v.startAt && v.endAt && v.endAt <= v.startAt) throw invalid("end_at", "must be after start_at");
  if (run.kind === "command" && (run.command === null) === (run.argv === null))
    throw invalid("argv", "a command schedule needs exactly one of argv or command");
  if (run.kind === "agent" && (run.command !== null || run.argv !== null))
    throw invalid(
      "command",
      "an agent schedule runs the agent on its input; command and argv are for kind command",
    );
  const bytes = Buffer.byteLength(run.input, "utf8");
  if (bytes > MAX_INPUT_BYTES)
    throw new WarrenError(
      "run.input_too_large",
      `the input is ${bytes} bytes, above the ${MAX_INPUT_BYTES}-byte limit; pass large data as a file in the home`,
    );
}
