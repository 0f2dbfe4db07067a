// The records of conversations: their events, their messages and their model history
// (transcript), each stored redacted, like every record of an agent's work. An event takes
// the next id of its conversation (conversations.event_seq) under the conversation's row
// lock, in the transaction that inserts it: ids are given in the order events are committed,
// so a reader that has seen id n and asks for what is after it misses nothing, on PGlite and
// on PostgreSQL alike.
import { eq, sql } from "drizzle-orm";
import type { EventBus } from "../events/index.js";
import type { Db } from "../store/index.js";
import { schema } from "../store/index.js";

/** A transaction of the store (or the store itself). */
type Tx = Pick<Db, "update" | "insert">;

/** The run of a turn's conversation, cached: a run never changes conversation. */
const TURNS_MAX = 4096;

/** A stored message as the API and the stream show it. */
export function messageData(m: typeof schema.conversationMessages.$inferSelect) {
  return {
    id: m.id,
    role: m.role,
    text: m.text,
    author: m.author,
    run_id: m.runId,
    at: m.at.toISOString(),
  };
}

export class ConversationRecords {
  readonly #db: Db;
  /** Per run: its conversation, or null when it is no turn. */
  readonly #turns = new Map<string, string | null>();
  /** Where each stored event is told (conversation.event_stored): the streams listen there. */
  readonly #events: Pick<EventBus, "emit">;

  constructor(db: Db, events: Pick<EventBus, "emit">) {
    this.#db = db;
    this.#events = events;
  }

  /** Says whether a run is a turn of a conversation (null: it is none), before its first event. */
  knowTurn(runId: string, conversationId: string | null): void {
    if (this.#turns.size >= TURNS_MAX) this.#turns.clear();
    this.#turns.set(runId, conversationId);
  }

  /** The conversation a run is a turn of, or null. */
  async turnOf(runId: string): Promise<string | null> {
    const known = this.#turns.get(runId);
    if (known !== undefined) return known;
    const [t] = await this.#db
      .select({ c: schema.conversationTurns.conversationId })
      .from(schema.conversationTurns)
      .where(eq(schema.conversationTurns.runId, runId));
    const c = t?.c ?? null;
    if (this.#turns.size >= TURNS_MAX) this.#turns.clear();
    this.#turns.set(runId, c);
    return c;
  }

  /** Inserts one (already redacted) event of a conversation in `tx`; answers its id. */
  async insert(
    tx: Tx,
    conversationId: string,
    e: { runId: string | null; type: string; data: unknown; at?: Date | undefined },
  ): Promise<number> {
    const [c] = await tx
      .update(schema.conversations)
      .set({ eventSeq: sql`${schema.conversations.eventSeq} + 1` })
      .where(eq(schema.conversations.id, conversationId))
      .returning({ seq: schema.conversations.eventSeq });
    if (!c) return 0;
    await tx.insert(schema.conversationEvents).values({
      conversationId,
      seq: c.seq,
      runId: e.runId,
      type: e.type,
      data: e.data ?? {},
      ...(e.at ? { at: e.at } : {}),
    });
    return c.seq;
  }

  /** Tells that a conversation has a new event (conversation.event_stored). */
  notify(conversationId: string): void {
    this.#events.emit("conversation.event_stored", { conversationId });
  }
}
