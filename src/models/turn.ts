// One turn of a model through the gateway: the whole history in, the model's answer out (its
// text and the tools it asks for), with the fallback and the counting of callWithFallback.
// The AI SDK speaks the providers' wire formats; it runs no tool and retries nothing itself.
import { generateText, jsonSchema, streamText, tool, type ModelMessage, type ToolSet } from "ai";
import type { GatewaySession, ModelCallRecord, ResolvedModel } from "./types.js";
import { callWithFallback } from "./gateway.js";

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
  via?: ModelCallRecord["via"];
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

export async function modelTurn(session: GatewaySession, req: TurnRequest): Promise<TurnAnswer> {
  const tools = req.tools.length > 0 ? toolSet(req.tools) : undefined;
  const { value, model } = await callWithFallback(session, req.via ?? "loop", req.signal, async (lm) => {
    const common = {
      model: lm,
      system: req.system,
      messages: req.messages,
      ...(tools ? { tools, toolChoice: req.toolChoice ?? "auto" } : {}),
      maxRetries: 0,
      ...(req.signal ? { abortSignal: req.signal } : {}),
      ...(req.maxOutputTokens !== undefined ? { maxOutputTokens: req.maxOutputTokens } : {}),
    } as const;
    if (req.stream) {
      let failure: unknown = undefined;
      const r = streamText({ ...common, onError: ({ error }) => void (failure ??= error) });
      for await (const part of r.fullStream) if (part.type === "error") failure ??= part.error;
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
        tokensIn: usage.inputTokens ?? 0,
        tokensOut: usage.outputTokens ?? 0,
        finishReason: finish,
      };
    }
    const r = await generateText(common);
    return {
      value: { text: r.text, calls: r.toolCalls, finish: r.finishReason, messages: r.response.messages },
      tokensIn: r.usage.inputTokens ?? 0,
      tokensOut: r.usage.outputTokens ?? 0,
      finishReason: r.finishReason,
    };
  });
  return {
    text: value.text,
    toolCalls: value.calls.map((c) => ({ id: c.toolCallId, name: c.toolName, input: c.input })),
    finishReason: value.finish,
    messages: value.messages,
    model,
  };
}
