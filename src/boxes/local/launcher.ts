// Boxes are started by a small launcher process (native/box-launch.c), never by forking the
// server: a fork copies the parent's page tables, and the server's (its heap, the embedded
// database) made every box start block the event loop for tens of milliseconds. One
// launcher serves the provider; it ends when the provider closes or the server goes, and
// the boxes it started stay, as they stayed when the server was their parent.
import { spawn, type ChildProcess } from "node:child_process";

/** A box's first process, started by the launcher. */
export interface Launched {
  pid: number;
  /** Resolves once the box wrote "ready" on its fd 3; rejects when it exits first. */
  ready: Promise<void>;
  /** Stops waiting for ready (a start that timed out). */
  abandon(): void;
}

interface Pending {
  started: (pid: number) => void;
  failed: (err: Error) => void;
  ready?: () => void;
  exited?: (err: Error) => void;
}

export class BoxLauncher {
  #child: ChildProcess | undefined;
  #buffered = "";
  #next = 0;
  readonly #pending = new Map<string, Pending>();

  constructor(private readonly binary: string) {}

  /**
   * Starts `argv` in a session of its own: stdin /dev/null, stdout and stderr appended to
   * `log`, fd 3 the pipe "ready" is read from, fd 4 `filter` opened for reading.
   */
  launch(o: { argv: string[]; env: Record<string, string>; log: string; filter: string }): Promise<Launched> {
    const tag = `b${++this.#next}`;
    const fields = [
      tag,
      o.log,
      o.filter,
      String(o.argv.length),
      ...o.argv,
      String(Object.keys(o.env).length),
      ...Object.entries(o.env).map(([k, v]) => `${k}=${v}`),
    ];
    for (const f of fields)
      if (f.includes("\0")) return Promise.reject(new Error("a box's argument holds a NUL byte"));
    const body = Buffer.from(fields.map((f) => `${f}\0`).join(""), "utf8");
    const head = Buffer.alloc(4);
    head.writeUInt32LE(body.length);
    const child = this.#process();
    return new Promise<Launched>((resolve, reject) => {
      const p: Pending = {
        failed: (err) => {
          this.#pending.delete(tag);
          reject(err);
        },
        started: (pid) => {
          const ready = new Promise<void>((ok, no) => {
            p.ready = ok;
            p.exited = no;
          });
          ready.catch(() => undefined);
          resolve({
            pid,
            ready,
            abandon: () => {
              this.#pending.delete(tag);
              this.#hold();
            },
          });
        },
      };
      this.#pending.set(tag, p);
      this.#hold();
      child.stdin?.write(Buffer.concat([head, body]));
    });
  }

  /** Ends the launcher (boxes it started go on). */
  close(): void {
    const child = this.#child;
    this.#child = undefined;
    child?.stdin?.end();
    for (const [tag, p] of this.#pending) {
      this.#pending.delete(tag);
      const err = new Error("the box launcher was closed");
      (p.exited ?? p.failed)(err);
    }
  }

  #process(): ChildProcess {
    if (this.#child) return this.#child;
    const child = spawn(this.binary, [], { stdio: ["pipe", "pipe", "inherit"] });
    this.#child = child;
    child.stdout?.setEncoding("utf8");
    child.stdout?.on("data", (text: string) => this.#read(text));
    child.stdin?.on("error", () => undefined);
    const gone = (why: string) => {
      if (this.#child !== child) return;
      this.#child = undefined;
      for (const [tag, p] of this.#pending) {
        this.#pending.delete(tag);
        (p.exited ?? p.failed)(new Error(`the box launcher ${why}`));
      }
    };
    child.once("error", (err) => gone(`failed: ${err.message}`));
    child.once("exit", (code, signal) => gone(`exited (${signal ?? `code ${code}`})`));
    return child;
  }

  /** The launcher keeps the server's process alive only while a start waits on it. */
  #hold(): void {
    const child = this.#child;
    if (!child) return;
    const streams = [child.stdout, child.stdin] as unknown as ({ ref?(): void; unref?(): void } | null)[];
    if (this.#pending.size > 0) {
      child.ref();
      for (const s of streams) s?.ref?.();
    } else {
      child.unref();
      for (const s of streams) s?.unref?.();
    }
  }

  #read(text: string): void {
    this.#buffered += text;
    for (let nl = this.#buffered.indexOf("\n"); nl >= 0; nl = this.#buffered.indexOf("\n")) {
      const line = this.#buffered.slice(0, nl);
      this.#buffered = this.#buffered.slice(nl + 1);
      const [what, tag = "", ...rest] = line.split(" ");
      const p = this.#pending.get(tag);
      if (!p) continue;
      queueMicrotask(() => this.#hold());
      if (what === "started") p.started(Number(rest[0]));
      else if (what === "error") p.failed(new Error(rest.join(" ")));
      else if (what === "ready") {
        this.#pending.delete(tag);
        p.ready?.();
      } else if (what === "exit") {
        this.#pending.delete(tag);
        const [code, sig] = rest;
        p.exited?.(
          new Error(`the box exited during start (${sig !== "0" ? `signal ${sig}` : `code ${code}`})`),
        );
      }
    }
  }
}
