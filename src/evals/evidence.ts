// Evidence packs: the governance record of a period (agents, versions with their diffs, runs
// and receipts, approvals and their deciders, evaluation runs, the organisation's guardrails
// and budgets with what the period's budgets counted) as JSON Lines, each line
// naming the SHA-256 of the one before it, closed by a manifest of every line's digest, so
// that a removed, added or edited line is detectable (`warren evidence verify PACK`). No
// outputs, files or traces. Owners, admins and auditors may make and download one.
import { createHash } from "node:crypto";
import { gzipSync } from "node:zlib";
import { and, asc, eq, gte, inArray, lt, lte, or } from "drizzle-orm";
import type { AnyPgColumn } from "drizzle-orm/pg-core";
import type { Access, Identity } from "../access/index.js";
import { WarrenError } from "../errors.js";
import { newId } from "../ids.js";
import type { Db } from "../store/index.js";
import { schema } from "../store/index.js";
import { periodStart } from "../budgets/ledger.js";

const sha256 = (text: string) => createHash("sha256").update(text).digest("hex");

/** The pack's lines: every record chained to the one before it, then the manifest. */
export function packLines(
  header: Record<string, unknown>,
  records: { type: string; data: unknown }[],
): string[] {
  const lines: string[] = [];
  let prev: string | null = null;
  for (const r of [{ type: "header", data: header }, ...records]) {
    const line = JSON.stringify({ type: r.type, data: r.data, prev });
    lines.push(line);
    prev = sha256(line);
  }
  lines.push(JSON.stringify({ type: "manifest", lines: lines.length, sha256: lines.map(sha256), prev }));
  return lines;
}

/** What changed from one spec to the next: each top-level field that differs, before and after. */
function specDiff(before: Record<string, unknown> | null, after: Record<string, unknown>) {
  const out: Record<string, { before: unknown; after: unknown }> = {};
  for (const k of new Set([...Object.keys(before ?? {}), ...Object.keys(after)]))
    if (JSON.stringify(before?.[k]) !== JSON.stringify(after[k]))
      out[k] = { before: before?.[k] ?? null, after: after[k] ?? null };
  return out;
}

export class Evidence {
  constructor(
    private readonly db: Db,
    private readonly access: Access,
  ) {}

  async #mayTake(orgId: string, who: Identity): Promise<void> {
    const role = await this.access.require(orgId, who, "read", "organisation");
    if (role !== "owner" && role !== "admin" && role !== "auditor")
      throw new WarrenError(
        "access.denied",
        `your role in this organisation is ${role}; evidence packs are for owners, admins and auditors`,
      );
  }

  async make(
    who: Identity,
    orgId: string,
    body: { from: string; to: string; agent_ids?: string[] | undefined },
  ): Promise<{ id: string; sha256: string; bytes: number }> {
    await this.#mayTake(orgId, who);
    const from = new Date(body.from);
    const to = new Date(body.to);
    if (!(from < to)) throw new WarrenError("request.invalid", "to: must be after from", { field: "to" });
    const db = this.db;
    const agentWhere = [eq(schema.agents.orgId, orgId)];
    if (body.agent_ids) agentWhere.push(inArray(schema.agents.id, body.agent_ids));
    const agents = await db
      .select()
      .from(schema.agents)
      .where(and(...agentWhere))
      .orderBy(asc(schema.agents.id));
    const ids = agents.map((a) => a.id);
    const records: { type: string; data: unknown }[] = [];
    for (const a of agents)
      records.push({
        type: "agent",
        data: {
          id: a.id,
          name: a.name,
          machine_id: a.machineId,
          current_version: a.specVersion,
          created_at: a.createdAt,
        },
      });
    if (ids.length > 0) {
      const specs = await db
        .select({ s: schema.agentSpecs, by: schema.agentVersionAuthors.createdBy })
        .from(schema.agentSpecs)
        .leftJoin(
          schema.agentVersionAuthors,
          and(
            eq(schema.agentVersionAuthors.agentId, schema.agentSpecs.agentId),
            eq(schema.agentVersionAuthors.version, schema.agentSpecs.version),
          ),
        )
        .where(inArray(schema.agentSpecs.agentId, ids))
        .orderBy(asc(schema.agentSpecs.agentId), asc(schema.agentSpecs.version));
      let last: { agentId: string; spec: Record<string, unknown> } | null = null;
      for (const { s, by } of specs) {
        const spec = s.spec as Record<string, unknown>;
        const before = last?.agentId === s.agentId ? last.spec : null;
        last = { agentId: s.agentId, spec };
        if (s.createdAt < from || s.createdAt >= to) continue;
        records.push({
          type: "version",
          data: {
            agent_id: s.agentId,
            version: s.version,
            created_by: by,
            created_at: s.createdAt,
            spec,
            diff: specDiff(before, spec),
          },
        });
      }
    }
    const inPeriod = (col: AnyPgColumn) => [gte(col, from), lt(col, to)];
    const runWhere = [eq(schema.runs.orgId, orgId), ...inPeriod(schema.runs.createdAt)];
    if (body.agent_ids) runWhere.push(inArray(schema.runs.agentId, body.agent_ids));
    const runs = await db
      .select()
      .from(schema.runs)
      .where(and(...runWhere))
      .orderBy(asc(schema.runs.createdAt), asc(schema.runs.id));
    for (const r of runs)
      // the record without the workload: no output, input or trace
      records.push({
        type: "run",
        data: {
          id: r.id,
          agent_id: r.agentId,
          kind: r.kind,
          version: r.specVersion,
          status: r.status,
          status_reason: r.statusReason,
          exit_code: r.exitCode,
          created_at: r.createdAt,
          started_at: r.startedAt,
          ended_at: r.endedAt,
          usage: r.usage,
          receipt: r.receipt,
        },
      });
    const apWhere = [eq(schema.approvals.orgId, orgId), ...inPeriod(schema.approvals.createdAt)];
    if (body.agent_ids) apWhere.push(inArray(schema.approvals.agentId, body.agent_ids));
    for (const a of await db
      .select()
      .from(schema.approvals)
      .where(and(...apWhere))
      .orderBy(asc(schema.approvals.createdAt)))
      records.push({
        type: "approval",
        data: {
          id: a.id,
          run_id: a.runId,
          tool_call_id: a.toolCallId,
          tool: a.tool,
          args_sha256: a.argsSha256,
          policy_version: a.policyVersion,
          status: a.status,
          decided_by: a.decidedBy,
          message: a.message,
          created_at: a.createdAt,
          decided_at: a.decidedAt,
        },
      });
    const evWhere = [eq(schema.evalRuns.orgId, orgId), ...inPeriod(schema.evalRuns.createdAt)];
    if (body.agent_ids) evWhere.push(inArray(schema.evalRuns.agentId, body.agent_ids));
    for (const e of await db
      .select()
      .from(schema.evalRuns)
      .where(and(...evWhere))
      .orderBy(asc(schema.evalRuns.createdAt)))
      records.push({
        type: "eval_run",
        data: {
          id: e.id,
          agent_id: e.agentId,
          suite: e.suiteName,
          version: e.version,
          status: e.status,
          pass_rate: e.passRate,
          run_ids: (e.cases as { run_id: string | null }[]).map((c) => c.run_id),
          started_by: e.startedBy,
          created_at: e.createdAt,
          ended_at: e.endedAt,
        },
      });
    records.push(...(await this.#governance(orgId, from, to, body.agent_ids)));
    const id = newId("evd");
    const createdAt = new Date();
    const header = {
      format: "warren-evidence/1",
      id,
      org_id: orgId,
      from: from.toISOString(),
      to: to.toISOString(),
      agent_ids: body.agent_ids ?? null,
      created_by: who.email,
      created_at: createdAt.toISOString(),
    };
    const gz = gzipSync(Buffer.from(`${packLines(header, records).join("\n")}\n`));
    const digest = createHash("sha256").update(gz).digest("hex");
    await db.insert(schema.evidencePacks).values({
      id,
      orgId,
      fromAt: from,
      toAt: to,
      agentIds: body.agent_ids ?? null,
      createdBy: who.email,
      sha256: digest,
      bytes: gz.length,
      content: gz.toString("base64"),
      createdAt,
    });
    return { id, sha256: digest, bytes: gz.length };
  }

  /**
   * The organisation's guardrails (tool policy, network deny list, retention) and budgets as
   * they are when the pack is made, and what each day and month of the period counted.
   */
  async #governance(
    orgId: string,
    from: Date,
    to: Date,
    agentIds: string[] | undefined,
  ): Promise<{ type: string; data: unknown }[]> {
    const out: { type: string; data: unknown }[] = [];
    const [g] = await this.db
      .select()
      .from(schema.orgGuardrails)
      .where(eq(schema.orgGuardrails.orgId, orgId));
    out.push({
      type: "guardrails",
      data: {
        tool_policy: g?.toolPolicy ?? "",
        network_deny: g?.networkDeny ?? [],
        retention_days: g?.retentionDays ?? null,
        updated_by: g?.updatedBy ?? null,
        updated_at: g?.updatedAt ?? null,
      },
    });
    // the organisation's own, and those of the agents asked for (all when none were)
    const whose = (col: AnyPgColumn) => (agentIds ? inArray(col, ["", ...agentIds]) : undefined);
    const limits = await this.db
      .select()
      .from(schema.orgBudgets)
      .where(and(eq(schema.orgBudgets.orgId, orgId), whose(schema.orgBudgets.agentId)))
      .orderBy(asc(schema.orgBudgets.agentId), asc(schema.orgBudgets.period));
    for (const l of limits)
      out.push({
        type: "budget",
        data: {
          agent_id: l.agentId === "" ? null : l.agentId,
          period: l.period,
          max_usd: l.maxUsd,
          max_tokens: l.maxTokens,
          updated_by: l.updatedBy,
          updated_at: l.updatedAt,
        },
      });
    const u = schema.budgetUsage;
    const last = new Date(to.getTime() - 1);
    const inRange = (period: "day" | "month") =>
      and(
        eq(u.period, period),
        gte(u.periodStart, periodStart(period, from)),
        lte(u.periodStart, periodStart(period, last)),
      );
    const usage = await this.db
      .select()
      .from(u)
      .where(and(eq(u.orgId, orgId), whose(u.agentId), or(inRange("day"), inRange("month"))))
      .orderBy(asc(u.agentId), asc(u.period), asc(u.periodStart));
    for (const r of usage)
      out.push({
        type: "budget_usage",
        data: {
          agent_id: r.agentId === "" ? null : r.agentId,
          period: r.period,
          period_start: r.periodStart,
          used_usd: r.spentUsd,
          used_tokens: r.spentTokens,
        },
      });
    return out;
  }

  async download(who: Identity, id: string): Promise<Buffer> {
    const [p] = await this.db.select().from(schema.evidencePacks).where(eq(schema.evidencePacks.id, id));
    if (!p) throw new WarrenError("not_found", "evidence pack was not found");
    await this.#mayTake(p.orgId, who);
    return Buffer.from(p.content, "base64");
  }
}
