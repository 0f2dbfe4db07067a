// The one schedule ticker of the process: every schedule's next slot in a min-heap, and one
// timer set to the earliest of them (never a poll of every schedule). When it rings, each
// schedule due is handed to `fire` with its slot, in slot order; `fire` sets its next slot.

interface Item {
  at: number;
  id: string;
  /** Which setting of the schedule this item is: an older one is passed over. */
  v: number;
}

/** The longest a timer is set for (setTimeout holds at most about 24.8 days). */
const MAX_WAIT_MS = 3_600_000;

export class Ticker {
  readonly #heap: Item[] = [];
  readonly #current = new Map<string, Item>();
  readonly #fire: (id: string, slot: number) => void;
  #timer: NodeJS.Timeout | undefined;
  #timerAt = Infinity;
  #version = 0;
  #stopped = false;

  constructor(fire: (id: string, slot: number) => void) {
    this.#fire = fire;
  }

  /** Sets (or replaces) the schedule's next slot; null takes it off. */
  set(id: string, at: number | null): void {
    if (at === null) {
      this.#current.delete(id);
      return;
    }
    const item = { at, id, v: ++this.#version };
    this.#current.set(id, item);
    this.#push(item);
    if (at < this.#timerAt) this.#arm();
  }

  /** The schedule's next slot, if it has one here. */
  next(id: string): number | null {
    return this.#current.get(id)?.at ?? null;
  }

  get size(): number {
    return this.#current.size;
  }

  stop(): void {
    this.#stopped = true;
    clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  #arm(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#timerAt = Infinity;
    if (this.#stopped) return;
    this.#dropStale();
    const top = this.#heap[0];
    if (!top) return;
    const wait = Math.min(MAX_WAIT_MS, Math.max(0, top.at - Date.now()));
    this.#timerAt = top.at;
    this.#timer = setTimeout(() => this.#ring(), wait);
    this.#timer.unref();
  }

  #ring(): void {
    this.#timer = undefined;
    this.#timerAt = Infinity;
    const now = Date.now();
    for (;;) {
      this.#dropStale();
      const top = this.#heap[0];
      if (!top || top.at > now || this.#stopped) break;
      this.#pop();
      this.#current.delete(top.id);
      try {
        this.#fire(top.id, top.at);
      } catch {
        // fire answers for its own errors; the ticker goes on with the others
      }
    }
    this.#arm();
  }

  #dropStale(): void {
    for (let top = this.#heap[0]; top && this.#current.get(top.id) !== top; top = this.#heap[0]) this.#pop();
  }

  #push(item: Item): void {
    const h = this.#heap;
    h.push(item);
    let i = h.length - 1;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (h[p]!.at <= h[i]!.at) break;
      [h[p], h[i]] = [h[i]!, h[p]!];
      i = p;
    }
  }

  #pop(): void {
    const h = this.#heap;
    const last = h.pop();
    if (!last || h.length === 0) return;
    h[0] = last;
    let i = 0;
    for (;;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let m = i;
      if (l < h.length && h[l]!.at < h[m]!.at) m = l;
      if (r < h.length && h[r]!.at < h[m]!.at) m = r;
      if (m === i) break;
      [h[m], h[i]] = [h[i]!, h[m]!];
      i = m;
    }
  }
}
