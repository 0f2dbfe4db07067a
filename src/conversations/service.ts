// Conversations: threads of turns with one agent. A message is stored (redacted) and starts
// a turn, a run of the agent by its kind that the run recorder drives like every run, queued
// behind what the agent runs already (one generation per agent, in order: a later message
// waits for the turn before it, whose answer is in its history). Every event of every turn is
// the conversation's too (src/records/conversations.ts), in one stream with ids in commit
// order. A turn cut short by its box stopping or the server stopping is marked interrupted;
// the next message goes on from the transcript, on a fresh box if need be.
import { and, asc, desc, eq, gt, inArray, sql } from "drizzle-orm";
import { allows, type Access, type Identity } from "../access/index.js";
import type { AgentRow, Agents } from "../agents/service.js";
import type { AgentSpec } from "../contract/spec.js";
import { narrow, standing, type Fence } from "../areas/fence.js";
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
import type { AgentRunners, SuspendedLoop } from "../runs/kinds.js";
import { planAgentRun } from "../runs/model-run.js";
import type { RunRecorder } from "../runs/recorder.js";
import type { RunRow } from "../runs/view.js";
import { MAX_INPUT_BYTES } from "../runs/service.js";
import type { Db } from "../store/index.js";
import { schema } from "../store/index.js";
import { narrowSpec, type Personas } from "./personas.js";
import { recoverTurns } from "./recover.js";
import { TurnRunner, type TurnDeps } from "./turn.js";
import { authorOf, commitMessage, messageView, view, type ConversationRow } from "./views.js";
import type { InstanceRef } from "../workspaces/service.js";

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
}

export class Conversations {
  readonly #o: ConversationsOptions;
  /** The turns going on, by run, with their machine. */
  readonly #active = new Map<string, { machineId: string; conversationId: string }>();
  readonly #turns: TurnDeps;

  constructor(o: ConversationsOptions) {
    this.#o = o;
    this.#turns = {
      db: o.db,
      records: o.records,
      gateway: o.gateway,
      runners: o.runners,
      historyBytes: o.historyBytes,
      active: this.#active,
      suspend: o.suspend,
    };
  }

  /**
   * A conversation the caller may reach. A member who holds areas (a guest always does) talks
   * (converse) in the conversations they started, and reads (never writes) another's only when
   * everything it holds lies inside their own areas; any other is not found.
   */
  async #load(who: Identity, id: string, perm: "read" | "inspect" | "write"): Promise<ConversationRow> {
    const [c] = await this.#o.db.select().from(schema.conversations).where(eq(schema.conversations.id, id));
    if (!c) throw new WarrenError("not_found", "conversation was not found");
    if (await this.#fenced(c.orgId, who)) {
      if (c.startedBy.user_id === who.userId) {
        await this.#o.access.require(c.orgId, who, "converse", "conversation");
        return c;
      }
      await this.#o.access.require(c.orgId, who, "read", "conversation");
      if (!(await this.#within(c, who))) throw new WarrenError("not_found", "conversation was not found");
      if (perm === "write")
        throw new WarrenError(
          "access.denied",
          "you hold areas, so you talk only in the conversations you started; this one you may read",
        );
    }
    await this.#o.access.require(c.orgId, who, perm, "conversation");
    return c;
  }

  /** Whether everything a conversation holds (its starter's areas, as they are now) lies inside the caller's. */
  async #within(c: ConversationRow, who: Identity): Promise<boolean> {
    const theirs = await this.#o.areas.foldersOf(c.orgId, c.areas);
    if (theirs === null || theirs.length === 0) return false;
    const mine = await this.#o.areas.fenceOf(c.orgId, who);
    return theirs.every((f) => standing(f.split("/"), mine) === "inside");
  }

  /** Whether the caller holds areas in the organisation (owners and admins never do). */
  async #fenced(orgId: string, who: Identity): Promise<boolean> {
    return (await this.#o.access.areasOf(orgId, who)).length > 0;
  }

  /**
   * The folders a turn keeps: its starter's areas, narrowed by its persona's (never widened),
   * read now, so that an edit of an area reaches the next turn. null: the whole home.
   */
  async #fenceOf(c: ConversationRow, persona: { area: string | null } | null): Promise<Fence> {
    const starter = await this.#o.areas.foldersOf(c.orgId, c.areas);
    const homed = persona?.area ? await this.#o.areas.foldersOf(c.orgId, [persona.area]) : null;
    return narrow(starter, homed);
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
      const fence = await this.#fenceOf(row, persona);
      return view(row, await o.branches.create(agent, row.id, body.repo, fence), pinned);
    } catch (err) {
      await o.db.delete(schema.conversations).where(eq(schema.conversations.id, row.id));
      throw err;
    }
  }

  async list(who: Identity, agentId: string): Promise<Conversation[]> {
    const agent = await this.#o.agents.load(who, agentId, "converse").catch(async (err: unknown) => {
      // an auditor or viewer lists what it may read
      if (err instanceof WarrenError && err.code === "access.denied")
        return this.#o.agents.load(who, agentId, "read");
      throw err;
    });
    const fenced = await this.#fenced(agent.orgId, who);
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
      if (!fenced || r.startedBy.user_id === who.userId || (await this.#within(r, who))) rows.push(r);
    const withRepo = rows.filter((r) => r.repo !== null).map((r) => r.id);
    const branches =
      withRepo.length === 0
        ? []
        : await this.#o.db
            .select()
            .from(schema.conversationBranches)
            .where(inArray(schema.conversationBranches.conversationId, withRepo));
    const pins = await this.#pinned(rows.map((r) => r.id));
    return rows.map((r) =>
      view(r, branches.find((b) => b.conversationId === r.id) ?? null, pins.get(r.id) ?? null),
    );
  }

  async get(who: Identity, id: string): Promise<Conversation> {
    const c = await this.#load(who, id, "read");
    return view(c, await this.#o.branches.of(c.id), (await this.#pinned([c.id])).get(c.id) ?? null);
  }

  /** The versions the canary gave conversations at their start, by conversation. */
  async #pinned(ids: string[]): Promise<Map<string, number>> {
    if (ids.length === 0) return new Map();
    const v = schema.conversationVersions;
    const rows = await this.#o.db.select().from(v).where(inArray(v.conversationId, ids));
    return new Map(rows.map((r) => [r.conversationId, r.version]));
  }

  /** The spec and version a turn runs: the one the canary gave at the start, else the current one. */
  async #specOf(
    agent: AgentRow,
    conversationId: string,
  ): Promise<{ spec: AgentSpec; version: number | null }> {
    return this.#specAt(agent, (await this.#pinned([conversationId])).get(conversationId));
  }

  /** The spec of `version` when it is kept, else the current one. */
  async #specAt(
    agent: AgentRow,
    version: number | null | undefined,
  ): Promise<{ spec: AgentSpec; version: number | null }> {
    const spec = version == null ? null : await this.#o.agents.specAt(agent.id, version);
    return spec && version != null ? { spec, version } : this.#o.agents.specOf(agent);
  }

  /** The agent of a conversation, for the caller who reached the conversation. */
  async #agentOf(who: Identity, c: ConversationRow) {
    const talks = c.startedBy.user_id === who.userId && (await this.#fenced(c.orgId, who));
    return this.#o.agents.load(who, c.agentId, talks ? "converse" : "inspect");
  }

  async #branch(c: ConversationRow): Promise<BranchRow> {
    const b = await this.#o.branches.of(c.id);
    if (!b) throw new WarrenError("not_found", "the conversation has no branch: it was created without repo");
    return b;
  }

  /** What the conversation's branch changed against its base. */
  async diff(who: Identity, id: string): Promise<ConversationDiff> {
    const c = await this.#load(who, id, "inspect");
    const b = await this.#branch(c);
    // the repository's files are the caller's to see only inside their areas as they are now
    if (standing(b.repo.split("/"), await this.#o.areas.fenceOf(c.orgId, who)) !== "inside")
      throw new WarrenError("area.refused", "that path is outside your areas");
    return this.#o.branches.diff(await this.#agentOf(who, c), b);
  }

  /** Lands the conversation's branch into its base (owners, admins, editors who hold no area). */
  async land(who: Identity, id: string): Promise<{ landed: true; commit: string }> {
    const c = await this.#load(who, id, "inspect");
    await this.#o.access.require(c.orgId, who, "write", "conversation");
    const b = await this.#branch(c);
    const agent = await this.#agentOf(who, c);
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
    const c = await this.#load(who, id, "write");
    const [row] = await this.#o.db
      .update(schema.conversations)
      .set({ status: "closed" })
      .where(eq(schema.conversations.id, c.id))
      .returning();
    if (!row) throw new WarrenError("not_found", "conversation was not found");
    const b = await this.#o.branches.of(c.id);
    if (b?.worktree)
      await this.#o.branches
        .close(await this.#agentOf(who, c), b, `Closed (${authorOf(who).name})`)
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

  /**
   * What a turn of the conversation runs with (its flow instance, machine, plan, branch and
   * fence), and the start of it: a new turn's, or one suspended while a call waited for an
   * approval, taken up by the next server (`resume`: its run and where its loop stood).
   */
  async #turnOf(
    c: ConversationRow,
    agent: AgentRow,
    personaId: string | null,
    current: { spec: AgentSpec; version: number | null },
    timeoutS?: number,
  ) {
    const o = this.#o;
    // held in a flow instance: its turns work in the instance's /workspace (none once it ended)
    const instance = await o.instanceOf?.(c.id);
    const machine = await o.agents.machineOf(agent);
    const persona = await o.personas.find(personaId);
    const plan = planAgentRun(narrowSpec(current.spec, persona), current.version, o.runners, timeoutS);
    const branch = c.repo !== null ? await o.branches.of(c.id) : null;
    const fence = await this.#fenceOf(c, persona);
    return (t: {
      runId: string;
      text: string;
      author: string;
      resume?: { run: RunRow; state: SuspendedLoop };
    }) =>
      o.recorder.start({
        id: t.runId,
        agent,
        machine,
        kind: plan.spec.kind,
        argv: [],
        specVersion: plan.version,
        timeoutS: plan.timeoutS,
        input: Buffer.from(t.text, "utf8"),
        wait: true,
        ...(t.resume ? { resume: t.resume.run } : {}),
        runner: new TurnRunner(
          this.#turns,
          c.id,
          plan,
          branch?.worktree
            ? () => o.branches.commit(agent, branch, commitMessage(t.text, t.author))
            : undefined,
          t.resume?.state,
        ),
        secrets: persona?.secrets ?? undefined,
        conversationId: c.id,
        // its own session folder (a harness CLI's state of this conversation) joins what the
        // turn keeps; its own checkout is where the repository is (never the base's working
        // tree), and there its commands run
        fence:
          fence === null
            ? null
            : [...fence, ...(plan.spec.kind === "assistant" ? [] : [`.warren/conversations/${c.id}`])],
        cwd: branch?.worktree ? branch.repo : undefined,
        place: branch?.worktree ? { from: branch.worktree, at: branch.repo } : undefined,
        sandboxPolicy: current.spec.sandbox_policy,
        instance,
      });
  }

  /**
   * A turn the last server suspended while its call waited for an approval (src/runs/resume.ts),
   * started again from where its loop stood: the same run, with the version, persona and
   * limit it began with. False when the run is no conversation's turn.
   */
  async takeUp(run: RunRow, state: SuspendedLoop): Promise<boolean> {
    const o = this.#o;
    const [turn] = await o.db
      .select()
      .from(schema.conversationTurns)
      .where(eq(schema.conversationTurns.runId, run.id));
    if (!turn) return false;
    const [c] = await o.db
      .select()
      .from(schema.conversations)
      .where(eq(schema.conversations.id, turn.conversationId));
    const [agent] = await o.db.select().from(schema.agents).where(eq(schema.agents.id, run.agentId));
    if (!c || !agent) throw new Error("its conversation or its agent was deleted");
    const current = await this.#specAt(agent, run.specVersion);
    const begin = await this.#turnOf(c, agent, turn.personaId, current, run.timeoutS);
    await begin({ runId: run.id, text: state.input, author: turn.author.name, resume: { run, state } });
    return true;
  }

  /** A person's message: stored, then its turn started (or queued behind the agent's work). */
  async post(who: Identity, id: string, text: string): Promise<ConversationMessageCreated> {
    const o = this.#o;
    const bytes = Buffer.byteLength(text, "utf8");
    if (bytes > MAX_INPUT_BYTES)
      throw new WarrenError(
        "run.input_too_large",
        `the message is ${bytes} bytes, above the ${MAX_INPUT_BYTES}-byte limit; put large text in a file of the home and name it`,
      );
    const c = await this.#load(who, id, "write");
    if (c.status === "closed")
      throw new WarrenError("conversation.closed", "the conversation is closed; start a new one to go on");
    const agent = await o.agents.load(who, c.agentId, "converse");
    const begin = await this.#turnOf(c, agent, c.personaId, await this.#specOf(agent, c.id));
    const runId = newId("run");
    const messageId = newId("msg");
    const author = authorOf(who);
    await o.db.insert(schema.conversationTurns).values({
      runId,
      conversationId: c.id,
      messageId,
      personaId: c.personaId,
      author,
    });
    const message = await o.records.conversationMessage(
      { id: messageId, conversationId: c.id, role: "user", text, author, runId },
      await o.records.forAgent(agent.id),
    );
    try {
      await begin({ runId, text, author: author.name });
    } catch (err) {
      const reason = err instanceof Error ? err.message : String(err);
      await o.records.conversationEvent(
        c.id,
        { runId, type: "refused", data: { reason } },
        await o.records.forAgent(agent.id),
      );
      throw err;
    }
    return { message: messageView(message), run_id: runId };
  }

  async messages(who: Identity, id: string): Promise<ConversationMessage[]> {
    const c = await this.#load(who, id, "inspect");
    const rows = await this.#o.db
      .select()
      .from(schema.conversationMessages)
      .where(eq(schema.conversationMessages.conversationId, c.id))
      .orderBy(asc(schema.conversationMessages.at), asc(schema.conversationMessages.id));
    return rows.map(messageView);
  }

  /** Checks the caller may read the conversation's events (before a stream starts). */
  async openEvents(who: Identity, id: string): Promise<ConversationRow> {
    return this.#load(who, id, "inspect");
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

  watch(conversationId: string, fn: () => void): () => void {
    return this.#o.records.conversations.watch(conversationId, fn);
  }

  /** A box stopped: the turns going on in it are interrupted (cancelled, and marked so). */
  boxStopped(machineId: string, reason: string): void {
    for (const [runId, t] of this.#active)
      if (t.machineId === machineId)
        void this.#o.recorder
          .cancel(runId, `interrupted: the box stopped (${reason})`)
          .catch((err: unknown) => this.#o.logger.error({ err, runId }, "interrupting a turn failed"));
  }

  /** At boot: the turns the last server's stop cut short (./recover.ts). */
  recover(): Promise<number> {
    return recoverTurns(this.#o);
  }
}
