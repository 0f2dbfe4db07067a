// What a conversation's events say about one turn, as text for a terminal: the agent's answer as
// it streams (`output` events of stream `text`, then the whole answer as `stdout`), each tool call with its decision on a line of its own,
// and the turn's end. Pure: events in, text out; `warren chat` does the I/O.
import type { StreamEvent } from "../../sdk/index.js";
import { short, visible } from "../format.js";

/** What one event adds: text of the answer (stdout), a note (stderr), and whether the turn ended. */
export interface TurnStep {
  answer: string;
  note: string;
  /** The turn's exit: its status and reason. */
  exit?: { status: string; reason: string | null };
}

const record = (v: unknown): Record<string, unknown> =>
  typeof v === "object" && v !== null ? (v as Record<string, unknown>) : {};
const text = (v: unknown): string => (typeof v === "string" ? v : "");

/** The event types that carry a piece of the model's text as it streams. */
const DELTAS = new Set(["delta", "text_delta", "text"]);

/** Follows one turn (one run of a conversation) through its events. */
export class TurnView {
  /** The answer printed so far. */
  printed = "";
  private streamed = false;
  /** The whole answer was seen: pieces that come after it are already printed. */
  private complete = false;
  /** Whether an agent message (the whole answer) was seen. */
  answered = false;

  constructor(readonly runId: string) {}

  /** True for an event of this turn. */
  owns(e: StreamEvent): boolean {
    return e.run_id === this.runId;
  }

  /** Takes a piece of the answer, or the whole answer given again: prints only what is new. */
  private whole(full: string): string {
    this.complete = true;
    if (full.startsWith(this.printed)) {
      const rest = full.slice(this.printed.length);
      this.printed = full;
      return rest;
    }
    if (this.printed !== "") return "";
    this.printed = full;
    return full;
  }

  step(e: StreamEvent): TurnStep {
    const d = record(e.data);
    const none: TurnStep = { answer: "", note: "" };
    if (DELTAS.has(e.type)) {
      const piece = this.complete ? "" : text(d.delta) || text(d.text);
      this.streamed = true;
      this.printed += piece;
      return { answer: piece, note: "" };
    }
    switch (e.type) {
      case "output": {
        if (d.stream === "stderr") return { answer: "", note: text(d.data) };
        if (d.stream === "text") {
          // a piece of the model's text as it streams
          const piece = this.complete ? "" : text(d.data);
          this.streamed = true;
          this.printed += piece;
          return { answer: piece, note: "" };
        }
        const data = text(d.data);
        if (this.streamed) return { answer: this.whole(data), note: "" };
        // what a turn prints comes after the model's text: a piece after it was held back
        this.complete = true;
        this.printed += data;
        return { answer: data, note: "" };
      }
      case "message": {
        if (d.role !== "agent") return none;
        this.answered = true;
        return { answer: this.whole(text(d.text)), note: "" };
      }
      case "tool_call": {
        const decision = text(d.decision).toUpperCase() || "CALLED";
        const args = short(visible(JSON.stringify(d.arguments ?? d.input ?? {})), 80);
        const error = d.error
          ? `: ${short(visible(String(text(d.error) || JSON.stringify(d.error))), 80)}`
          : "";
        return {
          answer: "",
          note: `  · ${text(d.tool) || text(d.name) || "tool"} ${decision} ${args}${error}\n`,
        };
      }
      case "approval":
        return { answer: "", note: `  · waiting for a decision on ${text(d.tool) || "a tool call"}\n` };
      case "exit":
        return {
          answer: "",
          note: "",
          exit: { status: text(d.status) || "ended", reason: text(d.reason) || null },
        };
      default:
        return none;
    }
  }
}
