// Usage over time, from the records the runs leave: each ended run's receipt (tokens, dollars,
// CPU seconds, the home's disk after it), counted in the step its run ended in. One query sums
// the figures per step, one takes each agent's disk per step; the same SQL on PGlite and on
// PostgreSQL (GROUP BY the select list's positions, so that a bound parameter is not repeated).
import { and, eq, gte, isNotNull, lt, sql } from "drizzle-orm";
import type { Access, Identity } from "../access/index.js";
import { USAGE_MAX_STEPS, type OrgUsage, type UsageQuery } from "../contract/usage.js";
import { WarrenError } from "../errors.js";
import type { Db } from "../store/index.js";
import { schema } from "../store/index.js";

const DAY_MS = 86_400_000;
const UNIT_S: Record<string, number> = { s: 1, m: 60, h: 3600, d: 86_400 };

const invalid = (field: string, message: string) =>
  new WarrenError("request.invalid", `${field}: ${message}`, { field });

/** `90`, `90s`, `5m`, `1h`, `1d` as seconds. */
function stepSeconds(step: string): number {
  const unit = /[smhd]$/.test(step) ? step.slice(-1) : "s";
  return Number.parseInt(step, 10) * UNIT_S[unit]!;
}

/** The span and step a query asks for, with their defaults, checked. */
function usageWindow(q: UsageQuery, now = new Date()): { since: Date; until: Date; stepS: number } {
  const until = q.until ? new Date(q.until) : now;
  const since = q.since ? new Date(q.since) : new Date(until.getTime() - DAY_MS);
  const spanS = (until.getTime() - since.getTime()) / 1000;
  if (!(spanS > 0)) throw invalid("since", "must be before until");
  const stepS = q.step ? stepSeconds(q.step) : Math.max(1, Math.ceil(spanS / 60));
  const steps = Math.ceil(spanS / stepS);
  if (steps > USAGE_MAX_STEPS)
    throw invalid(
      "step",
      `cuts the span into ${steps} steps, more than ${USAGE_MAX_STEPS}; give a longer step or a shorter span`,
    );
  return { since, until, stepS };
}

const r = schema.runs;
const num = (field: string) =>
  sql<number>`coalesce(sum((${r.receipt}->>${sql.raw(`'${field}'`)})::float8), 0)`;
const round9 = (x: number): number => Math.round(x * 1e9) / 1e9;

export class UsageRecords {
  constructor(
    private readonly db: Db,
    private readonly access: Pick<Access, "require">,
  ) {}

  /** What the organisation's runs (or one agent's) used, step by step (any member but a guest). */
  async org(who: Identity, orgId: string, q: UsageQuery): Promise<OrgUsage> {
    await this.access.require(orgId, who, "read", "usage");
    const { since, until, stepS } = usageWindow(q);
    const sinceS = since.getTime() / 1000;
    const step = sql<number>`floor((extract(epoch from ${r.endedAt}) - ${sinceS}::float8) / ${stepS}::float8)::int`;
    const where = and(
      eq(r.orgId, orgId),
      isNotNull(r.receipt),
      gte(r.endedAt, since),
      lt(r.endedAt, until),
      q.agent ? eq(r.agentId, q.agent) : undefined,
    );
    // one read of the runs: each step's sums per agent (an agent's disk is its largest after a
    // run of the step; the organisation's, the sum of its agents')
    const rows = await this.db
      .select({
        step,
        agent: r.agentId,
        tokens_in: num("tokens_in"),
        tokens_out: num("tokens_out"),
        usd: num("usd"),
        cpu_seconds: num("cpu_seconds"),
        execs: sql<number>`count(*)::int`,
        mib: sql<number | null>`max((${r.receipt}->>'disk_after_mib')::float8)`,
      })
      .from(r)
      .where(where)
      .groupBy(sql`1`, sql`2`);
    const count = Math.ceil((until.getTime() - since.getTime()) / 1000 / stepS);
    const series = Array.from({ length: count }, (_, i) => ({
      at: new Date(since.getTime() + i * stepS * 1000).toISOString(),
      tokens_in: 0,
      tokens_out: 0,
      usd: 0,
      cpu_seconds: 0,
      execs: 0,
      disk_mib: null as number | null,
    }));
    const totals = { tokens_in: 0, tokens_out: 0, usd: 0, cpu_seconds: 0, execs: 0 };
    for (const row of rows) {
      const p = series[Number(row.step)];
      if (!p) continue;
      for (const k of ["tokens_in", "tokens_out", "usd", "cpu_seconds", "execs"] as const) {
        p[k] = round9(p[k] + Number(row[k]));
        totals[k] = round9(totals[k] + Number(row[k]));
      }
      if (row.mib !== null) p.disk_mib = round9((p.disk_mib ?? 0) + Number(row.mib));
    }
    return {
      org_id: orgId,
      agent_id: q.agent ?? null,
      since: since.toISOString(),
      until: until.toISOString(),
      step_s: stepS,
      series,
      totals,
    };
  }
}
