// A conversation's turn: a run of the agent (driven by the run recorder like every run) whose
// model history is the conversation so far. The assistant gets the stored transcript as its
// history and appends to it as it goes; a harness kind gets the transcript replayed as text
// in its input. The agent's answer becomes the conversation's next message; a turn cut short
// by its box or its server stopping is marked interrupted, and the next message continues
// from the transcript.
import type { ModelMessage } from "ai";
import { asc, eq } from "drizzle-orm";
import type { Records } from "../records/index.js";
import type { AgentRunContext, AgentRunners, SuspendedLoop } from "../runs/kinds.js";
import { ModelRunner, type AgentRunPlan } from "../runs/model-run.js";
import type { RunnerContext, RunOutcome, RunRunner } from "../runs/runner.js";
import type { ModelGateway } from "../models/types.js";
import { newId } from "../ids.js";
import { inSpan } from "../observability/tracing.js";
import type { Db } from "../store/index.js";
import { schema } from "../store/index.js";
import type { Workload } from "../workloads/index.js";
import { cutHistory, replayInput, wholeHistory, type TranscriptEntry } from "./history.js";

export interface TurnDeps {
  db: Db;
  records: Records;
  gateway: ModelGateway;
  runners: AgentRunners;
  historyBytes: number;
  /** The turns going on, by run: their machine (a box that stops interrupts them). */
  active: Map<string, { machineId: string; conversationId: string }>;
  /** Keeps where an assistant turn stands while a call waits for an approval (src/runs/resume.ts). */
  suspend?: AgentRunContext["suspend"];
}

/** Whether a run's end was an interruption (its box or its server stopped under it). */
/** How the reason of a turn cut short by its box or its server stopping begins. */
export const INTERRUPTED = "interrupted";

export const isInterruption = (reason: string | null | undefined): boolean =>
  typeof reason === "string" && reason.startsWith(INTERRUPTED);

/** How long an interrupted turn's runner has to answer before the turn ends without it. */
const INTERRUPT_GRACE_MS = 5000;

const reasonOf = (signal: AbortSignal): string | null => {
  const r: unknown = signal.reason;
  return r instanceof Error ? r.message : null;
};

/**
 * Resolves a while after `signal` aborts with an interruption: a command whose box went away
 * may never answer, and the turn ends as interrupted all the same.
 */
function interruption(signal: AbortSignal): { ended: Promise<string>; stop: () => void } {
  let timer: NodeJS.Timeout | undefined;
  let on: () => void = () => undefined;
  const ended = new Promise<string>((resolve) => {
    on = () => {
      const why = reasonOf(signal);
      if (isInterruption(why)) timer = setTimeout(() => resolve(why ?? "interrupted"), INTERRUPT_GRACE_MS);
    };
    if (signal.aborted) on();
    else signal.addEventListener("abort", on, { once: true });
  });
  return {
    ended,
    stop: () => {
      clearTimeout(timer);
      signal.removeEventListener("abort", on);
    },
  };
}

export class TurnRunner implements RunRunner {
  constructor(
    private readonly d: TurnDeps,
    private readonly conversationId: string,
    private readonly plan: AgentRunPlan,
    /** After the turn (not one interrupted): commits what it changed on its branch, if it has one. */
    private readonly commit?: () => Promise<string | null>,
    /** A turn suspended while a call waited for an approval: where its loop stood (its history in it). */
    private readonly resume?: SuspendedLoop,
  ) {}

  started(work: Workload): Record<string, unknown> {
    return {
      ...new ModelRunner(this.plan, this.d.gateway, this.d.runners).started(),
      conversation_id: this.conversationId,
      uid: work.uid,
    };
  }

  async #history(): Promise<{ messages: ModelMessage[]; turnStarts: number[] }> {
    const rows = await this.d.db
      .select()
      .from(schema.conversationTranscript)
      .where(eq(schema.conversationTranscript.conversationId, this.conversationId))
      .orderBy(asc(schema.conversationTranscript.id));
    const entries: TranscriptEntry[] = rows.map((r) => ({
      runId: r.runId,
      message: r.message as ModelMessage,
    }));
    const messages = wholeHistory(entries);
    // where each turn's messages begin (a user message that follows another turn's)
    const turnStarts: number[] = [];
    messages.forEach((m, i) => {
      if (m.role === "user") turnStarts.push(i);
    });
    return { messages, turnStarts };
  }

  /** The turn, a span of its run's trace (GenAI's invoke_agent: the agent answering the conversation). */
  run(ctx: RunnerContext): Promise<RunOutcome> {
    const agent = ctx.workload.agent;
    const attributes = {
      "gen_ai.operation.name": "invoke_agent",
      "gen_ai.agent.id": agent.id,
      "gen_ai.agent.name": agent.name,
      "gen_ai.conversation.id": this.conversationId,
      "warren.run.id": ctx.run.id,
    };
    return inSpan(`invoke_agent ${agent.name}`, attributes, async (span) => {
      const out = await this.#run(ctx);
      span.setAttribute("warren.run.status", out.status);
      return out;
    });
  }

  async #run(ctx: RunnerContext): Promise<RunOutcome> {
    const d = this.d;
    const runId = ctx.run.id;
    const text = ctx.input.toString("utf8");
    d.active.set(runId, { machineId: ctx.workload.machine.id, conversationId: this.conversationId });
    try {
      // a turn taken up again has its history in where its loop stood
      const { messages, turnStarts } = this.resume ? { messages: [], turnStarts: [] } : await this.#history();
      const { messages: history, cut } = cutHistory(messages, turnStarts, d.historyBytes);
      if (cut) await ctx.events("history_cut", { ...cut });
      // once the turn ended, a runner that answers late writes nothing more
      let over = false;
      const append = async (m: ModelMessage[]) => {
        if (!over) await d.records.transcript(this.conversationId, runId, m);
      };
      const events: RunnerContext["events"] = async (type, data) => {
        if (!over) await ctx.events(type, data);
      };
      const work = async (): Promise<RunOutcome> => {
        // its text streams as every run's does (ModelRunner), through this turn's events
        if (this.plan.spec.kind === "assistant")
          return new ModelRunner(this.plan, d.gateway, d.runners, {
            history,
            append,
            ...(d.suspend ? { suspend: d.suspend } : {}),
            ...(this.resume ? { resume: this.resume } : {}),
          }).run({ ...ctx, events });
        // a harness CLI resumes its own session of the conversation, kept in the home; one
        // with none yet (the first turn, a home reset) is given the conversation replayed
        const input = Buffer.from(replayInput(history, text), "utf8");
        await append([{ role: "user", content: text }]);
        const out = await new ModelRunner(this.plan, d.gateway, d.runners, {
          session: { id: this.conversationId, message: text },
        }).run({ ...ctx, input, events });
        if (out.output) await append([{ role: "assistant", content: out.output }]);
        return out;
      };
      const cutShort = interruption(ctx.signal);
      const running = work();
      const first = await Promise.race([running, cutShort.ended]);
      cutShort.stop();
      let outcome: RunOutcome;
      if (typeof first === "string") {
        over = true;
        running.catch((err: unknown) => void err);
        outcome = { status: "cancelled", reason: first, exitCode: null, output: "" };
      } else outcome = first;
      // the server stopped while a call waited for an approval: the next server takes the turn up
      if (outcome.status === "suspended") return outcome;
      const why = ctx.signal.aborted ? reasonOf(ctx.signal) : null;
      if (isInterruption(why)) {
        await d.db
          .update(schema.conversationTurns)
          .set({ interrupted: true })
          .where(eq(schema.conversationTurns.runId, runId));
        await ctx.events("interrupted", { reason: why, conversation_id: this.conversationId });
      } else if (this.commit) {
        await this.commit().then(
          (commit) => (commit ? ctx.events("commit", { commit }) : undefined),
          (err: unknown) =>
            ctx.events("commit_failed", { reason: err instanceof Error ? err.message : String(err) }),
        );
      }
      if (!isInterruption(why) && outcome.output) {
        await d.records.conversationMessage(
          {
            id: newId("msg"),
            conversationId: this.conversationId,
            role: "agent",
            text: outcome.output,
            author: null,
            runId,
          },
          ctx.recording.redactor,
        );
      }
      return outcome;
    } finally {
      d.active.delete(runId);
    }
  }
}
