// At boot, after the run recorder marked what was going on as lost: those runs that were turns
// are interrupted, and say so in their conversation; so are turns that still waited in line
// when the server stopped (cancelled before they started, as interrupted). A turn suspended
// while its call waited for an approval is neither: the next server takes it up
// (Conversations.takeUp, src/runs/resume.ts).
import { and, eq, isNull, like, or } from "drizzle-orm";
import type { Records } from "../records/index.js";
import type { Db } from "../store/index.js";
import { schema } from "../store/index.js";
import { INTERRUPTED } from "./turn.js";

export async function recoverTurns(o: { db: Db; records: Pick<Records, "runEvent"> }): Promise<number> {
  const rows = await o.db
    .select({
      runId: schema.conversationTurns.runId,
      conversationId: schema.conversationTurns.conversationId,
    })
    .from(schema.conversationTurns)
    .innerJoin(schema.runs, eq(schema.runs.id, schema.conversationTurns.runId))
    .where(
      and(
        eq(schema.conversationTurns.interrupted, false),
        or(
          eq(schema.runs.status, "lost"),
          and(
            eq(schema.runs.status, "cancelled"),
            isNull(schema.runs.startedAt),
            like(schema.runs.statusReason, `${INTERRUPTED}%`),
          ),
        ),
      ),
    );
  for (const r of rows) {
    await o.db
      .update(schema.conversationTurns)
      .set({ interrupted: true })
      .where(eq(schema.conversationTurns.runId, r.runId));
    await o.records.runEvent(r.runId, "interrupted", {
      reason: "interrupted: the server stopped while the turn was going on",
      conversation_id: r.conversationId,
    });
  }
  return rows.length;
}
