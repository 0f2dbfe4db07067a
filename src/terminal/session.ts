// One terminal in a box and everyone looking at it: its output, redacted of the agent's
// secrets by the agent's door (src/workloads), goes to every viewer and into a bounded scrollback (replayed to a
// viewer that attaches later); writers' input goes to the shell, watchers' is dropped.
// Transport-free: a viewer is whatever can send bytes and messages (the HTTP layer adapts a
// WebSocket to it).
import type { z } from "zod";
import type { TerminalMessage } from "../contract/terminal.js";
import type { BoxExecResult, PtySignal } from "../runtime/index.js";
import type { Redactor } from "../secrets/redact.js";
import type { AgentPty } from "../workloads/index.js";

export type TerminalMessageOut = z.output<typeof TerminalMessage>;

export type ViewerMode = "write" | "watch";

export interface Viewer {
  readonly mode: ViewerMode;
  /** Terminal bytes (a binary frame). */
  send(data: Buffer): void;
  /** A JSON message (a text frame). */
  message(m: TerminalMessageOut): void;
  /** Ends the viewer's connection with a close code and a reason for people. */
  close(code: number, reason: string): void;
  /** Bytes queued for this viewer and not yet sent. */
  readonly buffered: number;
  /** Stops and restarts taking this viewer's input (flow control towards the box). */
  pause(): void;
  resume(): void;
}

export interface SessionOptions {
  agentId: string;
  machineId: string;
  /** The agent's one shared shell, or a command of one connection. */
  shared: boolean;
  cols: number;
  rows: number;
  scrollbackBytes: number;
  /** Restarts the machine's idle timer (called at most once every `touchEveryMs`). */
  touch: () => void;
  touchEveryMs: number;
  /** Called once the session ended, whatever ended it. */
  onEnd: (s: TerminalSession) => void;
}

/** A viewer this far behind is let go (it reconnects and gets the scrollback). */
export const SLOW_VIEWER_BYTES = 8 * 1024 * 1024;
/** Writers' input waits (their sockets are not read) while this much waits for boxd. */
const INPUT_HIGH_WATER = 1024 * 1024;
/** Close codes: 1000 the terminal ended (with its reason), 1013 a viewer too slow. */
export const CLOSE_ENDED = 1000;
export const CLOSE_SLOW = 1013;
/** A WebSocket close reason is at most 123 bytes. */
const reasonOf = (s: string): string => (Buffer.byteLength(s) <= 123 ? s : `${s.slice(0, 110)}...`);

export class TerminalSession {
  readonly agentId: string;
  readonly machineId: string;
  readonly shared: boolean;
  cols: number;
  rows: number;
  readonly #o: SessionOptions;
  #pty: AgentPty | undefined;
  readonly #viewers = new Set<Viewer>();
  readonly #scroll: Buffer[] = [];
  #scrollBytes = 0;
  #lastTouch = 0;
  #inputPaused = false;
  #ended = false;

  constructor(o: SessionOptions) {
    this.#o = o;
    this.agentId = o.agentId;
    this.machineId = o.machineId;
    this.shared = o.shared;
    this.cols = o.cols;
    this.rows = o.rows;
  }

  get ended(): boolean {
    return this.#ended;
  }

  get viewers(): number {
    return this.#viewers.size;
  }

  /** The terminal is open in the box: its exit (or boxd gone) ends the session. */
  started(pty: AgentPty): void {
    this.#pty = pty;
    pty.stream.onDrain(() => this.#resumeInput());
    pty.stream.exited.then(
      (r) => this.end(exitReason(r), r),
      (err: unknown) => this.end(err instanceof Error ? err.message : String(err)),
    );
  }

  /** The agent's secrets resolved again (a viewer attaches): a new value is redacted from now on. */
  async refresh(): Promise<void> {
    await this.#pty?.refresh();
  }

  /** A set of values newly redacted (rescrub of the door's pty): from the scrollback too. */
  rescrub(r: Redactor): void {
    if (this.#scrollBytes === 0) return;
    const all = r.redact(Buffer.concat(this.#scroll, this.#scrollBytes));
    this.#scroll.length = 0;
    this.#scroll.push(all);
    this.#scrollBytes = all.length;
    this.#trim();
  }

  /** Output of the terminal, already redacted by the door: to the viewers and the scrollback. */
  deliver(chunk: Buffer): void {
    if (this.#ended) return;
    this.#scroll.push(chunk);
    this.#scrollBytes += chunk.length;
    this.#trim();
    for (const v of this.#viewers) {
      if (v.buffered > SLOW_VIEWER_BYTES) {
        this.#viewers.delete(v);
        v.close(CLOSE_SLOW, "this viewer fell too far behind the terminal; reconnect to see it again");
      } else v.send(chunk);
    }
  }

  #trim(): void {
    while (this.#scrollBytes > this.#o.scrollbackBytes && this.#scroll.length > 1) {
      const first = this.#scroll.shift() as Buffer;
      this.#scrollBytes -= first.length;
    }
    if (this.#scrollBytes > this.#o.scrollbackBytes) {
      const only = this.#scroll[0] as Buffer;
      this.#scroll[0] = only.subarray(only.length - this.#o.scrollbackBytes);
      this.#scrollBytes = this.#o.scrollbackBytes;
    }
  }

  /** A viewer joins: the recent screen first, then everything live. */
  attach(v: Viewer): void {
    if (this.#ended) return;
    this.#viewers.add(v);
    v.message({ type: "attached", mode: v.mode, shared: this.shared, cols: this.cols, rows: this.rows });
    if (this.#scrollBytes > 0) {
      const all = Buffer.concat(this.#scroll, this.#scrollBytes);
      for (let at = 0; at < all.length; at += 64 * 1024) v.send(all.subarray(at, at + 64 * 1024));
    }
    if (this.#inputPaused && v.mode === "write") v.pause();
  }

  /** A viewer leaves; a command of one connection's own ends with it. */
  detach(v: Viewer): void {
    this.#viewers.delete(v);
    if (!this.shared && this.#viewers.size === 0) this.end("its connection closed");
  }

  /** A viewer's keys: writers' go to the shell, watchers' are dropped. */
  input(v: Viewer, data: Buffer): void {
    if (v.mode !== "write" || this.#ended || !this.#pty) return;
    this.#activity();
    const ok = this.#pty.stream.write(data);
    if ((!ok || this.#pty.stream.pending > INPUT_HIGH_WATER) && !this.#inputPaused) {
      this.#inputPaused = true;
      for (const w of this.#viewers) if (w.mode === "write") w.pause();
    }
  }

  resize(v: Viewer, cols: number, rows: number): void {
    if (v.mode !== "write" || this.#ended || !this.#pty) return;
    if (cols === this.cols && rows === this.rows) return;
    this.cols = cols;
    this.rows = rows;
    this.#pty.stream.resize(cols, rows);
    for (const w of this.#viewers) if (w !== v) w.message({ type: "resize", cols, rows });
  }

  signal(v: Viewer, signal: PtySignal): void {
    if (v.mode !== "write" || this.#ended || !this.#pty) return;
    this.#activity();
    this.#pty.stream.signal(signal);
  }

  /** Ends the session: every viewer is told why and closed; the shell is killed if it runs. */
  end(reason: string, exit?: BoxExecResult): void {
    if (this.#ended) return;
    this.#pty?.end(); // the last of its output, before the viewers are told it ended
    this.#ended = true;
    this.#pty?.stream.cancel();
    const message: TerminalMessageOut = {
      type: "exit",
      exit_code: exit?.exitCode ?? null,
      signal: exit?.signal ?? null,
      reason,
    };
    for (const v of this.#viewers) {
      v.message(message);
      v.close(CLOSE_ENDED, reasonOf(reason));
    }
    this.#viewers.clear();
    this.#o.onEnd(this);
  }

  #activity(): void {
    const now = Date.now();
    if (now - this.#lastTouch < this.#o.touchEveryMs) return;
    this.#lastTouch = now;
    this.#o.touch();
  }

  #resumeInput(): void {
    if (!this.#inputPaused || !this.#pty || this.#pty.stream.pending > INPUT_HIGH_WATER) return;
    this.#inputPaused = false;
    for (const w of this.#viewers) if (w.mode === "write") w.resume();
  }
}

function exitReason(r: BoxExecResult): string {
  if (r.cancelled) return "the terminal was closed";
  if (r.signal) return `the shell was ended by ${r.signal}`;
  return `the shell exited with code ${r.exitCode ?? "?"}`;
}
