// The log of a run's calls through the gateways, in its agent's runtime folder: one JSON line
// per model call and per tool call (when, which kind, its name, its outcome, how long, the
// tokens where known), appended by the server to /run/warren/<agent id>/logs/<run id>.log
// (the agent's uid's alone: 0600 in a 0700 folder, boxes/owned-files.ts). Never a body, an
// argument or an error's text; every field passes through the run's redaction set, as its
// records do. Each file is capped (CALL_LOG_CAP): its last line then says the rest was left
// out. A box without runtime folders (kubernetes) has no log. It goes with the folder.
import { existsSync } from "node:fs";
import type { FileHandle } from "node:fs/promises";
import { appendOwned } from "../boxes/index.js";
import { redactDeep, type Redacts } from "../records/index.js";

/** The most bytes of one run's log (its last line included). */
export const CALL_LOG_CAP = 1024 * 1024;
/** Room kept for the last line that says the log is full. */
const LAST_LINE = 200;
const NAME_MAX = 200;

type Data = Record<string, unknown>;
const num = (v: unknown): number | undefined => (typeof v === "number" && Number.isFinite(v) ? v : undefined);
const str = (v: unknown): string => (typeof v === "string" ? v.slice(0, NAME_MAX) : "");

/** The line of a run event that is a gateway call (model_call, tool_call); null for any other. */
export function callLine(type: string, data: Data, at: Date): Data | null {
  if (type === "model_call")
    return {
      at: at.toISOString(),
      kind: "model",
      name: `${str(data.provider)}:${str(data.model)}`,
      status: str(data.status),
      duration_ms: num(data.latency_ms),
      tokens_in: num(data.tokens_in),
      tokens_out: num(data.tokens_out),
    };
  if (type === "tool_call")
    return {
      at: at.toISOString(),
      kind: "tool",
      name: str(data.tool),
      status: data.decision === "deny" ? "denied" : data.error !== undefined ? "error" : "ok",
      duration_ms: num(data.duration_ms),
    };
  return null;
}

export interface CallLogOptions {
  /** The agent's runtime folder on the host; null where its box has none. */
  dir: string | null;
  runId: string;
  uid: number;
  redactor: Redacts;
  cap?: number;
  /** A log that cannot be written is told here, once (the run goes on). */
  onError: (err: unknown) => void;
}

export class RunCallLog {
  readonly #o: CallLogOptions;
  #fh: Promise<FileHandle> | null = null;
  #bytes = 0;
  /** What is not yet in the file (its folder was not there yet). */
  #held = "";
  #done = false;
  #tail: Promise<void> = Promise.resolve();

  constructor(o: CallLogOptions) {
    this.#o = o;
    if (!o.dir) this.#done = true;
  }

  /** Appends the line of a run event when it is a gateway call (in the order they come). */
  note(type: string, data: Data, at = new Date()): Promise<void> {
    if (this.#done) return this.#tail;
    const line = callLine(type, data, at);
    if (!line) return this.#tail;
    const text = `${JSON.stringify(redactDeep(line, this.#o.redactor))}\n`;
    this.#tail = this.#tail.then(() => this.#write(text, at));
    return this.#tail;
  }

  async #write(text: string, at: Date): Promise<void> {
    if (this.#done) return;
    const cap = this.#o.cap ?? CALL_LOG_CAP;
    try {
      let out = text;
      if (this.#bytes + Buffer.byteLength(text) > cap - LAST_LINE) {
        out = `${JSON.stringify({ at: at.toISOString(), kind: "log", status: "full", cap_bytes: cap })}\n`;
        this.#done = true;
      }
      this.#bytes += Buffer.byteLength(out);
      this.#held += out;
      await this.#flush();
    } catch (err) {
      this.#done = true;
      this.#held = "";
      this.#o.onError(err);
    }
  }

  /** Appends what is held, once the folder is there (an assistant's first calls may come before its box). */
  async #flush(): Promise<void> {
    const dir = this.#o.dir;
    if (!dir || this.#held === "") return;
    if (!this.#fh) {
      if (!existsSync(dir)) return;
      this.#fh = appendOwned(dir, "logs", `${this.#o.runId}.log`, this.#o.uid, 0o600);
    }
    const fh = await this.#fh;
    const held = this.#held;
    this.#held = "";
    await fh.appendFile(held);
  }

  /** Ends the log (the run ended): what is held is written, its descriptor closed. */
  async close(): Promise<void> {
    await this.#tail;
    this.#done = true;
    await this.#flush().catch((err: unknown) => this.#o.onError(err));
    const fh = await this.#fh?.catch(() => null);
    await fh?.close().catch(() => undefined);
  }
}
