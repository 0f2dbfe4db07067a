// What a terminal prints, redacted of the agent's secrets before any viewer or the scrollback
// gets it. The shell holds no secret, but it can print one (cat of a file holding a value,
// warren-secret, a command's own output), so its bytes go through one RedactStream per set of
// values, in a row: the values the agent had when the terminal opened, then each set that
// reached it since (a grant, a guild found on attaching, a value it stored from the box).
//
// A stream holds back the bytes that may still be part of a value until the next chunk
// decides them: the skipping scan always keeps the last 7 bytes, and more while a long value
// is under way. A shell's echo is a byte or two at a time, so the held bytes would trail
// every keystroke. So SETTLE_MS after a chunk left bytes held, each stream's settle() lets
// out all it holds except a tail that some value begins with (settling is exact, so it need
// not wait for the output to go quiet; one timer at a time). That tail can only be let out
// by what comes next (or the end), because a value split across two writes, however far
// apart, must still be caught. Letting the held bytes out whatever they were after a
// timeout (end()) would print the first part of a value paused mid-way; so only a tail that
// spells the start of a value waits, and it shows with the next output.
import { SECRET_VALUE_MIN_BYTES } from "../contract/secrets.js";
import { Redactor, type RedactStream } from "../secrets/redact.js";

/** This long after output left bytes held, those that cannot begin a value are let out. */
export const SETTLE_MS = 4;

export class TerminalRedaction {
  readonly #stages: RedactStream[] = [];
  /** Every value redacted (base64), so a value found again adds no stage. */
  readonly #known = new Set<string>();
  readonly #give: (b: Buffer) => void;
  readonly #settleMs: number;
  #timer: NodeJS.Timeout | undefined;
  #ended = false;

  /** `give` takes the redacted bytes, in order. */
  constructor(give: (b: Buffer) => void, settleMs = SETTLE_MS) {
    this.#give = give;
    this.#settleMs = settleMs;
  }

  /**
   * Values not redacted yet are, from the next byte on (a stage after the others). Answers
   * their Redactor (for what was printed before), or null when none is new.
   */
  add(values: Iterable<Buffer>): Redactor | null {
    if (this.#ended) return null;
    const fresh: Buffer[] = [];
    for (const v of values) {
      if (v.length < SECRET_VALUE_MIN_BYTES) continue;
      const k = v.toString("base64");
      if (this.#known.has(k)) continue;
      this.#known.add(k);
      fresh.push(v);
    }
    if (fresh.length === 0) return null;
    const r = new Redactor(fresh, SECRET_VALUE_MIN_BYTES);
    this.#stages.push(r.stream());
    return r;
  }

  push(chunk: Buffer): void {
    if (this.#ended) return;
    let b = chunk;
    for (const s of this.#stages) b = s.push(b);
    if (b.length > 0) this.#give(b);
    if (this.#timer === undefined && this.#stages.some((s) => s.holding > 0))
      this.#timer = setTimeout(() => this.#settle(), this.#settleMs);
  }

  /** The terminal ended: whatever is held goes out (a value cut short is no value). */
  end(): void {
    if (this.#ended) return;
    this.#ended = true;
    clearTimeout(this.#timer);
    let b: Buffer = Buffer.alloc(0);
    for (const s of this.#stages) {
      const a = s.push(b);
      const z = s.end();
      b = z.length === 0 ? a : Buffer.concat([a, z]);
    }
    if (b.length > 0) this.#give(b);
  }

  #settle(): void {
    this.#timer = undefined;
    if (this.#ended) return;
    let b: Buffer = Buffer.alloc(0);
    for (const s of this.#stages) {
      const a = s.push(b);
      const z = s.settle();
      b = z.length === 0 ? a : Buffer.concat([a, z]);
    }
    // what still waits may begin a value: the next output (or the end) decides it
    if (b.length > 0) this.#give(b);
  }
}
