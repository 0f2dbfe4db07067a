// The one writer of the records an agent's work leaves in the store: a run's trace events,
// the end of a run (its status_reason and output), and the egress decisions of its box.
// Every string in them (keys of objects too) is redacted first with the agent's redaction
// set: the value of every secret that reaches the agent (use env, model and tool alike) and,
// while a run goes on, its workload token and each value the agent stores from its box
// (openRun). A run that is a conversation's turn has each event stored in its conversation's
// stream too (conversations.ts), in the same transaction. Nothing else inserts those rows;
// grep for `schema.runEvents`, `schema.egressEvents` and `schema.conversationEvents` to check.
// Each stored event is told on the event bus (run.event_stored, conversation.event_stored):
// the server-sent event streams listen there.
import { and, eq, inArray, type SQL } from "drizzle-orm";
import { SECRET_VALUE_MIN_BYTES } from "../contract/secrets.js";
import { Redactor, withCaseForms } from "../secrets/redact.js";
import type { ResolvedSecrets } from "../secrets/service.js";
import type { Db, EgressInsert, RunInsert } from "../store/index.js";
import { schema } from "../store/index.js";
import { ConversationRecords, messageData } from "./conversations.js";
import type { EventBus } from "../events/index.js";

export interface Redacts {
  redactText(s: string): string;
}

const none: Redacts = { redactText: (s) => s };

/**
 * A string as the store can hold it: redacted, and a NUL (which neither a text column nor a
 * jsonb value takes) as U+FFFD, so that a NUL in what an agent prints or a model says cannot
 * make its record fail.
 */
function storable(s: string, r: Redacts): string {
  const out = r.redactText(s);
  return out.includes("\u0000") ? out.replaceAll("\u0000", "\uFFFD") : out;
}

/** Every string in a value (keys too), redacted and storable. */
export function redactDeep(value: unknown, r: Redacts): unknown {
  if (typeof value === "string") return storable(value, r);
  if (Array.isArray(value)) return value.map((v) => redactDeep(v, r));
  if (value instanceof Date) return value;
  if (value && typeof value === "object") {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[storable(k, r)] = redactDeep(v, r);
    return out;
  }
  return value;
}

/** Two sets in a row: what the first leaves, the second redacts too. */
export function both(a: Redacts, b: Redacts): Redacts {
  return { redactText: (s) => b.redactText(a.redactText(s)) };
}

/**
 * The set of a run going on: every value that reached it (`secrets`, resolved as it
 * started), the values added (its workload token, once it has one), and each value the agent
 * stores from its box from now on. `stop` ends the following.
 */
function runSet(secrets: Pick<ResolvedSecrets, "redactor" | "follow">): {
  redactor: Redacts;
  add: (values: readonly (Buffer | string)[]) => void;
  stop: () => void;
} {
  let set = new Redactor(secrets.redactor.values, SECRET_VALUE_MIN_BYTES);
  const add = (values: readonly (Buffer | string)[]) => {
    set = new Redactor([...set.values, ...withCaseForms(values)], SECRET_VALUE_MIN_BYTES);
  };
  const stop = secrets.follow?.((v) => add([v])) ?? (() => {});
  return { redactor: { redactText: (s) => set.redactText(s) }, add, stop };
}

/** A run's recording: its set (which `add` grows), until `close`. */
export interface RunRecording {
  redactor: Redacts;
  add(values: readonly (Buffer | string)[]): void;
  close(): void;
}

/** How long an ended run's set still redacts what is written about it (and its agent). */
const RECENT_MS = 10 * 60_000;
/** The most ended runs whose sets are kept. */
const RECENT_MAX = 4096;

export interface RecordsOptions {
  db: Db;
  /** The redaction set of an agent now: every value that reaches it (Secrets.resolve(agent).redactor). */
  redactorOf: (agent: { id: string; orgId: string }) => Promise<Redacts>;
  /** Where each stored event of a run or a conversation is told. */
  events: Pick<EventBus, "emit">;
}

type RunSet = Partial<Pick<RunInsert, "status" | "statusReason" | "output" | "endedAt">> & Partial<RunInsert>;

export class Records {
  readonly #o: RecordsOptions;
  /** The runs going on: their agent and their whole set (secrets, workload token, stored values). */
  readonly #live = new Map<string, { agentId: string; redactor: Redacts }>();
  /**
   * Runs that ended lately, with their sets: what the box did during the run may still be on
   * its way to the store (egress decisions are written in batches), and a workload token is
   * redacted after its run as during it.
   */
  readonly #recent = new Map<string, { agentId: string; redactor: Redacts; until: number }>();
  /** Conversations' events, messages and transcripts. */
  readonly conversations: ConversationRecords;
  /**
   * Per run: the write of its last event. A run's events are inserted one after another, so
   * that their ids are committed in order and a reader after id n misses none.
   */
  readonly #tails = new Map<string, Promise<unknown>>();

  constructor(o: RecordsOptions) {
    this.#o = o;
    this.conversations = new ConversationRecords(o.db, o.events);
  }

  /**
   * A run going on: its records pass through its whole set (runSet) until `close`, and for
   * RECENT_MS after (what it did may still be on its way to the store).
   */
  openRun(
    runId: string,
    agentId: string,
    secrets: Pick<ResolvedSecrets, "redactor" | "follow">,
  ): RunRecording {
    const set = runSet(secrets);
    const entry = { agentId, redactor: set.redactor };
    this.#live.set(runId, entry);
    this.#prune();
    return {
      redactor: set.redactor,
      add: set.add,
      close: () => {
        set.stop();
        if (this.#live.get(runId) !== entry) return;
        this.#live.delete(runId);
        this.#recent.set(runId, { ...entry, until: Date.now() + RECENT_MS });
      },
    };
  }

  #prune(): void {
    const now = Date.now();
    for (const [id, e] of this.#recent)
      if (e.until < now || this.#recent.size > RECENT_MAX) this.#recent.delete(id);
  }

  /** The set of a run: the one it entered with while it goes on, else its agent's now. */
  async forRun(runId: string): Promise<Redacts> {
    const live = this.#live.get(runId) ?? this.#recent.get(runId);
    if (live) return live.redactor;
    const [run] = await this.#o.db
      .select({ agentId: schema.runs.agentId, orgId: schema.runs.orgId })
      .from(schema.runs)
      .where(eq(schema.runs.id, runId));
    return run ? this.#o.redactorOf({ id: run.agentId, orgId: run.orgId }) : none;
  }

  /** The set of an agent: its secrets now, and the sets of its runs going on. */
  async forAgent(agentId: string): Promise<Redacts> {
    const [row] = await this.#o.db
      .select({ orgId: schema.agents.orgId })
      .from(schema.agents)
      .where(eq(schema.agents.id, agentId));
    let r = row ? await this.#o.redactorOf({ id: agentId, orgId: row.orgId }) : none;
    for (const live of [...this.#live.values(), ...this.#recent.values()])
      if (live.agentId === agentId) r = both(live.redactor, r);
    return r;
  }

  /**
   * A value the server stores about an agent's work outside its runs' records (a machine's
   * runaway event names the command): redacted by the agent's set, as run records are.
   */
  async redactedFor<T>(agentId: string | null | undefined, value: T): Promise<T> {
    return redactDeep(value, agentId ? await this.forAgent(agentId) : none) as T;
  }

  /**
   * Where a run suspended as the server stopped is to go on (src/runs/resume.ts): redacted by
   * the run's set, like its events, and kept until the next server takes the run up.
   */
  async suspendRun(runId: string, agentId: string, state: unknown): Promise<void> {
    const redacted = redactDeep(state, await this.forRun(runId));
    await this.#o.db
      .insert(schema.runSuspensions)
      .values({ runId, agentId, state: redacted })
      .onConflictDoUpdate({
        target: schema.runSuspensions.runId,
        set: { state: redacted, createdAt: new Date() },
      });
  }

  /**
   * One event of a run's trace; a turn's event is its conversation's too. The events of one
   * run are inserted in the order they were written.
   */
  async runEvent(runId: string, type: string, data: unknown, at?: Date): Promise<void> {
    const r = await this.forRun(runId);
    const row = { runId, type: storable(type, r), data: redactDeep(data, r), ...(at ? { at } : {}) };
    const conversationId = await this.conversations.turnOf(runId);
    const write = async () => {
      if (!conversationId) {
        await this.#o.db.insert(schema.runEvents).values(row);
        return;
      }
      await this.#o.db.transaction(async (tx) => {
        await tx.insert(schema.runEvents).values(row);
        await this.conversations.insert(tx, conversationId, row);
      });
    };
    const before = this.#tails.get(runId) ?? Promise.resolve();
    const mine = before.then(write, write);
    this.#tails.set(runId, mine);
    try {
      await mine;
    } finally {
      if (this.#tails.get(runId) === mine) this.#tails.delete(runId);
      this.#o.events.emit("run.event_stored", { runId });
      if (conversationId) this.conversations.notify(conversationId);
    }
  }

  /**
   * One event of a conversation outside its turns' traces (a message, an interruption),
   * redacted by `redactor` (the agent's set, or its turn's).
   */
  async conversationEvent(
    conversationId: string,
    e: { runId: string | null; type: string; data: unknown },
    redactor: Redacts,
  ): Promise<number> {
    const seq = await this.#o.db.transaction((tx) =>
      this.conversations.insert(tx, conversationId, {
        runId: e.runId,
        type: storable(e.type, redactor),
        data: redactDeep(e.data, redactor),
      }),
    );
    this.conversations.notify(conversationId);
    return seq;
  }

  /**
   * A message of a conversation (the person's or the agent's), its text redacted, with its
   * `message` event in the same transaction.
   */
  async conversationMessage(
    row: typeof schema.conversationMessages.$inferInsert,
    redactor: Redacts,
  ): Promise<typeof schema.conversationMessages.$inferSelect> {
    const clean = { ...row, text: storable(row.text, redactor) };
    const stored = await this.#o.db.transaction(async (tx) => {
      const [m] = await tx.insert(schema.conversationMessages).values(clean).returning();
      if (!m) throw new Error("message insert returned nothing");
      await tx
        .update(schema.conversations)
        .set({ lastMessageAt: m.at })
        .where(eq(schema.conversations.id, m.conversationId));
      await this.conversations.insert(tx, m.conversationId, {
        runId: m.runId,
        type: "message",
        data: messageData(m),
      });
      return m;
    });
    this.conversations.notify(stored.conversationId);
    return stored;
  }

  /** Appends to a conversation's model history, every string redacted by the turn's set. */
  async transcript(conversationId: string, runId: string, messages: readonly unknown[]): Promise<void> {
    if (messages.length === 0) return;
    const r = await this.forRun(runId);
    await this.#o.db
      .insert(schema.conversationTranscript)
      .values(messages.map((m) => ({ conversationId, runId, message: redactDeep(m, r) })));
  }

  /**
   * Sets fields of one run (its end: status, status_reason, output, ...), the strings
   * redacted; `where` narrows it further (a status it must still have). Answers whether a
   * row changed.
   */
  async updateRun(runId: string, set: RunSet, where?: SQL): Promise<boolean> {
    const r = await this.forRun(runId);
    const clean: RunSet = { ...set };
    if (typeof clean.statusReason === "string") clean.statusReason = storable(clean.statusReason, r);
    if (typeof clean.output === "string") clean.output = storable(clean.output, r);
    if (clean.receipt !== undefined) clean.receipt = redactDeep(clean.receipt, r);
    const rows = await this.#o.db
      .update(schema.runs)
      .set(clean)
      .where(where ? and(eq(schema.runs.id, runId), where) : eq(schema.runs.id, runId))
      .returning({ id: schema.runs.id });
    return rows.length > 0;
  }

  /** Sets fields of every run `where` picks, each redacted by its own run's set; answers their ids. */
  async updateRuns(where: SQL, set: RunSet): Promise<string[]> {
    const picked = await this.#o.db.select({ id: schema.runs.id }).from(schema.runs).where(where);
    const out: string[] = [];
    for (const p of picked) if (await this.updateRun(p.id, set, where)) out.push(p.id);
    return out;
  }

  /**
   * Ends many queued runs at once (an agent's backlog as it is deleted, the line as the server
   * stops): one UPDATE and one INSERT of their events per 1000 runs, never a statement per
   * run. `reason` and `data` are the server's own words (no secret of any run is in them).
   * A run that is a conversation's turn gets its event through runEvent, in its conversation
   * too. Answers the ids of the runs that were still `queued` and now are `cancelled`.
   */
  async endQueued(runIds: string[], reason: string, type: string, data: unknown): Promise<string[]> {
    const out: string[] = [];
    for (let i = 0; i < runIds.length; i += 1000) {
      const chunk = runIds.slice(i, i + 1000);
      const rows = await this.#o.db
        .update(schema.runs)
        .set({ status: "cancelled", statusReason: reason, endedAt: new Date() })
        .where(and(inArray(schema.runs.id, chunk), eq(schema.runs.status, "queued")))
        .returning({ id: schema.runs.id });
      const ids = rows.map((r) => r.id);
      if (ids.length === 0) continue;
      const turns = await this.#o.db
        .select({ runId: schema.conversationTurns.runId })
        .from(schema.conversationTurns)
        .where(inArray(schema.conversationTurns.runId, ids));
      const turn = new Set(turns.map((t) => t.runId));
      const plain = ids.filter((id) => !turn.has(id));
      if (plain.length > 0)
        await this.#o.db.insert(schema.runEvents).values(plain.map((runId) => ({ runId, type, data })));
      for (const runId of plain) this.#o.events.emit("run.event_stored", { runId });
      for (const id of turn) await this.runEvent(id, type, data);
      out.push(...ids);
    }
    return out;
  }

  /**
   * Egress decisions, each with the run event it makes when a run was going on (`event`
   * builds the event's data from the redacted row). A row whose agent or run is gone is
   * left out.
   */
  async egress(
    rows: EgressInsert[],
    event: (row: EgressInsert) => unknown,
    onLost: (err: unknown, runId: string) => void,
  ): Promise<void> {
    const db = this.#o.db;
    const byAgent = new Map<string, Redacts>();
    const clean: EgressInsert[] = [];
    for (const row of rows) {
      let r = byAgent.get(row.agentId);
      if (!r) byAgent.set(row.agentId, (r = await this.forAgent(row.agentId)));
      clean.push(redactDeep(row, r) as EgressInsert);
    }
    if (clean.length === 0) return;
    try {
      await db.insert(schema.egressEvents).values(clean);
    } catch {
      // one of them names an agent deleted since: the others are stored one by one
      for (const row of clean)
        await db
          .insert(schema.egressEvents)
          .values(row)
          .catch(() => undefined);
    }
    for (const row of clean) {
      if (!row.runId) continue;
      const runId = row.runId;
      // the row is already clean of the agent's set; the run's own (its token) is applied too
      await this.runEvent(runId, "egress", event(row), row.at).catch((err: unknown) => onLost(err, runId));
    }
  }
}
