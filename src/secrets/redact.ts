// Exact-value redaction of secrets in output, streaming: a value split across chunks is still
// caught. When every value is at least 8 bytes (what warren allows), a Wu-Manber scan looks at
// the last two bytes of each 8-byte window and skips up to 7 bytes at a time where no value's
// first 8 bytes could end; a window that may be one is compared. Shorter values go through an
// Aho-Corasick automaton (a dense table over the bytes the values use) over the first PREFIX
// bytes of every value. Either way the rest of a long value is compared directly, and bytes
// that may still turn out to be part of a value are held back until the next chunk (or the
// end) decides.

/** What a value is replaced by. */
export const REDACTED = "[redacted]";
const MARK = Buffer.from(REDACTED, "utf8");

/** How many leading bytes of each value the automaton holds; the rest is compared. */
const PREFIX = 32;

interface Pattern {
  bytes: Buffer;
}

/** The window of the skipping scan: every value's first 8 bytes, read by 2-byte blocks. */
const W = 8;
const MAX_SHIFT = W - 1;

/** Wu-Manber's tables over the first W bytes of every value (all at least W bytes long). */
class SkipIndex {
  /** How far the window may move when its last two bytes are this block (0: compare here). */
  readonly shift = new Uint8Array(65536).fill(MAX_SHIFT);
  /** The values whose first W bytes end with this block. */
  readonly byLast = new Map<number, Pattern[]>();

  constructor(patterns: Pattern[]) {
    for (const p of patterns) {
      const b = p.bytes;
      for (let j = 1; j < W; j++) {
        const block = (b[j - 1]! << 8) | b[j]!;
        const sh = W - 1 - j;
        if (sh < this.shift[block]!) this.shift[block] = sh;
      }
      const last = (b[W - 2]! << 8) | b[W - 1]!;
      const list = this.byLast.get(last);
      if (list) list.push(p);
      else this.byLast.set(last, [p]);
    }
  }
}

/**
 * The values with their lower-case forms: a host name is case-folded on its way (curl,
 * browsers and resolvers lower it), so a value spelled in one is found that way too.
 */
export function withCaseForms(values: Iterable<Buffer | string>): Buffer[] {
  const out: Buffer[] = [];
  for (const v of values) {
    const b = typeof v === "string" ? Buffer.from(v, "utf8") : v;
    out.push(b);
    let text: string;
    try {
      text = strictUtf8.decode(b);
    } catch {
      continue; // bytes that are not text have no case
    }
    const lower = Buffer.from(text.toLowerCase(), "utf8");
    if (!lower.equals(b)) out.push(lower);
  }
  return out;
}

const strictUtf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

/** A compiled set of values. Immutable; each stream of output gets its own `stream()`. */
export class Redactor {
  /** classOf[byte]: the byte's column in the table; 0 = a byte no value's prefix uses. */
  readonly classOf = new Uint8Array(256);
  readonly classes: number;
  /** next[state * classes + class] */
  readonly next: Int32Array;
  /** The same table holding next states premultiplied by `classes` (the hot loop's form). */
  readonly row: Int32Array;
  /** hits[state * classes] is 1 where some value's prefix ends. */
  readonly hits: Uint8Array;
  /** The length of the prefix each state stands for. */
  readonly depth: Int32Array;
  /** Patterns whose prefix ends at a state (its own and by failure links), or null. */
  readonly out: (Pattern[] | null)[];
  readonly size: number;
  /** The skipping scan, when every value is at least W bytes; else the automaton is used. */
  readonly skip: SkipIndex | null;
  /** The values, each once. */
  readonly values: readonly Buffer[];

  static readonly empty = new Redactor([]);

  /** Values shorter than `minBytes` are left out (they would redact ordinary text). */
  constructor(values: Iterable<Buffer | string>, minBytes = 1) {
    const seen = new Set<string>();
    const patterns: Pattern[] = [];
    for (const v of values) {
      const bytes = typeof v === "string" ? Buffer.from(v, "utf8") : v;
      if (bytes.length < minBytes || bytes.length === 0) continue;
      const k = bytes.toString("base64");
      if (seen.has(k)) continue;
      seen.add(k);
      patterns.push({ bytes });
    }
    this.size = patterns.length;
    this.values = patterns.map((p) => p.bytes);
    this.skip =
      patterns.length > 0 && patterns.every((p) => p.bytes.length >= W) ? new SkipIndex(patterns) : null;
    let nclass = 1;
    for (const p of patterns)
      for (const b of p.bytes.subarray(0, PREFIX)) if (this.classOf[b] === 0) this.classOf[b] = nclass++;
    this.classes = nclass;
    // the trie
    const goto: Map<number, number>[] = [new Map()];
    const depth: number[] = [0];
    const own: (Pattern[] | null)[] = [null];
    for (const p of patterns) {
      let s = 0;
      const pre = p.bytes.subarray(0, PREFIX);
      for (const b of pre) {
        const c = this.classOf[b]!;
        let t = goto[s]!.get(c);
        if (t === undefined) {
          t = goto.length;
          goto.push(new Map());
          depth.push(depth[s]! + 1);
          own.push(null);
          goto[s]!.set(c, t);
        }
        s = t;
      }
      (own[s] ??= []).push(p);
    }
    const n = goto.length;
    const C = nclass;
    const next = new Int32Array(n * C);
    const fail = new Int32Array(n);
    const out: (Pattern[] | null)[] = own.slice();
    // breadth first: the dense table of the automaton with failure links folded in
    const queue: number[] = [];
    for (let c = 0; c < C; c++) {
      const t = goto[0]!.get(c);
      if (t !== undefined) {
        next[c] = t;
        fail[t] = 0;
        queue.push(t);
      }
    }
    for (let qi = 0; qi < queue.length; qi++) {
      const s = queue[qi]!;
      const f = fail[s]!;
      const fo = out[f];
      if (fo) out[s] = [...(out[s] ?? []), ...fo];
      for (let c = 0; c < C; c++) {
        const t = goto[s]!.get(c);
        if (t !== undefined) {
          fail[t] = next[f * C + c]!;
          next[s * C + c] = t;
          queue.push(t);
        } else {
          next[s * C + c] = next[f * C + c]!;
        }
      }
    }
    this.next = next;
    this.row = next.map((t) => t * C);
    this.hits = new Uint8Array(n * C);
    for (let i = 0; i < n; i++) if (out[i]) this.hits[i * C] = 1;
    this.depth = Int32Array.from(depth);
    this.out = out;
  }

  stream(): RedactStream {
    return new RedactStream(this);
  }

  /** Redacts one whole piece of bytes (not a stream). */
  redact(data: Buffer): Buffer {
    if (this.size === 0) return data;
    const s = this.stream();
    const a = s.push(data);
    const b = s.end();
    return b.length === 0 ? a : Buffer.concat([a, b]);
  }

  redactText(text: string): string {
    if (this.size === 0) return text;
    return this.redact(Buffer.from(text, "utf8")).toString("utf8");
  }
}

interface Candidate {
  start: number;
  p: Pattern;
}

/** One stream of output (stdout, stderr, ...) through a Redactor. */
export class RedactStream {
  readonly #r: Redactor;
  #state = 0;
  /** Bytes held back; `#base` is the offset of its first byte in the whole stream. */
  #held: Buffer = Buffer.alloc(0);
  #base = 0;
  /** Long values whose prefix was seen and whose rest has not all arrived. */
  #open: Candidate[] = [];
  /** Stretches to redact, [start, end), in the held bytes' offsets. */
  #ranges: [number, number][] = [];
  /** Where the last replaced stretch ended: a stretch right after it joins it. */
  #markEnd = -1;
  /** The skipping scan: where the next window ends, in the stream's offsets. */
  #next = W - 1;

  constructor(r: Redactor) {
    this.#r = r;
  }

  /** The bytes that can be let out now, redacted. */
  push(chunk: Buffer): Buffer {
    const r = this.#r;
    if (r.size === 0) return chunk;
    if (chunk.length === 0) return chunk;
    const buf = this.#held.length === 0 ? chunk : Buffer.concat([this.#held, chunk]);
    const base = this.#base;
    const cutBack = r.skip ? this.#scanSkipping(r.skip, buf, base) : this.#scanAutomaton(r, buf, base);
    const end = base + buf.length;
    // long values whose every byte is here: compare
    if (this.#open.length > 0) {
      const still: Candidate[] = [];
      for (const c of this.#open) {
        const len = c.p.bytes.length;
        if (c.start + len > end) {
          still.push(c);
          continue;
        }
        const at = c.start - base;
        if (buf.compare(c.p.bytes, 0, len, at, at + len) === 0) this.#ranges.push([c.start, c.start + len]);
      }
      this.#open = still;
    }
    let cut = end - cutBack;
    for (const c of this.#open) if (c.start < cut) cut = c.start;
    return this.#emit(buf, base, cut);
  }

  /** Aho-Corasick over the new bytes; answers how many trailing bytes may begin a value. */
  #scanAutomaton(r: Redactor, buf: Buffer, base: number): number {
    const { row, classOf, out, hits } = r;
    const C = r.classes;
    let s = this.#state * C;
    for (let i = this.#held.length; i < buf.length; i++) {
      s = row[s + classOf[buf[i]!]!]!;
      if (hits[s] === 1) {
        for (const p of out[s / C]!) {
          const k = Math.min(PREFIX, p.bytes.length);
          const start = base + i - k + 1;
          if (p.bytes.length === k) this.#ranges.push([start, start + k]);
          else this.#open.push({ start, p });
        }
      }
    }
    this.#state = s / C;
    return r.depth[this.#state]!;
  }

  /** Wu-Manber from where the last chunk left off; answers how many trailing bytes to hold. */
  #scanSkipping(x: SkipIndex, buf: Buffer, base: number): number {
    const { shift, byLast } = x;
    let pos = this.#next - base; // the last byte of the window
    const n = buf.length;
    while (pos < n) {
      const block = (buf[pos - 1]! << 8) | buf[pos]!;
      const sh = shift[block]!;
      if (sh !== 0) {
        pos += sh;
        continue;
      }
      const at = pos - (W - 1);
      for (const p of byLast.get(block)!) {
        const b = p.bytes;
        let same = true;
        for (let j = 0; j < W - 2; j++)
          if (buf[at + j] !== b[j]) {
            same = false;
            break;
          }
        if (!same) continue;
        if (b.length === W) this.#ranges.push([base + at, base + at + W]);
        else this.#open.push({ start: base + at, p });
      }
      pos++;
    }
    this.#next = base + pos;
    return W - 1;
  }

  /** How many bytes are held back, waiting for the next chunk to decide them. */
  get holding(): number {
    return this.#held.length;
  }

  /**
   * Lets out, redacted, the held bytes at which no value can begin whatever comes next: all
   * but the longest held tail that some value starts with. A stream that may go quiet (a
   * terminal) calls it after a pause, so only a tail that may be the start of a value waits
   * for the next chunk; the stream goes on as before.
   */
  settle(): Buffer {
    const held = this.#held;
    if (this.#r.size === 0 || held.length === 0) return Buffer.alloc(0);
    let from = held.length;
    for (let i = 0; i < held.length && from === held.length; i++) {
      const rest = held.length - i;
      for (const v of this.#r.values)
        if (v.length > rest && held.compare(v, 0, rest, i) === 0) {
          from = i;
          break;
        }
    }
    if (from === 0) return Buffer.alloc(0);
    // a long value begun before `from` did not go on as the value: it is no candidate now
    const cut = this.#base + from;
    this.#open = this.#open.filter((c) => c.start >= cut);
    return this.#emit(held, this.#base, cut);
  }

  /** The rest, at the end of the stream. */
  end(): Buffer {
    if (this.#r.size === 0) return Buffer.alloc(0);
    this.#open = [];
    const out = this.#emit(this.#held, this.#base, this.#base + this.#held.length);
    this.#state = 0;
    return out;
  }

  /** Lets out the bytes before `cut` (never inside a stretch to redact), keeps the rest. */
  #emit(buf: Buffer, base: number, cut: number): Buffer {
    let ranges = this.#ranges;
    if (ranges.length > 1) {
      ranges.sort((a, b) => a[0] - b[0]);
      const merged: [number, number][] = [ranges[0]!];
      for (let i = 1; i < ranges.length; i++) {
        const last = merged[merged.length - 1]!;
        const cur = ranges[i]!;
        if (cur[0] <= last[1]) last[1] = Math.max(last[1], cur[1]);
        else merged.push(cur);
      }
      ranges = merged;
    }
    for (const [a, b] of ranges) if (a < cut && b > cut) cut = a;
    const parts: Buffer[] = [];
    let at = base;
    const keep: [number, number][] = [];
    for (const [a, b] of ranges) {
      if (a >= cut) {
        keep.push([a, b]);
        continue;
      }
      if (a > at) parts.push(buf.subarray(at - base, a - base));
      if (a !== this.#markEnd || a !== at) parts.push(MARK);
      at = b;
      this.#markEnd = b;
    }
    if (cut > at) parts.push(buf.subarray(at - base, cut - base));
    this.#ranges = keep;
    this.#held = Buffer.from(buf.subarray(Math.max(cut, at) - base));
    this.#base = Math.max(cut, at);
    if (parts.length === 1) return parts[0]!;
    return Buffer.concat(parts);
  }
}
