// A machine's box as the API shows it, and the runaway command trees recorded among its events.
import { desc, eq } from "drizzle-orm";
import { memo, schema, type Db } from "../store/index.js";
import type { BoxView } from "./control.js";
import type { HealthNow, RunawayEvent } from "./health.js";

/** Events of a machine's box shown with it (the newest). */
const BOX_EVENTS_SHOWN = 20;

export class BoxEvents {
  readonly #runawayListeners: ((e: RunawayEvent) => Promise<void>)[] = [];
  /** A machine's latest events, read again only once its events changed (a GET reads no row). */
  readonly #latest;

  constructor(
    private readonly db: Db,
    /** What a machine event says of an agent's command passes through that agent's redaction. */
    private readonly redact: <T>(agentId: string | undefined, value: T) => Promise<T> = async (_a, v) => v,
  ) {
    this.#latest = memo<string, (typeof schema.machineEvents.$inferSelect)[]>(db, [schema.machineEvents]);
  }

  /** Called for every runaway command tree stopped (after it is recorded on the machine). */
  onRunaway(fn: (e: RunawayEvent) => Promise<void>): void {
    this.#runawayListeners.push(fn);
  }

  async recordRunaway(e: RunawayEvent): Promise<void> {
    const shown = await this.redact(e.owner?.agentId, {
      detail: e.detail,
      data: {
        limit: e.limit,
        reason: e.reason,
        held_s: e.heldS,
        command: e.command,
        agent_id: e.owner?.agentId ?? null,
        run_id: e.owner?.runId ?? null,
        argv: e.owner?.argv ?? null,
        pids: e.pids,
        memory_bytes: e.memoryBytes,
        oom_kills: e.oomKills,
        fork_failures: e.forkFailures,
        ended: e.ended,
      },
    });
    await this.db.insert(schema.machineEvents).values({
      machineId: e.machineId,
      type: "runaway",
      at: e.at,
      detail: shown.detail,
      data: shown.data,
    });
    for (const fn of this.#runawayListeners) await fn(e);
  }

  /** The machine's box: its state, `now` (usage, the limit it is at) and its latest events. */
  async view(machineId: string, state: BoxView["state"], now: HealthNow): Promise<BoxView> {
    const rows = [
      ...(await this.#latest.get(machineId, () =>
        this.db
          .select()
          .from(schema.machineEvents)
          .where(eq(schema.machineEvents.machineId, machineId))
          .orderBy(desc(schema.machineEvents.id))
          .limit(BOX_EVENTS_SHOWN),
      )),
    ];
    return {
      state,
      ...now,
      events: rows.reverse().map((r) => ({
        at: r.at.toISOString(),
        type: r.type,
        detail: r.detail,
        data: r.data as Record<string, unknown>,
      })),
    };
  }
}
