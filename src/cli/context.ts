// What a command runs with: the client, its streams, and the shared ways to print answers
// (JSON for scripts, text for people), to read local files and to show a wait.
import { once } from "node:events";
import { readFile } from "node:fs/promises";
import { WarrenClient } from "../sdk/index.js";
import { isTerminal, startSpinner, type Spinner } from "./spinner.js";

/** The exit codes of every command, besides those it passes on from a command it ran. */
export const EXIT_OK = 0;
/** The server or a local file said no. */
export const EXIT_FAILED = 1;
/** warren was called wrongly. */
export const EXIT_USAGE = 2;

export interface CliIo {
  stdout: NodeJS.WritableStream;
  stderr: NodeJS.WritableStream;
  stdin: NodeJS.ReadableStream;
  env: Record<string, string | undefined>;
  /** Default: the global fetch. */
  fetch?: typeof fetch;
  /** Default: `serve()` of the control plane, loaded only when asked for. */
  serve?: (env: Record<string, string | undefined>, opts: { stopBoxes: boolean }) => Promise<void>;
}

/** The global options, read. */
export interface Globals {
  url: string;
  headers: Record<string, string>;
  json: boolean;
  /** -q: only the ids of what was listed or made. */
  quiet?: boolean;
}

/** A failure on this side (a local file, bad JSON in a policy file): printed like a server error. */
export class LocalError extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = "LocalError";
  }
}

export async function write(stream: NodeJS.WritableStream, chunk: string | Uint8Array): Promise<void> {
  if (!stream.write(chunk)) await once(stream, "drain");
}

/** The ids of an answer: each item's of `{items}`, else its own `id`; undefined when it has none. */
function idsOf(answer: unknown): string[] | undefined {
  const idOf = (v: unknown): string | undefined =>
    typeof v === "object" && v !== null && "id" in v && typeof v.id === "string" ? v.id : undefined;
  if (typeof answer === "object" && answer !== null && "items" in answer && Array.isArray(answer.items))
    return answer.items.map(idOf).filter((id): id is string => id !== undefined);
  const own = idOf(answer);
  return own === undefined ? undefined : [own];
}

export class Context {
  private made: WarrenClient | undefined;

  constructor(
    readonly io: CliIo,
    readonly globals: Globals,
  ) {}

  get json(): boolean {
    return this.globals.json;
  }

  /** The SDK client for the server of --url, with the headers of --header. */
  get client(): WarrenClient {
    this.made ??= new WarrenClient({
      baseUrl: this.globals.url,
      headers: this.globals.headers,
      ...(this.io.fetch ? { fetch: this.io.fetch } : {}),
    });
    return this.made;
  }

  out(chunk: string | Uint8Array): Promise<void> {
    return write(this.io.stdout, chunk);
  }

  err(chunk: string | Uint8Array): Promise<void> {
    return write(this.io.stderr, chunk);
  }

  get quiet(): boolean {
    return this.globals.quiet === true;
  }

  /**
   * Prints the answer: exact JSON for scripts, only its ids under -q (each item's of a list, or
   * its own), or what `human` makes of it. Answers exit code 0.
   */
  async show(answer: unknown, human: () => string): Promise<number> {
    const ids = this.quiet && !this.json ? idsOf(answer) : undefined;
    if (ids !== undefined) {
      await this.out(ids.map((id) => `${id}\n`).join(""));
    } else if (this.json) {
      if (answer !== undefined) await this.printJson(answer);
    } else {
      await this.out(human());
    }
    return EXIT_OK;
  }

  printJson(answer: unknown): Promise<void> {
    return this.out(`${JSON.stringify(answer, null, 2)}\n`);
  }

  /** A spinner on stderr while waiting: only on a terminal, never under --json. */
  spinner(label: string): Spinner {
    return startSpinner(this.io.stderr, label, !this.json && isTerminal(this.io.stderr));
  }

  /** Waits for `work` with a spinner (see `spinner`). */
  async waitFor<T>(label: string, work: Promise<T>): Promise<T> {
    const spinner = this.spinner(label);
    try {
      return await work;
    } finally {
      spinner.stop();
    }
  }

  /** A local file's bytes, or stdin's for `-`. */
  async readLocal(file: string, what: string): Promise<Buffer> {
    if (file === "-") {
      const chunks: Buffer[] = [];
      for await (const chunk of this.io.stdin)
        chunks.push(typeof chunk === "string" ? Buffer.from(chunk) : chunk);
      return Buffer.concat(chunks);
    }
    try {
      return await readFile(file);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code ?? "unreadable";
      throw new LocalError("local.read", `could not read ${what} ${file} (${code})`);
    }
  }
}
