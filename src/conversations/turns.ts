// A conversation's turns: a person's message stored (redacted) and its turn started, a run of
// the agent by its kind that the run recorder drives like every run, queued behind what the
// agent runs already. Its request is built as every agent run's is (src/runs/request.ts): the
// version the canary gave the conversation at its start (else the current one), its persona,
// its fence, its branch; its runner is a TurnRunner (turn.ts). A turn suspended while its call
// waited for an approval is taken up here by the next server; a box that stops interrupts the
// turns going on in it.
import { eq, inArray } from "drizzle-orm";
import type { Identity } from "../access/index.js";
import type { AgentRow, Agents } from "../agents/service.js";
import type { ConversationMessageCreated } from "../contract/types.js";
import { WarrenError } from "../errors.js";
import { newId } from "../ids.js";
import type { Logger } from "../observability/log.js";
import type { Records } from "../records/index.js";
import type { SuspendedLoop } from "../runs/kinds.js";
import type { RunRecorder } from "../runs/recorder.js";
import { runRequest, type RunRequestDeps } from "../runs/request.js";
import { suspendedRuns, takeUpEach } from "../runs/resume.js";
import { MAX_INPUT_BYTES } from "../runs/service.js";
import type { RunRow } from "../runs/view.js";
import type { Db } from "../store/index.js";
import { schema } from "../store/index.js";
import type { InstanceRef } from "../workspaces/service.js";
import type { Branches } from "./branches.js";
import { narrowSpec, type Personas } from "./personas.js";
import type { ConversationReach } from "./reach.js";
import { recoverTurns } from "./recover.js";
import { TurnRunner, type TurnDeps } from "./turn.js";
import { authorOf, commitMessage, messageView, type ConversationRow } from "./views.js";

export interface TurnsOptions extends RunRequestDeps {
  db: Db;
  agents: RunRequestDeps["agents"] & Pick<Agents, "load">;
  personas: Pick<Personas, "find">;
  branches: Branches;
  records: Records;
  recorder: RunRecorder;
  reach: ConversationReach;
  historyBytes: number;
  logger: Logger;
  /** The flow instance a conversation is held in (its turns' /workspace is the instance's). */
  instanceOf?: ((conversationId: string) => Promise<InstanceRef | undefined>) | undefined;
}

/** The versions the canary gave conversations at their start, by conversation. */
export async function pinnedVersions(db: Db, ids: string[]): Promise<Map<string, number>> {
  if (ids.length === 0) return new Map();
  const v = schema.conversationVersions;
  const rows = await db.select().from(v).where(inArray(v.conversationId, ids));
  return new Map(rows.map((r) => [r.conversationId, r.version]));
}

export class ConversationTurns {
  readonly #o: TurnsOptions;
  /** The turns going on, by run, with their machine. */
  readonly #active = new Map<string, { machineId: string; conversationId: string }>();
  readonly #turns: TurnDeps;

  constructor(o: TurnsOptions) {
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
   * The run request of a turn of the conversation: a new one's, or one suspended while a call
   * waited for an approval, taken up by the next server (`resume`: its run and where its loop stood).
   */
  async #request(
    c: ConversationRow,
    agent: AgentRow,
    t: {
      personaId: string | null;
      version: number | null | undefined;
      runId: string;
      text: string;
      author: string;
      timeoutS?: number | undefined;
      resume?: { run: RunRow; state: SuspendedLoop } | undefined;
    },
  ) {
    const o = this.#o;
    // held in a flow instance: its turns work in the instance's /workspace (none once it ended)
    const instance = await o.instanceOf?.(c.id);
    const persona = await o.personas.find(t.personaId);
    const branch = c.repo !== null ? await o.branches.of(c.id) : null;
    const fence = await o.reach.fenceOf(c, persona);
    // a fork's worktree is checked out on its first turn (branches.ts)
    if (branch?.worktree) await o.branches.ready(agent, branch);
    const commit = branch?.worktree
      ? () => o.branches.commit(agent, branch, commitMessage(t.text, t.author))
      : undefined;
    return runRequest(o, {
      agent,
      input: t.text,
      version: { pinned: t.version },
      timeoutS: t.timeoutS,
      persona: persona
        ? { narrow: (s) => narrowSpec(s, persona), secrets: persona.secrets ?? undefined }
        : undefined,
      // its own session folder (a harness CLI's state of this conversation) joins what the
      // turn keeps (request.ts); its own checkout is where the repository is (never the
      // base's working tree), and there its commands run
      fence,
      resume: t.resume,
      runner: (plan) => new TurnRunner(this.#turns, c.id, plan, commit, t.resume?.state),
      rest: {
        id: t.runId,
        conversationId: c.id,
        cwd: branch?.worktree ? branch.repo : undefined,
        place: branch?.worktree ? { from: branch.worktree, at: branch.repo } : undefined,
        instance,
      },
    });
  }

  /** At boot: each turn the last server suspended, taken up again (or lost, saying why). */
  async takeUpSuspended(): Promise<number> {
    return takeUpEach(this.#o, await suspendedRuns(this.#o.db, true), (run, state) =>
      this.#takeUp(run, state),
    );
  }

  /**
   * A turn the last server suspended while its call waited for an approval (src/runs/resume.ts),
   * started again from where its loop stood: the same run, with the version, persona and
   * limit it began with.
   */
  async #takeUp(run: RunRow, state: SuspendedLoop): Promise<void> {
    const o = this.#o;
    const [turn] = await o.db
      .select()
      .from(schema.conversationTurns)
      .where(eq(schema.conversationTurns.runId, run.id));
    if (!turn) throw new Error("its turn was deleted");
    const [c] = await o.db
      .select()
      .from(schema.conversations)
      .where(eq(schema.conversations.id, turn.conversationId));
    const [agent] = await o.db.select().from(schema.agents).where(eq(schema.agents.id, run.agentId));
    if (!c || !agent) throw new Error("its conversation or its agent was deleted");
    const req = await this.#request(c, agent, {
      personaId: turn.personaId,
      version: run.specVersion,
      timeoutS: run.timeoutS,
      runId: run.id,
      text: state.input,
      author: turn.author.name,
      resume: { run, state },
    });
    await o.recorder.start(req);
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
    const c = await o.reach.load(who, id, "write");
    if (c.status === "closed")
      throw new WarrenError("conversation.closed", "the conversation is closed; start a new one to go on");
    const agent = await o.agents.load(who, c.agentId, "converse");
    const version = (await pinnedVersions(o.db, [c.id])).get(c.id);
    const runId = newId("run");
    // settled before anything of the turn is written: an agent that cannot run refuses it here
    const req = await this.#request(c, agent, {
      personaId: c.personaId,
      version,
      runId,
      text,
      author: authorOf(who).name,
    });
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
      await o.recorder.start(req);
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
