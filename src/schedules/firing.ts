// Firing schedules: the ticker hands each schedule due to `#fire`, which applies the overlap
// policy and starts the run through the runs service (and so the run recorder, the agent's
// limits and its queue), as the schedule's author. Each run is noted with its schedule and
// slot (schedule_runs); its end counts toward three failures in a row, which pause the
// schedule with the reason. At boot, fires missed while the server was down become one run
// (catch_up "one") or none.
import { and, eq, sql } from "drizzle-orm";
import type { Identity } from "../access/index.js";
import { WarrenError } from "../errors.js";
import { newId } from "../ids.js";
import type { Logger } from "../observability/log.js";
import type { RunInput, Runs } from "../runs/service.js";
import type { GenerationRegistry } from "../runs/registry.js";
import type { RunStatus } from "../runs/view.js";
import type { Db } from "../store/index.js";
import { schema } from "../store/index.js";
import { latestSlot, nextSlot, timingOf, type Timing } from "./slots.js";
import { Ticker } from "./ticker.js";
import type { EventBus } from "../events/index.js";

export type ScheduleRow = typeof schema.schedules.$inferSelect;

/** A schedule's runs that fail in a row before it pauses itself. */
export const MAX_FAILURES = 3;
/**
 * The runs of one `overlap: "allow"` schedule that may be queued or going on at once; a fire
 * past it is skipped (counted in `skipped`, said in `last_error`).
 */
const ALLOW_MAX = 10;
/**
 * Fires of one organisation being started at once (from the ticker's hand-over to the run's
 * row): a fire past it is held until one of them is done, its organisation's held schedules
 * in turn, and the slots it missed meanwhile are skipped (counted). So one organisation's
 * fires never heap up work in the server faster than it gets through them.
 */
const FIRING_PER_ORG = 2;

const FAILED: readonly RunStatus[] = ["failed", "timed_out", "lost"];

export interface FirerOptions {
  db: Db;
  runs: Pick<Runs, "start">;
  registry: Pick<GenerationRegistry, "waiting" | "full">;
  /** Runs' ends are heard (run.ended), each fire told (schedule.fired). */
  events: Pick<EventBus, "emit" | "on">;
  logger: Logger;
}

/** The run a schedule starts, from what it stores. */
export function runInputOf(row: ScheduleRow): RunInput {
  const r = row.run as {
    kind: "agent" | "command";
    command?: string | null;
    argv?: string[] | null;
    input?: string;
    timeout_s?: number | null;
  };
  const timeout = r.timeout_s ?? undefined;
  if (r.kind === "agent") return { kind: "agent", input: r.input ?? "", timeout_s: timeout };
  return {
    kind: "command",
    ...(r.argv ? { argv: r.argv } : { command: r.command ?? "" }),
    input: r.input ?? "",
    timeout_s: timeout,
  };
}

const messageOf = (err: unknown) => (err instanceof Error ? err.message : String(err));

export class ScheduleFirer {
  readonly #o: FirerOptions;
  readonly #ticker: Ticker;
  /** Each schedule that fires: its row (as of its last change) and timing. */
  readonly #active = new Map<string, { row: ScheduleRow; timing: Timing }>();
  /** The runs each schedule has queued or going on, and the schedule of each such run. */
  readonly #inflight = new Map<string, Set<string>>();
  readonly #owner = new Map<string, string>();
  /** Each organisation's fires being started, and its schedules held meanwhile with their first slot held. */
  readonly #firing = new Map<string, number>();
  readonly #held = new Map<string, Map<string, number>>();
  /** How late the ticker handed over each of the latest fires, in ms after its slot (the bench reads them). */
  readonly delays: number[] = [];

  constructor(o: FirerOptions) {
    this.#o = o;
    o.events.on("run.ended", (e) => this.#ended(e.runId, e.status));
    this.#ticker = new Ticker((id, slot) => this.#admit(id, slot, false));
  }

  /** Loads every schedule that fires and sets its next slot; missed slots by each one's catch-up. */
  async start(): Promise<void> {
    const rows = await this.#o.db.select().from(schema.schedules).where(eq(schema.schedules.paused, false));
    const now = Date.now();
    for (const row of rows) {
      const timing = timingOf(row);
      this.#active.set(row.id, { row, timing });
      const first = nextSlot(timing, (row.lastSlotAt ?? row.createdAt).getTime());
      if (first !== null && first <= now && row.catchUp === "none") {
        // missed while the server was down, and not to be caught up: passed over
        const passed = latestSlot(timing, first, now);
        await this.#o.db
          .update(schema.schedules)
          .set({ lastSlotAt: new Date(passed) })
          .where(eq(schema.schedules.id, row.id));
        this.#ticker.set(row.id, nextSlot(timing, now));
      } else {
        // a slot in the past (catch_up "one") fires at once, as one run for all it missed
        this.#ticker.set(row.id, first);
      }
    }
  }

  stop(): void {
    this.#ticker.stop();
  }

  /** The schedule's next slot (null: paused, ended, or never); a held one's is the first it missed. */
  nextOf(id: string): number | null {
    for (const held of this.#held.values()) if (held.has(id)) return held.get(id)!;
    return this.#ticker.next(id);
  }

  /** A schedule made or changed: it fires from now on by its new row (or not, when paused). */
  changed(row: ScheduleRow): void {
    if (row.paused) {
      this.removed(row.id);
      return;
    }
    const timing = timingOf(row);
    for (const held of this.#held.values()) held.delete(row.id);
    this.#active.set(row.id, { row, timing });
    this.#ticker.set(
      row.id,
      nextSlot(timing, Math.max(Date.now(), (row.lastSlotAt ?? row.createdAt).getTime())),
    );
  }

  removed(id: string): void {
    for (const held of this.#held.values()) held.delete(id);
    this.#active.delete(id);
    this.#ticker.set(id, null);
  }

  /** Starts a run of the schedule now, whatever its overlap policy, as `who`. */
  async trigger(row: ScheduleRow, who: Identity): Promise<string> {
    return this.#startRun(row, who, Date.now(), true);
  }

  /** Fires the schedule now, or holds it while its organisation has FIRING_PER_ORG fires being started. */
  #admit(id: string, slot: number, wasHeld: boolean): void {
    const org = this.#active.get(id)?.row.orgId;
    if (org === undefined) return;
    const n = this.#firing.get(org) ?? 0;
    if (n >= FIRING_PER_ORG) {
      let held = this.#held.get(org);
      if (!held) this.#held.set(org, (held = new Map()));
      if (!held.has(id)) held.set(id, slot);
      return;
    }
    this.#firing.set(org, n + 1);
    void this.#fire(id, slot, wasHeld).finally(() => {
      const left = (this.#firing.get(org) ?? 1) - 1;
      if (left > 0) this.#firing.set(org, left);
      else this.#firing.delete(org);
      const held = this.#held.get(org);
      const next = held?.entries().next().value;
      if (!held || !next) return;
      held.delete(next[0]);
      if (held.size === 0) this.#held.delete(org);
      this.#admit(next[0], next[1], true);
    });
  }

  async #fire(id: string, slot: number, wasHeld: boolean): Promise<void> {
    const a = this.#active.get(id);
    if (!a) return;
    const now = Date.now();
    if (this.delays.length >= 10_000) this.delays.shift();
    this.delays.push(now - slot);
    // every slot missed up to now is one fire, for the latest of them
    const due = latestSlot(a.timing, slot, now);
    this.#ticker.set(id, nextSlot(a.timing, now));
    // a fire held back for its organisation's others skipped the slots it missed meanwhile
    let missed = 0;
    for (
      let s: number | null = slot;
      wasHeld && s !== null && s < due && missed < 100_000;
      s = nextSlot(a.timing, s)
    )
      missed++;
    try {
      const skip = this.#skips(id, a.row.overlap);
      // a fire the bounds refuse is skipped too, and says why (the queue is never passed)
      const bound = skip ? null : this.#bound(id, a.row);
      const skips = (skip || bound ? 1 : 0) + missed;
      const [row] = await this.#o.db
        .update(schema.schedules)
        .set({
          lastSlotAt: new Date(due),
          ...(skips > 0 ? { skipped: sql`${schema.schedules.skipped} + ${skips}` } : {}),
          ...(bound
            ? { lastError: `the fire for ${new Date(due).toISOString()} was skipped: ${bound}` }
            : {}),
        })
        .where(and(eq(schema.schedules.id, id), eq(schema.schedules.paused, false)))
        .returning();
      if (!row) {
        // deleted (with its agent, say) or paused meanwhile
        this.removed(id);
        return;
      }
      if (skip || bound) return;
      await this.#startRun(row, { userId: row.createdBy.user_id, email: row.createdBy.email }, due, false);
    } catch (err) {
      this.#o.logger.error({ err, scheduleId: id }, "a schedule's fire failed");
    }
  }

  /** Whether the overlap policy passes over a fire now. */
  #skips(id: string, overlap: ScheduleRow["overlap"]): boolean {
    const runs = [...(this.#inflight.get(id) ?? [])];
    if (overlap === "allow" || runs.length === 0) return false;
    if (overlap === "skip") return true;
    // queue_one: one may wait behind the run going on, no more
    return runs.some((r) => this.#o.registry.waiting(r) !== null);
  }

  /** Why a fire would pass a bound (the schedule's ceiling, its agent's or organisation's queue), or null. */
  #bound(id: string, row: ScheduleRow): string | null {
    const n = this.#inflight.get(id)?.size ?? 0;
    if (row.overlap === "allow" && n >= ALLOW_MAX)
      return `${n} runs of the schedule are queued or going on, the ceiling of overlap allow (${ALLOW_MAX})`;
    return this.#o.registry.full(row.agentId, row.orgId);
  }

  async #startRun(row: ScheduleRow, who: Identity, slot: number, manual: boolean): Promise<string> {
    const o = this.#o;
    const runId = newId("run");
    await o.db
      .insert(schema.scheduleRuns)
      .values({ runId, scheduleId: row.id, scheduledFor: new Date(slot) });
    this.#track(row.id, runId);
    try {
      await o.runs.start(who, row.agentId, runInputOf(row), { id: runId });
      o.events.emit("schedule.fired", { scheduleId: row.id, runId });
      if (row.lastError !== null)
        await o.db.update(schema.schedules).set({ lastError: null }).where(eq(schema.schedules.id, row.id));
      return runId;
    } catch (err) {
      this.#untrack(runId);
      await o.db.delete(schema.scheduleRuns).where(eq(schema.scheduleRuns.runId, runId));
      if (!manual && err instanceof WarrenError && err.code === "run.queue_full") {
        // the queue filled between the check and the start: a skip, not a failure
        await o.db
          .update(schema.schedules)
          .set({
            skipped: sql`${schema.schedules.skipped} + 1`,
            lastError: `the fire for ${new Date(slot).toISOString()} was skipped: ${err.message}`,
          })
          .where(eq(schema.schedules.id, row.id));
        throw err;
      }
      // a fire that cannot start its run (its author's access, a full home) is a failure too
      if (!manual) await this.#failed(row.id, `the run could not start: ${messageOf(err)}`, true);
      throw err;
    }
  }

  #track(scheduleId: string, runId: string): void {
    let set = this.#inflight.get(scheduleId);
    if (!set) this.#inflight.set(scheduleId, (set = new Set()));
    set.add(runId);
    this.#owner.set(runId, scheduleId);
  }

  #untrack(runId: string): string | undefined {
    const id = this.#owner.get(runId);
    if (id === undefined) return undefined;
    this.#owner.delete(runId);
    const set = this.#inflight.get(id);
    set?.delete(runId);
    if (set?.size === 0) this.#inflight.delete(id);
    return id;
  }

  /** A run's end (run.ended, told of every one): a schedule's counts toward its failures. */
  #ended(runId: string, status: RunStatus): void {
    const id = this.#owner.get(runId);
    if (id === undefined) return;
    const done = FAILED.includes(status)
      ? this.#failed(id, `run ${runId} ended ${status}`, false)
      : status === "succeeded"
        ? this.#o.db
            .update(schema.schedules)
            .set({ failures: 0 })
            .where(and(eq(schema.schedules.id, id), sql`${schema.schedules.failures} > 0`))
        : Promise.resolve();
    // the run counts as going on until its end is counted: no fire slips in before a pause
    done
      .catch((err: unknown) =>
        this.#o.logger.error({ err, scheduleId: id }, "a schedule's run end was not counted"),
      )
      .finally(() => this.#untrack(runId));
  }

  /** One more failure in a row; the third pauses the schedule, saying why. */
  async #failed(id: string, why: string, startFailed: boolean): Promise<void> {
    const [row] = await this.#o.db
      .update(schema.schedules)
      .set({
        failures: sql`${schema.schedules.failures} + 1`,
        ...(startFailed ? { lastError: why } : {}),
      })
      .where(eq(schema.schedules.id, id))
      .returning();
    if (!row || row.failures < MAX_FAILURES || row.paused) return;
    const reason = `paused after ${row.failures} failed runs in a row (the last: ${why}); fix the cause, then unpause it`;
    const [paused] = await this.#o.db
      .update(schema.schedules)
      .set({ paused: true, pausedReason: reason })
      .where(and(eq(schema.schedules.id, id), eq(schema.schedules.paused, false)))
      .returning();
    if (paused) {
      this.removed(id);
      this.#o.logger.warn({ scheduleId: id, reason }, "a schedule paused itself");
    }
  }
}

/** A schedule's fields that make no run: what the service refuses as request.invalid. */
export function invalid(field: string, message: string): WarrenError {
  return new WarrenError("request.invalid", `${field}: ${message}`, { field });
}
