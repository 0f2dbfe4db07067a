// The model's text as it streams, as events: pieces are let out up to their last whitespace
// and redacted, the rest held until more comes (or the answer ends), so that a secret's
// value split across two pieces is still whole when it is redacted.
import type { Redacts } from "../records/index.js";

/** Past this many characters held, a piece is let out whole. */
const HOLD_MAX = 4096;

export class TextStream {
  #held = "";
  #writing: Promise<void> = Promise.resolve();

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
    await this.#writing.catch(() => undefined);
  }

  #emit(text: string): void {
    const clean = this.redactor.redactText(text);
    this.#writing = this.#writing.then(
      () => this.write(clean),
      () => this.write(clean),
    );
  }
}

function lastSpace(s: string): number {
  for (let i = s.length - 1; i >= 0; i--) if (/\s/.test(s[i]!)) return i;
  return -1;
}
