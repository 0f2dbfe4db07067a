// Retention: an organisation's `retention_days` (its guardrails) is how long the outputs and
// traces of its runs are kept. A sweep, at boot and then every hour, deletes the output and
// every trace event of the runs that ended longer ago than that; the run's record stays
// (status, times, usage, receipt, approvals) and says so (output_deleted_at, retained: false).
import { and, eq, inArray, isNotNull, isNull, lt } from "drizzle-orm";
import type { Logger } from "../observability/log.js";
import type { Db } from "../store/index.js";
import { schema } from "../store/index.js";

const DAY_MS = 86_400_000;
/** Runs whose outputs and traces one transaction deletes at most. */
const BATCH = 500;

export class Retention {
  #timer: NodeJS.Timeout | undefined;
  #sweeping: Promise<number> | null = null;

  constructor(
    private readonly db: Db,
    private readonly logger: Logger,
    private readonly everyMs = 3_600_000,
  ) {}

  /** Deletes the outputs and traces past every organisation's retention; answers how many runs. */
  sweep(now = new Date()): Promise<number> {
    // one sweep at a time: a second asks for the one going on
    this.#sweeping ??= this.#sweep(now).finally(() => (this.#sweeping = null));
    return this.#sweeping;
  }

  async #sweep(now: Date): Promise<number> {
    const g = schema.orgGuardrails;
    const r = schema.runs;
    const orgs = await this.db
      .select({ orgId: g.orgId, days: g.retentionDays })
      .from(g)
      .where(isNotNull(g.retentionDays));
    let n = 0;
    for (const { orgId, days } of orgs) {
      if (days === null) continue;
      const before = new Date(now.getTime() - days * DAY_MS);
      for (;;) {
        const done = await this.db.transaction(async (tx) => {
          const ids = (
            await tx
              .select({ id: r.id })
              .from(r)
              .where(and(eq(r.orgId, orgId), isNull(r.outputDeletedAt), lt(r.endedAt, before)))
              .limit(BATCH)
          ).map((x) => x.id);
          if (ids.length === 0) return 0;
          await tx.delete(schema.runEvents).where(inArray(schema.runEvents.runId, ids));
          await tx
            .update(r)
            .set({ output: "", outputTruncated: false, outputDeletedAt: now })
            .where(inArray(r.id, ids));
          return ids.length;
        });
        n += done;
        if (done < BATCH) break;
      }
    }
    return n;
  }

  /** Sweeps now, then every `everyMs`; a failed sweep is logged and tried again at the next. */
  start(): void {
    const run = () =>
      void this.sweep()
        .then((n) => {
          if (n > 0) this.logger.info({ runs: n }, "run outputs and traces past their retention deleted");
        })
        .catch((err: unknown) =>
          this.logger.error({ err }, "the retention sweep failed; it is tried again at the next"),
        );
    run();
    this.#timer = setInterval(run, this.everyMs);
    this.#timer.unref();
  }

  /** No more sweeps; answers once the one going on (if any) ended. */
  async stop(): Promise<void> {
    clearInterval(this.#timer);
    this.#timer = undefined;
    await this.#sweeping?.catch(() => 0);
  }
}
