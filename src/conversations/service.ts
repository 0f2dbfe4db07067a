// Conversations: threads of turns with one agent. A message is stored (redacted) and starts
// a turn, a run of the agent by its kind that the run recorder drives like every run, queued
// behind what the agent runs already (one generation per agent, in order: a later message
// waits for the turn before it, whose answer is in its history). Every event of every turn is
// the conversation's too (src/records/conversations.ts), in one stream with ids in commit
// order. A turn cut short by its box stopping or the server stopping is marked interrupted;
// the next message goes on from the transcript, on a fresh box if need be. Who reaches a
// conversation is reach.ts; its turns, started and taken up, turns.ts; a turn's run, turn.ts.
// On the event bus it hears runs' ends (a turn's is told again as turn.ended) and boxes'
// stops (the turns going on in the box are interrupted); its streams hear the stored events.
import { and, asc, desc, eq, gt, inArray, sql } from "drizzle-orm";
import { allows, type Access, type Identity } from "../access/index.js";
import type { AgentRow, Agents } from "../agents/service.js";
import type { AgentSpec } from "../contract/spec.js";
import type { BranchRow, Branches } from "./branches.js";
import type { Areas } from "../areas/service.js";
import type {
  Conversation,
  ConversationCreateRequest,
  ConversationDiff,
  ConversationEvent,
  ConversationMessage,
  ConversationMessageCreated,
} from "../contract/types.js";
import { WarrenError } from "../errors.js";
import { newId } from "../ids.js";
import type { ModelGateway } from "../models/types.js";
import type { Logger } from "../observability/log.js";
import type { Records } from "../records/index.js";
import type { AgentRunners } from "../runs/kinds.js";
import { planAgentRun } from "../runs/model-run.js";
import type { RunRecorder } from "../runs/recorder.js";
import type { Db } from "../store/index.js";
import { schema } from "../store/index.js";
import { ConversationForks, type ForkPoint } from "./fork.js";
import type { Personas } from "./personas.js";
import { ConversationReach } from "./reach.js";
import type { TurnDeps } from "./turn.js";
import { ConversationTurns, pinnedVersions } from "./turns.js";
import { authorOf, messageView, view, type ConversationRow } from "./views.js";
import type { InstanceRef } from "../workspaces/service.js";
import type { EventBus } from "../events/index.js";

export interface ConversationsOptions {
  db: Db;
  access: Access;
  agents: Pick<Agents, "load" | "specOf" | "specAt" | "machineOf">;
  personas: Personas;
  areas: Pick<Areas, "foldersOf" | "fenceOf">;
  branches: Branches;
  records: Records;
  recorder: RunRecorder;
  gateway: ModelGateway;
  runners: AgentRunners;
  /** The most bytes of model history a turn sends (history.ts says what is cut). */
  historyBytes: number;
  logger: Logger;
  /** The flow instance a conversation is held in (its turns' /workspace is the instance's). */
  instanceOf?: ((conversationId: string) => Promise<InstanceRef | undefined>) | undefined;
  /** The canary's version when a routing key falls in its share (src/versions), else null. */
  canaryFor?:
    ((agent: AgentRow, key: string) => Promise<{ spec: AgentSpec; version: number } | null>) | undefined;
  /** Keeps where an assistant turn stands while a call waits for an approval (src/runs/resume.ts). */
  suspend?: TurnDeps["suspend"];
  /** Runs' ends and boxes' stops heard, turns' ends told (turn.ended), stored events watched. */
  events: Pick<EventBus, "on" | "emit">;
}

export class Conversations {
  readonly #o: ConversationsOptions;
  /** Who reaches which conversation, and the folders its turns keep (reach.ts). */
  readonly #r: ConversationReach;
  /** Its turns: started, taken up, interrupted (turns.ts). */
  readonly #t: ConversationTurns;
  /** Its forks (fork.ts). */
  readonly #f: ConversationForks;

  constructor(o: ConversationsOptions) {
    this.#o = o;
    this.#r = new ConversationReach(o);
    this.#t = new ConversationTurns({ ...o, reach: this.#r });
    this.#f = new ConversationForks({ ...o, reach: this.#r });
    o.events.on("run.ended", async ({ runId, status }) => {
      const conversationId = await o.records.conversations.turnOf(runId);
      if (conversationId) o.events.emit("turn.ended", { conversationId, runId, status });
    });
    // a box that stops interrupts the turns going on in it
    o.events.on("box.stopped", (e) => this.#t.boxStopped(e.machineId, e.reason));
  }

  async create(who: Identity, agentId: string, body: ConversationCreateRequest): Promise<Conversation> {
    const o = this.#o;
    const agent = await o.agents.load(who, agentId, "converse");
    const id = newId("cnv");
    // the canary takes a share of new conversations by the runs' sticky rule, for their whole life
    const canary = (await o.canaryFor?.(agent, body.routing_key ?? id)) ?? null;
    const { spec, version } = canary ?? (await o.agents.specOf(agent));
    // an agent that does not think (kind command) holds no conversation
    planAgentRun(spec, version, o.runners, undefined);
    const held = await o.access.areasOf(agent.orgId, who);
    const persona = body.persona_id ? await o.personas.chosen(agent.id, body.persona_id, held) : null;
    const role = await o.access.roleIn(agent.orgId, who);
    if (role === "guest" && !(persona?.area && held.includes(persona.area)))
      throw new WarrenError(
        "area.refused",
        "a guest talks only through a persona homed in one of its areas; give persona_id",
      );
    const [row] = await o.db
      .insert(schema.conversations)
      .values({
        id,
        orgId: agent.orgId,
        agentId: agent.id,
        // stored like every record of the agent's work: redacted of its secrets
        title: await o.records.redactedFor(agent.id, body.title ?? ""),
        startedBy: authorOf(who),
        personaId: persona?.id ?? null,
        // the starter's areas, kept for the conversation's whole life
        areas: [...held],
        repo: body.repo ?? null,
      })
      .returning();
    if (!row) throw new Error("conversation insert returned nothing");
    if (canary)
      await o.db.insert(schema.conversationVersions).values({ conversationId: id, version: canary.version });
    const pinned = canary?.version ?? null;
    if (body.repo === undefined) return view(row, null, pinned);
    try {
      const fence = await this.#r.fenceOf(row, persona);
      return view(row, await o.branches.create(agent, row.id, body.repo, fence), pinned);
    } catch (err) {
      await o.db.delete(schema.conversations).where(eq(schema.conversations.id, row.id));
      throw err;
    }
  }

  /** A new conversation from this one up to a message (default: all), with its branch's work (fork.ts). */
  fork(who: Identity, id: string, at: ForkPoint): Promise<Conversation> {
    return this.#f.fork(who, id, at);
  }

  async list(who: Identity, agentId: string): Promise<Conversation[]> {
    const agent = await this.#o.agents.load(who, agentId, "converse").catch(async (err: unknown) => {
      // an auditor or viewer lists what it may read
      if (err instanceof WarrenError && err.code === "access.denied")
        return this.#o.agents.load(who, agentId, "read");
      throw err;
    });
    const fenced = await this.#r.fenced(agent.orgId, who);
    const reads = allows((await this.#o.access.roleIn(agent.orgId, who)) ?? "guest", "read");
    const all = await this.#o.db
      .select()
      .from(schema.conversations)
      .where(
        fenced && !reads
          ? and(
              eq(schema.conversations.agentId, agent.id),
              sql`${schema.conversations.startedBy}->>'user_id' = ${who.userId}`,
            )
          : eq(schema.conversations.agentId, agent.id),
      )
      .orderBy(desc(schema.conversations.createdAt), desc(schema.conversations.id))
      .limit(500);
    // a member who holds areas: theirs, and another's whose areas lie inside their own
    const rows = [];
    for (const r of all)
      if (!fenced || r.startedBy.user_id === who.userId || (await this.#r.within(r, who))) rows.push(r);
    const withRepo = rows.filter((r) => r.repo !== null).map((r) => r.id);
    const branches =
      withRepo.length === 0
        ? []
        : await this.#o.db
            .select()
            .from(schema.conversationBranches)
            .where(inArray(schema.conversationBranches.conversationId, withRepo));
    const pins = await pinnedVersions(
      this.#o.db,
      rows.map((r) => r.id),
    );
    return rows.map((r) =>
      view(r, branches.find((b) => b.conversationId === r.id) ?? null, pins.get(r.id) ?? null),
    );
  }

  async get(who: Identity, id: string): Promise<Conversation> {
    const c = await this.#r.load(who, id, "read");
    return view(
      c,
      await this.#o.branches.of(c.id),
      (await pinnedVersions(this.#o.db, [c.id])).get(c.id) ?? null,
    );
  }

  async #branch(c: ConversationRow): Promise<BranchRow> {
    const b = await this.#o.branches.of(c.id);
    if (!b) throw new WarrenError("not_found", "the conversation has no branch: it was created without repo");
    return b;
  }

  /** What the conversation's branch changed against its base. */
  async diff(who: Identity, id: string): Promise<ConversationDiff> {
    const c = await this.#r.load(who, id, "inspect");
    const b = await this.#branch(c);
    await this.#r.insideAreas(c, who, b.repo);
    return this.#o.branches.diff(await this.#r.agentOf(who, c), b);
  }

  /** Lands the conversation's branch into its base (owners, admins, editors who hold no area). */
  async land(who: Identity, id: string): Promise<{ landed: true; commit: string }> {
    const c = await this.#r.load(who, id, "inspect");
    await this.#o.access.require(c.orgId, who, "write", "conversation");
    const b = await this.#branch(c);
    const agent = await this.#r.agentOf(who, c);
    await this.#o.branches.commit(agent, b, `Before landing (${authorOf(who).name})`);
    const title = c.title || c.id;
    const commit = await this.#o.branches.land(
      agent,
      b,
      `Land ${b.branch}: ${title}\n\nLanded by ${authorOf(who).name}`,
    );
    return { landed: true, commit };
  }

  async close(who: Identity, id: string): Promise<Conversation> {
    const c = await this.#r.load(who, id, "write");
    const [row] = await this.#o.db
      .update(schema.conversations)
      .set({ status: "closed" })
      .where(eq(schema.conversations.id, c.id))
      .returning();
    if (!row) throw new WarrenError("not_found", "conversation was not found");
    const b = await this.#o.branches.of(c.id);
    if (b?.worktree)
      await this.#o.branches
        .close(await this.#r.agentOf(who, c), b, `Closed (${authorOf(who).name})`)
        .catch((err: unknown) =>
          this.#o.logger.warn({ err, conversationId: c.id }, "the conversation's worktree was not removed"),
        );
    if (c.status !== "closed")
      await this.#o.records.conversationEvent(
        c.id,
        { runId: null, type: "closed", data: {} },
        { redactText: (s) => s },
      );
    return view(row);
  }

  async messages(who: Identity, id: string): Promise<ConversationMessage[]> {
    const c = await this.#r.load(who, id, "inspect");
    const rows = await this.#o.db
      .select()
      .from(schema.conversationMessages)
      .where(eq(schema.conversationMessages.conversationId, c.id))
      .orderBy(asc(schema.conversationMessages.at), asc(schema.conversationMessages.id));
    return rows.map(messageView);
  }

  /** Checks the caller may read the conversation's events (before a stream starts). */
  async openEvents(who: Identity, id: string): Promise<ConversationRow> {
    return this.#r.load(who, id, "inspect");
  }

  /** The conversation's events after `after`, in order. */
  async events(conversationId: string, after: number, limit: number): Promise<ConversationEvent[]> {
    const rows = await this.#o.db
      .select()
      .from(schema.conversationEvents)
      .where(
        and(
          eq(schema.conversationEvents.conversationId, conversationId),
          gt(schema.conversationEvents.seq, after),
        ),
      )
      .orderBy(asc(schema.conversationEvents.seq))
      .limit(limit);
    return rows.map((e) => ({
      id: e.seq,
      type: e.type,
      run_id: e.runId,
      at: e.at.toISOString(),
      data: e.data,
    }));
  }

  /** Calls `fn` at each new stored event of a conversation until the answered function is called. */
  watch(conversationId: string, fn: () => void): () => void {
    return this.#o.events.on("conversation.event_stored", () => fn(), conversationId);
  }

  /** A person's message: stored, then its turn started (or queued behind the agent's work). */
  post(who: Identity, id: string, text: string): Promise<ConversationMessageCreated> {
    return this.#t.post(who, id, text);
  }

  /** At boot: the turns the last server's stop suspended, taken up again (src/runs/resume.ts). */
  takeUp(): Promise<number> {
    return this.#t.takeUpSuspended();
  }

  /** At boot: the turns the last server's stop cut short (./recover.ts). */
  recover(): Promise<number> {
    return this.#t.recover();
  }
}
