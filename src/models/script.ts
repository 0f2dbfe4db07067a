// The scripted provider (provider "script"): a file of model turns, replayed through the same
// gateway and loop as a real model, so a whole run goes with no network and no key. The turn
// answered is the number of the model's answers already in the prompt: turn 0 first, then 1.
import { APICallError, type LanguageModelV3, type LanguageModelV3CallOptions } from "@ai-sdk/provider";
import type {
  LanguageModelV3Content,
  LanguageModelV3StreamPart,
  LanguageModelV3Usage,
} from "@ai-sdk/provider";
import { z } from "zod";

const ScriptToolCall = z
  .object({ name: z.string().min(1).max(200), input: z.unknown().default({}) })
  .strict();

export const ScriptTurn = z
  .object({
    text: z.string().optional(),
    tool_calls: z.array(ScriptToolCall).max(64).optional(),
    usage: z
      .object({ input_tokens: z.number().int().min(0), output_tokens: z.number().int().min(0) })
      .strict()
      .optional()
      .describe("what the turn reports; by default about one token per 4 characters"),
    /** The provider fails this turn instead: an HTTP status and a message. */
    error: z
      .object({ status: z.number().int().min(400).max(599), message: z.string().default("scripted failure") })
      .strict()
      .optional(),
  })
  .strict();
export type ScriptTurn = z.output<typeof ScriptTurn>;

export const Script = z.union([
  z.object({ turns: z.array(ScriptTurn).min(1).max(1000) }).strict(),
  z.array(ScriptTurn).min(1).max(1000),
]);

/** Parses a script file's text; throws an Error that says what is wrong. */
export function parseScript(text: string, where: string): ScriptTurn[] {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw new Error(`the script ${where} is not JSON: ${(err as Error).message}`);
  }
  const r = Script.safeParse(json);
  if (!r.success) {
    const i = r.error.issues[0];
    throw new Error(
      `the script ${where} is not a list of turns: ${i?.path.join(".") ?? ""} ${i?.message ?? ""}`,
    );
  }
  return Array.isArray(r.data) ? r.data : r.data.turns;
}

/** The turn a prompt is at: how many answers of the model it already holds. */
export function turnIndex(prompt: readonly { role: string }[]): number {
  return prompt.filter((m) => m.role === "assistant").length;
}

const estimate = (chars: number): number => Math.ceil(chars / 4);

function promptChars(prompt: LanguageModelV3CallOptions["prompt"]): number {
  let n = 0;
  for (const m of prompt) {
    if (typeof m.content === "string") n += m.content.length;
    else n += JSON.stringify(m.content).length;
  }
  return n;
}

function usageOf(turn: ScriptTurn, prompt: LanguageModelV3CallOptions["prompt"]): LanguageModelV3Usage {
  const outChars = (turn.text ?? "").length + JSON.stringify(turn.tool_calls ?? []).length - 2;
  const input = turn.usage?.input_tokens ?? estimate(promptChars(prompt));
  const output = turn.usage?.output_tokens ?? estimate(outChars);
  return {
    inputTokens: { total: input, noCache: input, cacheRead: undefined, cacheWrite: undefined },
    outputTokens: { total: output, text: output, reasoning: undefined },
  };
}

/** A model that answers each call with the script's next turn. */
export class ScriptModel implements LanguageModelV3 {
  readonly specificationVersion = "v3" as const;
  readonly provider = "script";
  readonly supportedUrls = {};

  constructor(
    readonly modelId: string,
    private readonly turns: readonly ScriptTurn[],
  ) {}

  #turn(options: LanguageModelV3CallOptions): { turn: ScriptTurn; index: number } {
    const index = turnIndex(options.prompt);
    const turn = this.turns[index];
    if (!turn)
      throw new APICallError({
        message: `the script ${this.modelId} has ${this.turns.length} turns; turn ${index + 1} was asked for`,
        url: `script:${this.modelId}`,
        requestBodyValues: {},
        statusCode: 400,
        isRetryable: false,
      });
    if (turn.error)
      throw new APICallError({
        message: turn.error.message,
        url: `script:${this.modelId}`,
        requestBodyValues: {},
        statusCode: turn.error.status,
        isRetryable: turn.error.status === 429 || turn.error.status >= 500,
      });
    return { turn, index };
  }

  #content(turn: ScriptTurn, index: number, tools: boolean): LanguageModelV3Content[] {
    const content: LanguageModelV3Content[] = [];
    if (turn.text) content.push({ type: "text", text: turn.text });
    if (tools)
      for (const [i, c] of (turn.tool_calls ?? []).entries())
        content.push({
          type: "tool-call",
          toolCallId: `script_${index}_${i}`,
          toolName: c.name,
          input: JSON.stringify(c.input ?? {}),
        });
    return content;
  }

  doGenerate(options: LanguageModelV3CallOptions) {
    options.abortSignal?.throwIfAborted();
    const { turn, index } = this.#turn(options);
    const tools = (options.tools?.length ?? 0) > 0 && options.toolChoice?.type !== "none";
    const content = this.#content(turn, index, tools);
    const calls = content.some((c) => c.type === "tool-call");
    return Promise.resolve({
      content,
      finishReason: {
        unified: calls ? ("tool-calls" as const) : ("stop" as const),
        raw: calls ? "tool_use" : "end_turn",
      },
      usage: usageOf(turn, options.prompt),
      warnings: [],
    });
  }

  doStream(options: LanguageModelV3CallOptions) {
    options.abortSignal?.throwIfAborted();
    const { turn, index } = this.#turn(options);
    const tools = (options.tools?.length ?? 0) > 0 && options.toolChoice?.type !== "none";
    const content = this.#content(turn, index, tools);
    const calls = content.some((c) => c.type === "tool-call");
    const parts: LanguageModelV3StreamPart[] = [{ type: "stream-start", warnings: [] }];
    for (const c of content) {
      if (c.type === "text") {
        const id = `t${index}`;
        parts.push({ type: "text-start", id });
        // in a few pieces, as a provider streams it
        for (let at = 0; at < c.text.length; at += 16)
          parts.push({ type: "text-delta", id, delta: c.text.slice(at, at + 16) });
        parts.push({ type: "text-end", id });
      } else parts.push(c as LanguageModelV3StreamPart);
    }
    parts.push({
      type: "finish",
      usage: usageOf(turn, options.prompt),
      finishReason: { unified: calls ? "tool-calls" : "stop", raw: calls ? "tool_use" : "end_turn" },
    });
    const stream = new ReadableStream<LanguageModelV3StreamPart>({
      start(controller) {
        for (const p of parts) controller.enqueue(p);
        controller.close();
      },
    });
    return Promise.resolve({ stream });
  }
}
