// What a conversation's events say about one turn, as text for a terminal: the agent's text as
// it streams (`output` events of stream `text`, each naming its model step; a step's text
// begins on a line of its own), then the whole answer as `stdout` (what its step's pieces did
// not print), each tool call with its decision on a line of its own, and the turn's end.
// Pure: events in, text out; `warren chat` does the I/O.
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
  /** What was printed on stdout so far. */
  printed = "";
  private streamed = false;
  /** The whole answer was seen: pieces that come after it are already printed. */
  private complete = false;
  /** Whether an agent message (the whole answer) was seen. */
  answered = false;
  /** The text streamed of each model step, by step (0: pieces that name no step). */
  private readonly steps = new Map<number, string>();
  /** The step of the last piece printed; null before any. */
  private last: number | null = null;

  constructor(readonly runId: string) {}

  /** Whether a model's text was printed (an agent's answer, which ends on a line of its own). */
  get spoke(): boolean {
    return this.streamed;
  }

  /** True for an event of this turn. */
  owns(e: StreamEvent): boolean {
    return e.run_id === this.runId;
  }

  /** A piece of one step's text: a step after another begins on a line of its own. */
  private piece(piece: string, step: number): string {
    if (this.complete || piece === "") return "";
    this.streamed = true;
    let out = piece;
    if (this.last !== null && this.last !== step && this.printed !== "" && !this.printed.endsWith("\n"))
      out = `\n${piece}`;
    this.last = step;
    this.steps.set(step, (this.steps.get(step) ?? "") + piece);
    this.printed += out;
    return out;
  }

  /**
   * The whole answer (the last step's text, whole): prints only what its step's pieces did not.
   * Every step's text is printed once, and the whole answer once.
   */
  final(full: string): string {
    this.complete = true;
    if (this.last === null) {
      // nothing streamed: what was printed is a command's output, which the answer repeats
      if (full.startsWith(this.printed)) {
        const rest = full.slice(this.printed.length);
        this.printed = full;
        return rest;
      }
      if (this.printed !== "") return "";
      this.printed = full;
      return full;
    }
    const streamed = this.steps.get(this.last) ?? "";
    let out: string;
    if (full.startsWith(streamed)) out = full.slice(streamed.length);
    else out = `${this.printed.endsWith("\n") ? "" : "\n"}${full}`;
    this.steps.set(this.last, full);
    this.printed += out;
    return out;
  }

  step(e: StreamEvent): TurnStep {
    const d = record(e.data);
    const none: TurnStep = { answer: "", note: "" };
    const step = typeof d.step === "number" ? d.step : 0;
    if (DELTAS.has(e.type)) return { answer: this.piece(text(d.delta) || text(d.text), step), note: "" };
    switch (e.type) {
      case "output": {
        if (d.stream === "stderr") return { answer: "", note: text(d.data) };
        // a piece of the model's text as it streams, naming its step
        if (d.stream === "text") return { answer: this.piece(text(d.data), step), note: "" };
        const data = text(d.data);
        if (this.streamed) return { answer: this.final(data), note: "" };
        // what a turn prints comes after the model's text: a piece after it was held back
        this.complete = true;
        this.printed += data;
        return { answer: data, note: "" };
      }
      case "message": {
        if (d.role !== "agent") return none;
        this.answered = true;
        return { answer: this.final(text(d.text)), note: "" };
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
