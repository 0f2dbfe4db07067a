// A run's row as the API shows it.
import type { Role } from "../access/index.js";
import { TERMINAL_RUN_STATUSES } from "../contract/lists.js";
import type { Run, RunReceipt, RunUsage } from "../contract/types.js";
import { inArray } from "drizzle-orm";
import type { Db } from "../store/index.js";
import { schema } from "../store/index.js";

export type RunRow = typeof schema.runs.$inferSelect;
export type RunStatus = RunRow["status"];
/** A run in one of these will not change again. */
export const terminal: readonly RunStatus[] = TERMINAL_RUN_STATUSES;

export function runView(r: RunRow): Run {
  return {
    id: r.id,
    agent_id: r.agentId,
    machine_id: r.machineId,
    kind: r.kind,
    status: r.status,
    status_reason: r.statusReason,
    argv: r.argv,
    exit_code: r.exitCode,
    signal: r.signal,
    output: r.output,
    output_truncated: r.outputTruncated,
    timeout_s: r.timeoutS,
    created_at: r.createdAt.toISOString(),
    started_at: r.startedAt?.toISOString() ?? null,
    ended_at: r.endedAt?.toISOString() ?? null,
    // written by the run recorder in the contract's shape
    receipt: r.receipt as RunReceipt | null,
    ...(r.usage ? { usage: r.usage as RunUsage } : {}),
    version: r.specVersion,
    ...(r.outputDeletedAt ? { retained: false, output_deleted_at: r.outputDeletedAt.toISOString() } : {}),
  };
}

/** An auditor reads the record of a run (status, times, receipt) without its workload: no output. */
export function viewFor(role: Role | null, r: RunRow): Run {
  const v = runView(r);
  if (role === "auditor") return { ...v, output: "", output_withheld: true };
  return v;
}

/** Runs a schedule started say which schedule and which slot (src/schedules). */
export async function withSchedules(db: Db, views: Run[]): Promise<Run[]> {
  if (views.length === 0) return views;
  const rows = await db
    .select()
    .from(schema.scheduleRuns)
    .where(
      inArray(
        schema.scheduleRuns.runId,
        views.map((v) => v.id),
      ),
    );
  if (rows.length === 0) return views;
  const by = new Map(rows.map((r) => [r.runId, r]));
  return views.map((v) => {
    const s = by.get(v.id);
    return s ? { ...v, schedule_id: s.scheduleId, scheduled_for: s.scheduledFor.toISOString() } : v;
  });
}
