// Suspended runs (src/runs/resume.ts), a part of the schema re-exported by schema.ts: what an
// assistant run that waited for an approval when the server stopped needs to go on in the next
// server (its model messages so far, the calls of its step still to make), redacted like every
// record of the agent's work. The row goes once the run is taken up again.
import { jsonb, pgTable, text } from "drizzle-orm/pg-core";
import { created } from "./columns.js";
import { runs } from "./schema.js";

export const runSuspensions = pgTable("run_suspensions", {
  runId: text("run_id")
    .primaryKey()
    .references(() => runs.id, { onDelete: "cascade" }),
  agentId: text("agent_id").notNull(),
  state: jsonb("state").notNull(),
  createdAt: created(),
});
