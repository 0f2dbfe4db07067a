// One turn of a model through the gateway: the whole history in, the model's answer out (its
// text and the tools it asks for), with the fallback, the budget and the counting of
// callWithFallback.
// The AI SDK speaks the providers' wire formats; it runs no tool and retries nothing itself.
import { generateText, jsonSchema, streamText, tool, type ModelMessage, type ToolSet } from "ai";
import type { ModelCallRecord } from "../contract/runs.js";
import type { GatewaySession, ResolvedModel } from "./types.js";
import { callWithFallback } from "./gateway.js";
import type { TraceContext } from "../observability/tracing.js";

export interface TurnTool {
  name: string;
  description: string;
  parameters: Record<string, unknown>;
}

export interface TurnRequest {
  system: string;
  messages: ModelMessage[];
  tools: readonly TurnTool[];
  /** none: the model may not ask for a tool (a last call once the budget is reached). */
  toolChoice?: "auto" | "none";
  signal?: AbortSignal;
  /** Stream the answer (server-sent events on the wire) instead of one JSON answer. */
  stream?: boolean;
  maxOutputTokens?: number;
  /**
   * Said to the model (a user message) when the budget makes this call the run's one last
   * call (on_limit finish): it is then sent with tool choice none.
   */
  lastCallNote?: string;
  via?: ModelCallRecord["via"];
  /** The answer's text as it streams (stream: true), piece by piece. */
  onText?: (delta: string) => void;
}

export interface TurnToolCall {
  id: string;
  name: string;
  input: unknown;
}

export interface TurnAnswer {
  text: string;
  toolCalls: TurnToolCall[];
  finishReason: string;
  /** The messages the answer adds to the history (the assistant's, with its tool calls). */
  messages: ModelMessage[];
  model: ResolvedModel;
  /** The budget made it the run's one last call (sent with tool choice none). */
  lastCall: boolean;
  /** The trace context of the call that answered: the tool calls it asked for nest under it. */
  trace?: TraceContext | undefined;
}

function toolSet(tools: readonly TurnTool[]): ToolSet {
  const set: ToolSet = {};
  for (const t of tools)
    set[t.name] = tool({
      description: t.description,
      inputSchema: jsonSchema({ type: "object", ...t.parameters }),
    });
  return set;
}

/** A call's input, estimated before it is sent: its bytes / 4 (as the HTTP face does). */
const inputEstimate = (req: TurnRequest): number =>
  Math.ceil(
    Buffer.byteLength(JSON.stringify({ system: req.system, messages: req.messages, tools: req.tools })) / 4,
  );

/** The characters a stream part carries (text, reasoning, tool input), for an estimate. */
function charsOf(part: { type: string; text?: unknown; delta?: unknown }): number {
  if (part.type === "text-delta" || part.type === "reasoning-delta")
    return typeof part.text === "string" ? part.text.length : 0;
  if (part.type === "tool-input-delta") return typeof part.delta === "string" ? part.delta.length : 0;
  return 0;
}

export async function modelTurn(session: GatewaySession, req: TurnRequest): Promise<TurnAnswer> {
  const tools = req.tools.length > 0 ? toolSet(req.tools) : undefined;
  const call = {
    tokensIn: inputEstimate(req),
    ...(req.maxOutputTokens !== undefined ? { maxOut: req.maxOutputTokens } : {}),
  };
  const { value, model, lastCall, trace } = await callWithFallback(
    session,
    req.via ?? "loop",
    req.signal,
    call,
    async (lm, _m, plan) => {
      // the last call keeps the tools the history speaks of, with none to be asked for
      const toolChoice = plan.lastCall ? "none" : (req.toolChoice ?? "auto");
      const messages: ModelMessage[] =
        plan.lastCall && req.lastCallNote
          ? [...req.messages, { role: "user", content: req.lastCallNote }]
          : req.messages;
      const common = {
        model: lm,
        system: req.system,
        messages,
        ...(tools ? { tools, toolChoice } : {}),
        maxRetries: 0,
        ...(req.signal ? { abortSignal: req.signal } : {}),
        ...(plan.maxOut !== undefined ? { maxOutputTokens: plan.maxOut } : {}),
      } as const;
      if (req.stream) {
        let failure: unknown = undefined;
        const r = streamText({ ...common, onError: ({ error }) => void (failure ??= error) });
        for await (const part of r.fullStream) {
          plan.chars += charsOf(part);
          if (part.type === "text-delta" && part.text) req.onText?.(part.text);
          if (part.type === "error") failure ??= part.error;
        }
        if (failure !== undefined)
          throw failure instanceof Error ? failure : new Error(JSON.stringify(failure));
        const [text, calls, finish, usage, response] = await Promise.all([
          r.text,
          r.toolCalls,
          r.finishReason,
          r.usage,
          r.response,
        ]);
        return {
          value: { text, calls, finish, messages: response.messages },
          tokensIn: usage.inputTokens ?? null,
          tokensOut: usage.outputTokens ?? null,
          finishReason: finish,
        };
      }
      const r = await generateText(common);
      return {
        value: { text: r.text, calls: r.toolCalls, finish: r.finishReason, messages: r.response.messages },
        tokensIn: r.usage.inputTokens ?? null,
        tokensOut: r.usage.outputTokens ?? null,
        finishReason: r.finishReason,
      };
    },
  );
  return {
    text: value.text,
    toolCalls: value.calls.map((c) => ({ id: c.toolCallId, name: c.toolName, input: c.input })),
    finishReason: value.finish,
    messages: value.messages,
    model,
    lastCall,
    trace,
  };
}
