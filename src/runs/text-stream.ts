// The model's text as it streams, as events: pieces are let out up to their last whitespace
// and redacted, the rest held until more comes (or the step or the answer ends), so that a
// secret's value split across two pieces is still whole when it is redacted. Each piece
// carries the model step it belongs to: pieces of two steps are never joined.
import type { Redacts } from "../records/index.js";

/** Past this many characters held, a piece is let out whole. */
const HOLD_MAX = 4096;

/** Writes one piece of a step's text as an event. */
type WriteText = (text: string, step: number) => Promise<void>;

export class TextStream {
  #held = "";
  /** The step whose text is held. */
  #step = 1;
  /** Text let out while a piece's event was being written, a run of pieces per step, in order. */
  #waiting: { step: number; text: string }[] = [];
  /** The event being written, if one is. */
  #writing: Promise<void> | null = null;

  constructor(
    private readonly redactor: Redacts,
    private readonly write: WriteText,
  ) {}

  /** A piece of the model's text in step `step` (1 for the first); a new step lets out what the last one held. */
  push(delta: string, step = 1): void {
    if (step !== this.#step) {
      if (this.#held) this.#emit(this.#held, this.#step);
      this.#held = "";
      this.#step = step;
    }
    this.#held += delta;
    const cut = this.#held.length > HOLD_MAX ? this.#held.length : lastSpace(this.#held) + 1;
    if (cut <= 0) return;
    const out = this.#held.slice(0, cut);
    this.#held = this.#held.slice(cut);
    this.#emit(out, step);
  }

  /** Lets out what is held and waits for every piece's event. */
  async end(): Promise<void> {
    if (this.#held) this.#emit(this.#held, this.#step);
    this.#held = "";
    while (this.#writing) await this.#writing;
  }

  /**
   * One event at a time: what comes of a step while one is written goes out as the next,
   * whole. A model that streams faster than events are stored makes fewer, longer pieces,
   * and the first piece is never queued behind the others.
   */
  #emit(text: string, step: number): void {
    const last = this.#waiting.at(-1);
    if (last && last.step === step) last.text += text;
    else this.#waiting.push({ step, text });
    if (!this.#writing) this.#next();
  }

  #next(): void {
    const piece = this.#waiting.shift();
    if (!piece) return;
    // pieces end at whitespace (or are whole), so pieces joined split no secret's value
    const clean = this.redactor.redactText(piece.text);
    this.#writing = this.write(clean, piece.step)
      .catch(() => undefined)
      .then(() => {
        this.#writing = null;
        this.#next();
      });
  }
}

function lastSpace(s: string): number {
  for (let i = s.length - 1; i >= 0; i--) if (/\s/.test(s[i]!)) return i;
  return -1;
}
