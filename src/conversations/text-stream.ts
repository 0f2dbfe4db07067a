// The model's text as it streams, as events: pieces are let out up to their last whitespace
// and redacted, the rest held until more comes (or the answer ends), so that a secret's
// value split across two pieces is still whole when it is redacted.
import type { Redacts } from "../records/index.js";

/** Past this many characters held, a piece is let out whole. */
const HOLD_MAX = 4096;

export class TextStream {
  #held = "";
  /** Text let out while a piece's event was being written: the next event, all of it. */
  #waiting = "";
  /** The event being written, if one is. */
  #writing: Promise<void> | null = null;

  constructor(
    private readonly redactor: Redacts,
    private readonly write: (text: string) => Promise<void>,
  ) {}

  push(delta: string): void {
    this.#held += delta;
    const cut = this.#held.length > HOLD_MAX ? this.#held.length : lastSpace(this.#held) + 1;
    if (cut <= 0) return;
    const out = this.#held.slice(0, cut);
    this.#held = this.#held.slice(cut);
    this.#emit(out);
  }

  /** Lets out what is held and waits for every piece's event. */
  async end(): Promise<void> {
    if (this.#held) this.#emit(this.#held);
    this.#held = "";
    while (this.#writing) await this.#writing;
  }

  /**
   * One event at a time: what comes while one is written goes out as the next, whole. A
   * model that streams faster than events are stored makes fewer, longer pieces, and the
   * first piece is never queued behind the others.
   */
  #emit(text: string): void {
    this.#waiting += text;
    if (!this.#writing) this.#next();
  }

  #next(): void {
    // pieces end at whitespace (or are whole), so pieces joined split no secret's value
    const clean = this.redactor.redactText(this.#waiting);
    this.#waiting = "";
    this.#writing = this.write(clean)
      .catch(() => undefined)
      .then(() => {
        this.#writing = null;
        if (this.#waiting) this.#next();
      });
  }
}

function lastSpace(s: string): number {
  for (let i = s.length - 1; i >= 0; i--) if (/\s/.test(s[i]!)) return i;
  return -1;
}
