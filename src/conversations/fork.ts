// Forking a conversation: a new conversation that starts where another stood at one of its
// messages. It holds the source's messages up to that one and the model history (transcript)
// of those turns, copied as they were stored (redacted already); its starter is the person who
// forked; its persona, areas (fence) and canary version are the source's. A conversation with
// a branch gives the fork a branch of its own, made from the head of the source's branch with
// the source worktree's uncommitted changes on it (branches.ts says how, and what it costs).
// The source is only read: no row of it is locked or changed, its turn going on goes on.
import { and, asc, eq, inArray } from "drizzle-orm";
import type { Access, Identity } from "../access/index.js";
import type { Agents } from "../agents/service.js";
import type { Conversation } from "../contract/types.js";
import { WarrenError } from "../errors.js";
import { newId } from "../ids.js";
import type { Records } from "../records/index.js";
import type { Db } from "../store/index.js";
import { schema } from "../store/index.js";
import type { Branches } from "./branches.js";
import type { Personas } from "./personas.js";
import type { ConversationReach } from "./reach.js";
import { pinnedVersions } from "./turns.js";
import { authorOf, view } from "./views.js";

interface ForkOptions {
  db: Db;
  access: Access;
  agents: Pick<Agents, "load">;
  personas: Pick<Personas, "find">;
  branches: Branches;
  records: Records;
  reach: ConversationReach;
}

/** The most transcript rows inserted at once. */
const CHUNK = 500;

/** Which message a fork starts after: its place (1 is the first) or its id. */
export type ForkPoint = number | string | undefined;

export class ConversationForks {
  constructor(private readonly o: ForkOptions) {}

  async fork(who: Identity, id: string, at: ForkPoint): Promise<Conversation> {
    const o = this.o;
    // the caller reads the source's messages, and may start a conversation with its agent
    const c = await o.reach.load(who, id, "inspect");
    const agent = await o.agents.load(who, c.agentId, "converse");
    const persona = await o.personas.find(c.personaId);
    const role = await o.access.roleIn(c.orgId, who);
    const held = await o.access.areasOf(c.orgId, who);
    if (role === "guest" && !(persona?.area && held.includes(persona.area)))
      throw new WarrenError("area.refused", "a guest talks only through a persona homed in one of its areas");
    const all = await o.db
      .select()
      .from(schema.conversationMessages)
      .where(eq(schema.conversationMessages.conversationId, c.id))
      .orderBy(asc(schema.conversationMessages.at), asc(schema.conversationMessages.id));
    const upTo = placeOf(all, at);
    const kept = all.slice(0, upTo);
    const forkId = newId("cnv");
    const [row] = await o.db
      .insert(schema.conversations)
      .values({
        id: forkId,
        orgId: c.orgId,
        agentId: c.agentId,
        title: c.title,
        startedBy: authorOf(who),
        personaId: c.personaId,
        areas: [...c.areas],
        repo: c.repo,
        lastMessageAt: kept.at(-1)?.at ?? null,
      })
      .returning();
    if (!row) throw new Error("conversation insert returned nothing");
    try {
      const pinned = (await pinnedVersions(o.db, [c.id])).get(c.id) ?? null;
      if (pinned !== null)
        await o.db.insert(schema.conversationVersions).values({ conversationId: forkId, version: pinned });
      await this.#copy(c.id, forkId, kept);
      const last = kept.at(-1);
      await o.records.conversationEvent(
        forkId,
        {
          runId: null,
          type: "forked",
          data: { conversation_id: c.id, at_message: last?.id ?? null, messages: kept.length },
        },
        { redactText: (s) => s },
      );
      const source = c.repo !== null ? await o.branches.of(c.id) : null;
      const branch = source
        ? await o.branches.fork(
            agent,
            source,
            forkId,
            await o.reach.fenceOf(row, persona),
            `Forked from ${c.id}${last ? ` at ${last.id}` : ""}: its uncommitted changes\n\nForked by ${authorOf(who).name}`,
          )
        : null;
      const [now] = await o.db.select().from(schema.conversations).where(eq(schema.conversations.id, forkId));
      return view(now ?? row, branch, pinned);
    } catch (err) {
      await o.db.delete(schema.conversations).where(eq(schema.conversations.id, forkId));
      throw err;
    }
  }

  /**
   * The kept messages and their turns' model history, copied in order. A turn whose answer is
   * kept keeps its whole history; one whose answer is not (the fork is at its person's
   * message) keeps that message alone.
   */
  async #copy(from: string, to: string, kept: (typeof schema.conversationMessages.$inferSelect)[]) {
    const db = this.o.db;
    if (kept.length === 0) return;
    await db
      .insert(schema.conversationMessages)
      .values(kept.map((m) => ({ ...m, id: newId("msg"), conversationId: to })));
    const runs = [...new Set(kept.flatMap((m) => (m.runId ? [m.runId] : [])))];
    if (runs.length === 0) return;
    const answered = new Set(kept.filter((m) => m.role === "agent" && m.runId).map((m) => m.runId));
    const t = schema.conversationTranscript;
    const rows = await db
      .select()
      .from(t)
      .where(and(eq(t.conversationId, from), inArray(t.runId, runs)))
      .orderBy(asc(t.id))
      .then((all) =>
        all.filter((r) => answered.has(r.runId) || (r.message as { role?: string } | null)?.role === "user"),
      );
    for (let i = 0; i < rows.length; i += CHUNK)
      await db.insert(t).values(
        rows.slice(i, i + CHUNK).map((r) => ({
          conversationId: to,
          runId: r.runId,
          message: r.message,
          at: r.at,
        })),
      );
  }
}

/** How many messages a fork keeps: all of them, or up to the one named. */
function placeOf(all: readonly { id: string }[], at: ForkPoint): number {
  if (at === undefined) return all.length;
  const n = typeof at === "number" ? at : all.findIndex((m) => m.id === at) + 1;
  if (!Number.isInteger(n) || n < 1 || n > all.length)
    throw new WarrenError(
      "request.invalid",
      `at_message: ${JSON.stringify(at)} names no message of the conversation (it has ${all.length}; give 1..${all.length} or a message's id)`,
      { field: "at_message" },
    );
  return n;
}
