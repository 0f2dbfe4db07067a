// Output kept up to a limit: what a buffered exec answers and what a run stores.
export class BoundedOutput {
  readonly #parts: Buffer[] = [];
  readonly #limit: number;
  #kept = 0;
  /** Bytes offered, kept or not. */
  total = 0;
  truncated = false;

  constructor(limitBytes: number) {
    this.#limit = limitBytes;
  }

  push(chunk: Buffer): void {
    this.total += chunk.length;
    const room = this.#limit - this.#kept;
    const part = chunk.length > room ? chunk.subarray(0, Math.max(0, room)) : chunk;
    if (part.length < chunk.length) this.truncated = true;
    if (part.length === 0) return;
    this.#parts.push(part);
    this.#kept += part.length;
  }

  text(): string {
    return Buffer.concat(this.#parts).toString("utf8");
  }
}
