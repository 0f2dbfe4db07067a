// Recovery of what runs cut short left behind (the server stopped while they went on): each
// run's part of its machine's box is found by its labels (staging.ts), never by a name, and
// so are its workspaces: a unit of work's own goes (reset-eligible), a flow instance's is kept
// and said where. The run itself is recorded as lost before (RunRecorder.markLost).
import { inArray } from "drizzle-orm";
import { rm } from "node:fs/promises";
import type { Logger } from "../observability/log.js";
import { schema, type Db } from "../store/index.js";
import type { WorkspaceLayout } from "../workspaces/layout.js";
import type { Workspaces } from "../workspaces/service.js";
import type { DirRunStaging } from "./staging.js";

/** What one run cut short left: its part of the box (labels) and its workspaces. */
interface LeftBehind {
  runId: string;
  machineId: string;
  labels: Record<string, string>;
  /** Its workspaces found by label: removed, or kept (a flow instance's). */
  workspaces: { dir: string; kept: boolean }[];
}

const GOING = new Set(["queued", "waiting", "running"]);

async function recoverRunParts(o: {
  db: Db;
  staging: Pick<DirRunStaging, "find" | "unstage">;
  layout: Pick<WorkspaceLayout, "find">;
  /** The machines' folders on the host (where per-agent workspaces are). */
  machineDirs: string[];
  logger: Logger;
}): Promise<LeftBehind[]> {
  const machines = await o.db.select({ id: schema.machines.id }).from(schema.machines);
  const parts = await o.staging.find(machines.map((m) => m.id));
  if (parts.length === 0) return [];
  const runs = await o.db
    .select({ id: schema.runs.id, status: schema.runs.status })
    .from(schema.runs)
    .where(
      inArray(
        schema.runs.id,
        parts.map((p) => p.runId),
      ),
    );
  const status = new Map(runs.map((r) => [r.id, r.status]));
  const out: LeftBehind[] = [];
  for (const part of parts) {
    // a run going on has its part in use (never at boot, where every such run is lost)
    if (GOING.has(status.get(part.runId) ?? "")) continue;
    const workspaces: LeftBehind["workspaces"] = [];
    for (const w of await o.layout.find(o.machineDirs, { "warren.run": part.runId })) {
      if (w.labels["warren.reset.eligible"] !== "true") continue;
      await rm(w.dir, { recursive: true, force: true });
      workspaces.push({ dir: w.dir, kept: false });
    }
    const instance = part.labels["warren.flow_instance"];
    if (instance !== undefined)
      for (const w of await o.layout.find([], { "warren.kind": "flow", "warren.flow_instance": instance }))
        workspaces.push({ dir: w.dir, kept: true });
    await o.staging.unstage(part.machineId, part.runId);
    out.push({ runId: part.runId, machineId: part.machineId, labels: part.labels, workspaces });
  }
  o.logger.info({ left: out }, "what runs cut short left behind, found by label");
  return out;
}

/**
 * At boot, once the runs that were going on are lost: what they left, found by label
 * (recoverRunParts), then every other reset-eligible workspace of a unit of work that never
 * ended (Workspaces.sweep).
 */
export async function recoverLeftovers(o: {
  db: Db;
  staging: Pick<DirRunStaging, "find" | "unstage">;
  workspaces: Pick<Workspaces, "layout" | "sweep">;
  machineDirs: string[];
  logger: Logger;
}): Promise<void> {
  await recoverRunParts({ ...o, layout: o.workspaces.layout });
  const swept = await o.workspaces.sweep(o.machineDirs);
  if (swept > 0) o.logger.info({ workspaces: swept }, "workspaces of interrupted runs removed");
}
