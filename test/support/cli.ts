// What the suites that drive `warren` in-process share: the CLI run on in-memory streams against
// a server (as a person, by the trusted header, when one is named), with its exit code and what
// it printed.
import assert from "node:assert/strict";
import { Readable, Writable } from "node:stream";
import { runCli } from "../../src/cli/run.js";

interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
  /** stdout and stderr together, in the order they were written. */
  output: string;
}

interface CliOptions {
  /** The server's base URL (WARREN_URL); none for commands that need no server. */
  url?: string | undefined;
  /** The person it runs as (WARREN_HEADERS: x-forwarded-email). */
  as?: string;
  /** What stdin holds (default: nothing, already ended). */
  stdin?: string | undefined;
  /** More of its environment (STATE_ROOT, WARREN_ENV_FILE, ...). */
  env?: Record<string, string>;
}

/** Runs `warren ...argv` in this process; answers its exit code and what it printed. */
export async function runWarren(argv: string[], o: CliOptions = {}): Promise<CliRun> {
  const chunks = { stdout: [] as Buffer[], stderr: [] as Buffer[], output: [] as Buffer[] };
  const sink = (into: Buffer[]) =>
    new Writable({
      write(chunk: Buffer, _enc, done) {
        into.push(chunk);
        chunks.output.push(chunk);
        done();
      },
    });
  const code = await runCli(argv, {
    stdout: sink(chunks.stdout),
    stderr: sink(chunks.stderr),
    stdin: Readable.from(o.stdin === undefined ? [] : [Buffer.from(o.stdin)]),
    env: {
      ...(o.url !== undefined ? { WARREN_URL: o.url } : {}),
      ...(o.as !== undefined ? { WARREN_HEADERS: `x-forwarded-email: ${o.as}` } : {}),
      ...o.env,
    },
  });
  const text = (b: Buffer[]) => Buffer.concat(b).toString("utf8");
  return { code, stdout: text(chunks.stdout), stderr: text(chunks.stderr), output: text(chunks.output) };
}

/** Runs `warren ...argv` (which asks for --json itself), asserts it exited 0, and answers its parsed stdout. */
export async function warrenJson(argv: string[], o: CliOptions = {}): Promise<any> {
  const r = await runWarren(argv, o);
  assert.equal(r.code, 0, `${argv.join(" ")}: ${r.stderr}`);
  return JSON.parse(r.stdout);
}
