// The assistant (kind assistant): warren's own model loop, in the server. The system prompt
// is the system.md template with the agent's task and memory; the run's input is the user's
// message. Each step sends the whole history to the model through the gateway; the tools it
// asks for run one after another, each decided first by the agent's tool policy, and a
// refused or failed call is that tool's answer to the model. An answer without a tool call
// is the run's output. At most 40 steps. Each call is admitted by the gateway's budget (its
// maximum cost reserved, its max output held to what is left); when the budget is reached or
// cannot hold the next call, on_limit says whether the run stops or makes one last call
// without tools. When the server stops while a call waits for an approval, where the loop
// stopped is kept (ctx.suspend) and the next server's run goes on from there (ctx.resume).
import type { ModelMessage, ToolModelMessage } from "ai";
import { homeOf } from "../machines/placement.js";
import { BudgetStop, budgetName, failureOf } from "../models/gateway.js";
import { modelTurn, type TurnAnswer, type TurnToolCall } from "../models/turn.js";
import type { BudgetState, ModelUsage } from "../models/types.js";
import { ApprovalSuspended } from "../approvals/types.js";
import { withContext, type TraceContext } from "../observability/tracing.js";
import type { ToolsetFactory } from "../tools/types.js";
import type { AgentRunContext, AgentRunner, AgentRunResult, RunUsage, SuspendedLoop } from "./kinds.js";
import { renderSystemPrompt, SYSTEM_TEMPLATE } from "./system-prompt.js";

export const MAX_STEPS = 40;
/** What of a tool's answer the trace keeps (the model is given it whole). */
const TRACE_TOOL_OUTPUT_BYTES = 16 * 1024;
const LAST_CALL_NOTE =
  "The budget of this run is spent: answer now, with what you have, without calling a tool.";
const MEMORY_MAX_BYTES = 64 * 1024;

export interface AssistantOptions {
  toolsets: ToolsetFactory;
  /** The agent's memory: its memory artifact as it is now (it outlives the home); null when it has none. */
  memoryOf(agent: { id: string; orgId: string }): Promise<string | null>;
  /** Streams each answer (server-sent events on the wire); default true. */
  stream?: boolean;
  /** The system.md template (default SYSTEM_TEMPLATE). */
  template?: string;
  now?: () => Date;
}

const cap = (s: string, bytes: number): string => {
  const b = Buffer.from(s, "utf8");
  return b.length <= bytes ? s : `${b.subarray(0, bytes).toString("utf8")}… (${b.length} bytes in all)`;
};

/** The run's reason when its budget was reached. */
function reachedOf(b: BudgetState): string {
  return b.ok
    ? "the run's budget cannot hold another call"
    : `the run's ${b.limit === "tokens" ? "token" : "dollar"} budget was reached (${b.used} of ${b.max})`;
}

/** The server stopped while a call of the step waited for an approval: the calls left, and the answers so far. */
class Suspension extends Error {
  constructor(
    readonly pending: TurnToolCall[],
    readonly results: ToolModelMessage["content"],
  ) {
    super("suspended");
  }
}

export class AssistantRunner implements AgentRunner {
  constructor(private readonly o: AssistantOptions) {}

  async run(ctx: AgentRunContext): Promise<AgentRunResult> {
    const { gateway, events, signal, spec } = ctx;
    const agent = ctx.workload.agent;
    const resumed = ctx.resume;
    const system = resumed?.system ?? (await this.#system(ctx));
    // a conversation's turn: the whole thread so far, then this message, appended as it goes
    const history = ctx.history ?? [];
    const first: ModelMessage = { role: "user", content: ctx.input };
    const messages: ModelMessage[] = resumed ? [...resumed.messages] : [...history, first];
    const append = async (m: ModelMessage[]) => {
      if (ctx.append) await ctx.append(m);
    };
    if (resumed)
      await events("resumed", {
        step: resumed.counts.steps,
        pending: resumed.pending.map((c) => ({ id: c.id, name: c.name })),
      });
    else {
      await events("prompt", { system, user: ctx.input, history_messages: history.length });
      await append([first]);
    }

    const counts = { ...(resumed?.counts ?? { steps: 0, tool_calls: 0, tool_refusals: 0 }) };
    const models: string[] = [...(resumed?.models ?? [])];
    const modelUsage = (): ModelUsage => {
      const now = gateway.usage();
      const before = resumed?.used;
      if (!before) return now;
      return {
        tokens_in: now.tokens_in + before.tokens_in,
        tokens_out: now.tokens_out + before.tokens_out,
        usd: now.usd + before.usd,
        calls: now.calls + before.calls,
      };
    };
    const usage = (): RunUsage => ({ ...modelUsage(), ...counts });
    const done = (r: Omit<AgentRunResult, "usage" | "models" | "exitCode">): AgentRunResult => ({
      ...r,
      exitCode: r.status === "succeeded" ? 0 : null,
      usage: usage(),
      models,
    });
    const stream = this.o.stream ?? true;
    const toolset = await this.o.toolsets.open({
      runId: ctx.runId,
      workload: ctx.workload,
      spec,
      signal,
    });
    // what went wrong opening the tools (an MCP server not reached, a policy that does not
    // validate) is said in the run's events, where its reader looks
    for (const w of toolset.warnings) await events("warning", { source: "tools", message: w });
    let last = resumed?.last ?? "";
    const turn = async (toolChoice: "auto" | "none"): Promise<TurnAnswer> => {
      const answer = await modelTurn(gateway, {
        system,
        messages,
        tools: toolset.tools,
        toolChoice,
        signal,
        stream,
        lastCallNote: LAST_CALL_NOTE,
        ...(ctx.onText ? { onText: (delta: string) => ctx.onText?.(delta, counts.steps + 1) } : {}),
      });
      counts.steps++;
      if (!models.includes(answer.model.label)) models.push(answer.model.label);
      last = answer.text;
      await events("completion", {
        step: counts.steps,
        model: answer.model.label,
        text: answer.text,
        tool_calls: answer.toolCalls.map((c) => ({ id: c.id, name: c.name, input: c.input })),
        finish_reason: answer.finishReason,
      });
      messages.push(...answer.messages);
      await append(answer.messages);
      ctx.progress?.(usage());
      return answer;
    };
    // where the loop stands with `pending` calls of this step still to make (resume.ts)
    const stateAt = (pending: TurnToolCall[], results: ToolModelMessage["content"]): SuspendedLoop => ({
      ...{ input: ctx.input, system, messages, results: [...results], pending },
      ...{ counts: { ...counts }, used: modelUsage(), models: [...models], last },
    });
    const suspend = ctx.suspend;
    // the step's calls, one after another, in the order the model asked; then their answers
    // (in the trace, under the model call that asked for them)
    const callTools = async (
      calls: TurnToolCall[],
      results: ToolModelMessage["content"],
      trace?: TraceContext,
    ) => {
      for (const [i, call] of calls.entries()) {
        signal.throwIfAborted();
        // kept while the call waits for a decision: a server that dies meanwhile takes it up
        const keep = suspend && (() => suspend(ctx.runId, agent.id, stateAt(calls.slice(i), results)));
        const outcome = await withContext(trace, () =>
          toolset.call(call.name, call.input, call.id, keep),
        ).catch((err: unknown) => {
          throw err instanceof ApprovalSuspended ? new Suspension(calls.slice(i), results) : err;
        });
        counts.tool_calls++;
        if (outcome.record.decision === "deny") counts.tool_refusals++;
        await events("tool_call", {
          step: counts.steps,
          call_id: call.id,
          ...outcome.record,
          output: cap(outcome.output, TRACE_TOOL_OUTPUT_BYTES),
        });
        results.push({
          type: "tool-result",
          toolCallId: call.id,
          toolName: call.name,
          output: { type: "text", value: outcome.output },
        });
      }
      const answers: ToolModelMessage = { role: "tool", content: results };
      messages.push(answers);
      await append([answers]);
      ctx.progress?.(usage());
    };
    try {
      if (resumed) await callTools(resumed.pending, [...resumed.results]);
      for (;;) {
        signal.throwIfAborted();
        const budget = gateway.budget();
        if (!budget.ok) {
          await events("budget", { ...budget, step: counts.steps });
          const reached = reachedOf(budget);
          if (budget.on_limit === "stop")
            return done({ status: "failed", reason: `${reached}; stopped`, output: last });
          // the gateway makes it the one last call: LAST_CALL_NOTE is said, no tool may be asked for
          const final = await turn("none");
          return done({
            status: "succeeded",
            reason: `${reached}; finished with a last call without tools`,
            output: final.text,
          });
        }
        if (counts.steps >= MAX_STEPS)
          return done({
            status: "failed",
            reason: `the model still asked for tools after ${MAX_STEPS} steps`,
            output: last,
          });
        const answer = await turn("auto");
        // the budget could not hold the call: it was the one last call (on_limit finish)
        if (answer.lastCall)
          return done({
            status: "succeeded",
            reason: `${reachedOf(gateway.reached())}; finished with a last call without tools`,
            output: answer.text,
          });
        if (answer.toolCalls.length === 0) return done({ status: "succeeded", output: answer.text });
        await callTools(answer.toolCalls, [], answer.trace);
      }
    } catch (err) {
      // the server stops while a call waits for an approval: where the loop is, kept for the next server
      if (err instanceof Suspension && suspend) {
        await suspend(ctx.runId, agent.id, stateAt(err.pending, err.results));
        return done({ status: "suspended", output: last });
      }
      // a call the budget did not let go (on_limit stop): never sent
      if (err instanceof BudgetStop) {
        const st = err.state;
        if (!("call_max" in st)) await events("budget", { ...st, step: counts.steps });
        const why =
          "call_max" in st
            ? `${budgetName(st)} was reached (${st.used} of ${st.max} used, ${st.reserved} held; the next call may use up to ${st.call_max})`
            : reachedOf(st);
        return done({ status: "failed", reason: `${why}; stopped`, output: last });
      }
      if (signal.aborted) return done({ status: "cancelled", reason: "aborted", output: last });
      const f = failureOf(err);
      return done({
        status: "failed",
        reason: `the model call failed: ${f.status !== null ? `${f.status} ` : ""}${f.message}`,
        output: last,
      });
    } finally {
      await toolset.close();
    }
  }

  /** The system prompt: the system.md template with the agent's task and memory. */
  async #system(ctx: AgentRunContext): Promise<string> {
    const agent = ctx.workload.agent;
    const memory = await this.o.memoryOf(agent).then((m) => (m === null ? null : cap(m, MEMORY_MAX_BYTES)));
    return renderSystemPrompt(this.o.template ?? SYSTEM_TEMPLATE, {
      agent_name: agent.name,
      agent_id: agent.id,
      home: homeOf(agent.id),
      date: (this.o.now?.() ?? new Date()).toISOString().slice(0, 10),
      task: ctx.spec.instructions.trim() || "(no standing instructions: follow the user's message)",
      memory: memory?.trim() || "(empty)",
    });
  }
}
