// Moves of agents between machines (src/relocation/move.ts): the durable intent written before
// the agent's home is copied, so that a server stopped half-way finishes or rolls the move back
// at its next boot.
import { integer, pgTable, text } from "drizzle-orm/pg-core";
import { created } from "./columns.js";
import { agents } from "./schema.js";

export const agentMoves = pgTable("agent_moves", {
  agentId: text("agent_id")
    .primaryKey()
    .references(() => agents.id, { onDelete: "cascade" }),
  fromMachine: text("from_machine").notNull(),
  fromSlot: integer("from_slot").notNull(),
  toMachine: text("to_machine").notNull(),
  toSlot: integer("to_slot").notNull(),
  /** copying: the home is being copied to the target; switched: the agent lives there, the old copy goes. */
  state: text("state", { enum: ["copying", "switched"] }).notNull(),
  createdAt: created(),
});
