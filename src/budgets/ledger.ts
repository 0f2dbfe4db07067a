// An organisation's budgets: dollars and tokens per UTC day and per UTC month, for the
// organisation as a whole and per agent, written by its owners and admins. The model gateway
// reserves a call's maximum cost here before the call is sent, in one transaction that locks
// the rows of every period the call counts against (so that two runs at once cannot pass a
// limit together), then counts the call's real usage and lets the reservation go.
import { and, eq, inArray, or, sql } from "drizzle-orm";
import type { Access, Identity } from "../access/index.js";
import type { BudgetsBody, BudgetsView } from "../contract/budgets.js";
import { WarrenError } from "../errors.js";
import type { OrgBudgetLedger, OrgBudgetRefusal, OrgReservation } from "./types.js";
import type { Db } from "../store/index.js";
import { schema } from "../store/index.js";

type Period = "day" | "month";
const PERIODS: readonly Period[] = ["day", "month"];

/** The period a moment falls in: its UTC day (2026-12-02) or month (2026-12). */
export const periodStart = (period: Period, at: Date): string =>
  at.toISOString().slice(0, period === "day" ? 10 : 7);

const round9 = (x: number): number => Math.round(x * 1e9) / 1e9;

interface Key {
  agentId: string;
  period: Period;
  start: string;
}

const u = schema.budgetUsage;
const keyIs = (orgId: string, k: Key) =>
  and(eq(u.orgId, orgId), eq(u.agentId, k.agentId), eq(u.period, k.period), eq(u.periodStart, k.start));

/** Whether an error is PostgreSQL's deadlock (a transaction chosen to give way), worth one more try. */
const deadlock = (err: unknown): boolean => {
  const e = err as { code?: unknown; cause?: { code?: unknown } };
  return e?.code === "40P01" || e?.cause?.code === "40P01";
};

export class Budgets implements OrgBudgetLedger {
  constructor(
    private readonly db: Db,
    private readonly access: Access,
  ) {}

  async get(who: Identity, orgId: string): Promise<BudgetsView> {
    await this.access.require(orgId, who, "read", "organisation");
    const limits = await this.db.select().from(schema.orgBudgets).where(eq(schema.orgBudgets.orgId, orgId));
    const now = new Date();
    const keys = limits.map((l) => ({
      agentId: l.agentId,
      period: l.period,
      start: periodStart(l.period, now),
    }));
    const rows =
      keys.length === 0
        ? []
        : await this.db
            .select()
            .from(u)
            .where(or(...keys.map((k) => keyIs(orgId, k))));
    const items = limits
      .map((l, i) => {
        const k = keys[i]!;
        const r = rows.find(
          (x) => x.agentId === k.agentId && x.period === k.period && x.periodStart === k.start,
        );
        return {
          agent_id: l.agentId === "" ? null : l.agentId,
          period: l.period,
          max_usd: l.maxUsd,
          max_tokens: l.maxTokens,
          period_start: k.start,
          used_usd: round9(r?.spentUsd ?? 0),
          used_tokens: r?.spentTokens ?? 0,
          reserved_usd: round9(Math.max(0, r?.reservedUsd ?? 0)),
          reserved_tokens: Math.max(0, r?.reservedTokens ?? 0),
          updated_by: l.updatedBy,
          updated_at: l.updatedAt.toISOString(),
        };
      })
      .sort((a, b) => (a.agent_id ?? "").localeCompare(b.agent_id ?? "") || a.period.localeCompare(b.period));
    return { org_id: orgId, items };
  }

  /** Replaces every limit of the organisation (owners and admins). */
  async put(who: Identity, orgId: string, body: BudgetsBody): Promise<BudgetsView> {
    await this.access.require(orgId, who, "manage", "organisation");
    const seen = new Set<string>();
    for (const [i, l] of body.items.entries()) {
      const k = `${l.agent_id ?? ""}/${l.period}`;
      if (seen.has(k))
        throw new WarrenError(
          "request.invalid",
          `items.${i}: a second ${l.period} limit of ${l.agent_id ? `the agent ${l.agent_id}` : "the organisation"}; give one limit per agent and period, with max_usd, max_tokens or both`,
          { field: `items.${i}` },
        );
      seen.add(k);
    }
    const agentIds = [...new Set(body.items.flatMap((l) => (l.agent_id ? [l.agent_id] : [])))];
    if (agentIds.length > 0) {
      const found = await this.db
        .select({ id: schema.agents.id })
        .from(schema.agents)
        .where(and(eq(schema.agents.orgId, orgId), inArray(schema.agents.id, agentIds)));
      const missing = agentIds.find((id) => !found.some((f) => f.id === id));
      if (missing !== undefined)
        throw new WarrenError(
          "request.invalid",
          `items: the agent ${missing} is not an agent of this organisation`,
          { field: "items" },
        );
    }
    const updatedAt = new Date();
    await this.db.transaction(async (tx) => {
      await tx.delete(schema.orgBudgets).where(eq(schema.orgBudgets.orgId, orgId));
      if (body.items.length > 0)
        await tx.insert(schema.orgBudgets).values(
          body.items.map((l) => ({
            orgId,
            agentId: l.agent_id ?? "",
            period: l.period,
            maxUsd: l.max_usd ?? null,
            maxTokens: l.max_tokens ?? null,
            updatedBy: who.email,
            updatedAt,
          })),
        );
    });
    return this.get(who, orgId);
  }

  /**
   * Reserves a call's maximum (tokens and dollars) against every limit of the organisation and
   * of the agent, all or nothing: the periods' rows are locked in one transaction, and the call
   * is refused (naming the first limit it would pass) when what they used, what calls under
   * way hold and this call's maximum would together pass one of them.
   */
  async reserve(
    who: { orgId: string; agentId: string },
    est: { tokens: number; usd: number },
  ): Promise<OrgReservation> {
    const limits = await this.db
      .select()
      .from(schema.orgBudgets)
      .where(
        and(eq(schema.orgBudgets.orgId, who.orgId), inArray(schema.orgBudgets.agentId, ["", who.agentId])),
      );
    if (limits.length === 0) return { ok: true, release: async () => {} };
    const now = new Date();
    // the organisation's rows first, then the agent's: every transaction locks in one order
    limits.sort((a, b) => a.agentId.localeCompare(b.agentId) || a.period.localeCompare(b.period));
    const keys: Key[] = limits.map((l) => ({
      agentId: l.agentId,
      period: l.period,
      start: periodStart(l.period, now),
    }));
    const attempt = () =>
      this.db.transaction(async (tx): Promise<OrgBudgetRefusal | null> => {
        await tx
          .insert(u)
          .values(
            keys.map((k) => ({
              orgId: who.orgId,
              agentId: k.agentId,
              period: k.period,
              periodStart: k.start,
            })),
          )
          .onConflictDoNothing();
        const rows = [];
        for (const k of keys) {
          const [r] = await tx.select().from(u).where(keyIs(who.orgId, k)).for("update");
          rows.push(r!);
        }
        for (const [i, l] of limits.entries()) {
          const r = rows[i]!;
          const scope = l.agentId === "" ? ("organisation" as const) : ("agent" as const);
          const base = { ok: false as const, scope, period: l.period, on_limit: "stop" as const };
          if (
            l.maxTokens !== null &&
            r.spentTokens + Math.max(0, r.reservedTokens) + est.tokens > l.maxTokens
          )
            return {
              ...base,
              limit: "tokens",
              max: l.maxTokens,
              used: r.spentTokens,
              reserved: Math.max(0, r.reservedTokens),
              call_max: est.tokens,
            };
          if (l.maxUsd !== null && r.spentUsd + Math.max(0, r.reservedUsd) + est.usd > l.maxUsd)
            return {
              ...base,
              limit: "usd",
              max: l.maxUsd,
              used: round9(r.spentUsd),
              reserved: round9(Math.max(0, r.reservedUsd)),
              call_max: round9(est.usd),
            };
        }
        for (const k of keys)
          await tx
            .update(u)
            .set({
              reservedTokens: sql`${u.reservedTokens} + ${est.tokens}`,
              reservedUsd: sql`${u.reservedUsd} + ${est.usd}`,
            })
            .where(keyIs(who.orgId, k));
        return null;
      });
    const refusal = await attempt().catch((err: unknown) => {
      if (deadlock(err)) return attempt();
      throw err;
    });
    if (refusal) return { ok: false, refusal };
    let released = false;
    return {
      ok: true,
      release: async () => {
        if (released) return;
        released = true;
        for (const k of keys)
          await this.db
            .update(u)
            .set({
              reservedTokens: sql`${u.reservedTokens} - ${est.tokens}`,
              reservedUsd: sql`${u.reservedUsd} - ${est.usd}`,
            })
            .where(keyIs(who.orgId, k));
      },
    };
  }

  /** Counts a call's real usage in the day and month of the organisation and of the agent. */
  async spend(who: { orgId: string; agentId: string }, used: { tokens: number; usd: number }): Promise<void> {
    if (used.tokens === 0 && used.usd === 0) return;
    const now = new Date();
    const rows = ["", who.agentId].flatMap((agentId) =>
      PERIODS.map((period) => ({
        orgId: who.orgId,
        agentId,
        period,
        periodStart: periodStart(period, now),
        spentTokens: used.tokens,
        spentUsd: used.usd,
      })),
    );
    await this.db
      .insert(u)
      .values(rows)
      .onConflictDoUpdate({
        target: [u.orgId, u.agentId, u.period, u.periodStart],
        set: {
          spentTokens: sql`${u.spentTokens} + excluded.spent_tokens`,
          spentUsd: sql`${u.spentUsd} + excluded.spent_usd`,
        },
      });
  }
}
