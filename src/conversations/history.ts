// A conversation's model history as a turn sends it: the stored transcript (appended, never
// rewritten), made whole where a turn was interrupted, and cut to the budget by one rule.
//
// The rule, when the history's JSON is over WARREN_CONVERSATION_HISTORY_BYTES: first the
// answers of tools, oldest first, are replaced by a short note saying how many bytes were cut
// (the calls themselves stay, so the model still knows what it did); when that is not enough,
// whole turns are left out, oldest first, the last turn always kept. The stored transcript
// is never changed: the cut is of what one turn sends, and the turn says so in a
// `history_cut` event.
import type { ModelMessage, ToolModelMessage } from "ai";

/** One message of the transcript and the turn (run) that added it. */
export interface TranscriptEntry {
  runId: string;
  message: ModelMessage;
}

/** What a cut did, for its event. */
export interface HistoryCut {
  bytes_before: number;
  bytes_after: number;
  budget_bytes: number;
  tool_answers_cut: number;
  turns_left_out: number;
}

const INTERRUPTED_ANSWER = "(no answer: the turn was interrupted before this tool answered)";

const sizeOf = (messages: readonly ModelMessage[]): number => Buffer.byteLength(JSON.stringify(messages));

type ToolCallPart = { type: "tool-call"; toolCallId: string; toolName: string };

function toolCallsOf(m: ModelMessage): ToolCallPart[] {
  if (m.role !== "assistant" || typeof m.content === "string") return [];
  return m.content.filter((p): p is ToolCallPart & typeof p => p.type === "tool-call");
}

function answeredIn(m: ModelMessage): Set<string> {
  if (m.role !== "tool") return new Set();
  return new Set(m.content.filter((p) => p.type === "tool-result").map((p) => p.toolCallId));
}

/**
 * The transcript as a model takes it: a tool call left without its answer (its turn was
 * interrupted) is given one that says so, right after the message that asked for it.
 */
export function wholeHistory(entries: readonly TranscriptEntry[]): ModelMessage[] {
  const out: ModelMessage[] = [];
  for (let i = 0; i < entries.length; i++) {
    const m = entries[i]!.message;
    out.push(m);
    const calls = toolCallsOf(m);
    if (calls.length === 0) continue;
    const next = entries[i + 1]?.message;
    const answered = next ? answeredIn(next) : new Set<string>();
    const missing = calls.filter((c) => !answered.has(c.toolCallId));
    if (missing.length === 0) continue;
    const content: ToolModelMessage["content"] = missing.map((c) => ({
      type: "tool-result",
      toolCallId: c.toolCallId,
      toolName: c.toolName,
      output: { type: "text", value: INTERRUPTED_ANSWER },
    }));
    if (next?.role === "tool") {
      // the answers that came, and a note for those that did not
      entries[i + 1]!.message = { ...next, content: [...next.content, ...content] };
    } else out.push({ role: "tool", content });
  }
  return out;
}

/** The history cut to `budget` bytes by the rule above; `cut` is null when nothing was cut. */
export function cutHistory(
  history: readonly ModelMessage[],
  turnStarts: readonly number[],
  budget: number,
): { messages: ModelMessage[]; cut: HistoryCut | null } {
  const before = sizeOf(history);
  if (before <= budget) return { messages: [...history], cut: null };
  const messages = history.map((m) => m);
  let size = before;
  let toolAnswers = 0;
  for (let i = 0; i < messages.length && size > budget; i++) {
    const m = messages[i]!;
    if (m.role !== "tool") continue;
    const content = m.content.map((p) => {
      if (p.type !== "tool-result") return p;
      const bytes = Buffer.byteLength(JSON.stringify(p.output));
      toolAnswers++;
      return {
        ...p,
        output: { type: "text" as const, value: `(cut: an old tool answer of ${bytes} bytes)` },
      };
    });
    messages[i] = { ...m, content };
    size = sizeOf(messages);
  }
  // then whole turns, oldest first (the last one stays)
  let start = 0;
  let turns = 0;
  const starts = turnStarts.filter((s) => s > 0 && s < messages.length);
  while (size > budget && turns < starts.length) {
    start = starts[turns]!;
    turns++;
    size = sizeOf(messages.slice(start));
  }
  const kept = messages.slice(start);
  return {
    messages: kept,
    cut: {
      bytes_before: before,
      bytes_after: sizeOf(kept),
      budget_bytes: budget,
      tool_answers_cut: toolAnswers,
      turns_left_out: turns,
    },
  };
}

function textOf(m: ModelMessage): string {
  if (typeof m.content === "string") return m.content;
  const parts: string[] = [];
  for (const p of m.content) {
    if (p.type === "text") parts.push(p.text);
    else if (p.type === "tool-call") parts.push(`[tool call ${p.toolName} ${JSON.stringify(p.input)}]`);
    else if (p.type === "tool-result") {
      const o = p.output;
      const v = o.type === "text" || o.type === "error-text" ? o.value : JSON.stringify(o);
      parts.push(`[tool answer ${p.toolName}: ${v}]`);
    }
  }
  return parts.join("\n");
}

/**
 * A harness kind's input for a turn: the conversation so far replayed as text, then the new
 * message. (Harness CLIs keep no state between runs here: each turn starts them fresh.)
 */
export function replayInput(history: readonly ModelMessage[], message: string): string {
  if (history.length === 0) return message;
  const lines = history.map((m) => {
    const who =
      m.role === "user"
        ? "User"
        : m.role === "assistant"
          ? "Assistant"
          : m.role === "tool"
            ? "Tool"
            : "System";
    return `${who}: ${textOf(m)}`;
  });
  return [
    "This is a conversation that goes on. What was said so far:",
    "",
    ...lines,
    "",
    "The new message, to answer now:",
    "",
    message,
  ].join("\n");
}
