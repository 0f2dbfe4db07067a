import assert from "node:assert/strict";
import { Readable, Writable } from "node:stream";
import { test } from "node:test";
import type { Run } from "../sdk/index.js";
import { runCli } from "./run.js";
import { isTerminal, startSpinner } from "./spinner.js";

class Sink extends Writable {
  readonly chunks: Buffer[] = [];
  constructor(readonly isTTY = false) {
    super();
  }
  override _write(chunk: Buffer, _enc: BufferEncoding, done: () => void): void {
    this.chunks.push(chunk);
    done();
  }
  get text(): string {
    return Buffer.concat(this.chunks).toString("utf8");
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** A carriage return, an escape or a frame: what a spinner leaves. */
const spun = (text: string) => [..."\r\u001b⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"].some((c) => text.includes(c));

test("the spinner draws frames on the stream and clears its line when stopped", async () => {
  const tty = new Sink(true);
  assert.ok(isTerminal(tty));
  const s = startSpinner(tty, "waiting for run_1", true, { intervalMs: 5, delayMs: 0 });
  for (const deadline = Date.now() + 5000; !tty.text.includes("⠙") && Date.now() < deadline;) await sleep(5);
  s.stop();
  s.stop();
  const text = tty.text;
  assert.ok(text.startsWith("\r⠋ waiting for run_1\r⠙ waiting for run_1"), JSON.stringify(text));
  assert.ok(text.endsWith("\r\u001b[K"));
  assert.equal(text.split("\r\u001b[K").length, 2, "cleared once");
  await sleep(20);
  assert.equal(tty.text, text, "nothing after stop");
});

test("a short wait draws nothing, and a disabled spinner never does", async () => {
  const tty = new Sink(true);
  startSpinner(tty, "quick", true, { delayMs: 50 }).stop();
  const off = new Sink(false);
  const s = startSpinner(off, "never", false, { intervalMs: 1, delayMs: 0 });
  await sleep(60);
  s.stop();
  assert.equal(tty.text, "");
  assert.equal(off.text, "");
  assert.equal(isTerminal(off), false);
});

const run: Run = {
  id: "run_1",
  agent_id: "agt_0123456789abcdef",
  machine_id: "mch_1",
  kind: "command",
  status: "queued",
  status_reason: null,
  argv: ["echo", "hi"],
  exit_code: null,
  signal: null,
  output: "",
  output_truncated: false,
  timeout_s: 60,
  created_at: "c",
  started_at: null,
  ended_at: null,
  receipt: null,
};

/** A server whose run is running at the first look and has succeeded at the next. */
function fakeServer(): typeof fetch {
  let looks = 0;
  return async (input, init) => {
    const url = new URL(input instanceof Request ? input.url : String(input));
    let answer: Run = run;
    if (init?.method === "GET" && url.pathname === "/api/runs/run_1") {
      looks += 1;
      answer =
        looks === 1
          ? { ...run, status: "running" }
          : { ...run, status: "succeeded", exit_code: 0, output: "hi\n", ended_at: "e" };
    }
    return new Response(JSON.stringify(answer), {
      status: 200,
      headers: { "content-type": "application/json" },
    });
  };
}

/** The CLI run against a server (by default a run that waits once, then succeeds), on a terminal or not. */
async function cli(argv: string[], tty: boolean, server: typeof fetch = fakeServer()) {
  const stdout = new Sink(tty);
  const stderr = new Sink(tty);
  const code = await runCli(argv, {
    stdout,
    stderr,
    stdin: Readable.from([]),
    env: { WARREN_URL: "http://127.0.0.1:1" },
    fetch: server,
  });
  return { code, stdout: stdout.text, stderr: stderr.text };
}

test("runs wait and runs start --wait spin on a terminal's stderr, and only there", async () => {
  const onTerminal = await cli(["runs", "wait", "run_1"], true);
  assert.equal(onTerminal.code, 0);
  assert.match(onTerminal.stderr, /^\r⠋ waiting for run_1/);
  assert.ok(onTerminal.stderr.endsWith("\r\u001b[K"));
  assert.match(onTerminal.stdout, /^id +run_1\n/);
  assert.ok(!spun(onTerminal.stdout));

  const piped = await cli(["runs", "wait", "run_1"], false);
  assert.equal(piped.code, 0);
  assert.equal(piped.stderr, "");
  assert.equal(piped.stdout, onTerminal.stdout);

  const json = await cli(["runs", "wait", "run_1", "--json"], true);
  assert.equal(json.stderr, "");
  assert.equal((JSON.parse(json.stdout) as Run).status, "succeeded");

  const started = await cli(["runs", "start", "agt_0123456789abcdef", "--wait", "--", "echo", "hi"], true);
  assert.equal(started.code, 0);
  assert.equal(started.stdout, "hi\n");
  assert.match(started.stderr, /^\r⠋ waiting for run_1/);
  assert.ok(started.stderr.endsWith("\r\u001b[K"));

  for (const tty of [false, true]) {
    const quiet = await cli(
      ["runs", "start", "agt_0123456789abcdef", "--wait", "--json", "--", "echo", "hi"],
      tty,
    );
    assert.equal(quiet.code, 0);
    assert.equal(quiet.stderr, "");
    assert.ok(!spun(quiet.stdout));
    assert.equal((JSON.parse(quiet.stdout) as Run).output, "hi\n");
  }
  const pipedStart = await cli(
    ["runs", "start", "agt_0123456789abcdef", "--wait", "--", "echo", "hi"],
    false,
  );
  assert.equal(pipedStart.stderr, "");
});

/** A server whose box takes a moment to answer an exec, then prints a line and exits 3. */
const slowExec: typeof fetch = async (_input, init) => {
  await sleep(300);
  const exit = { exit_code: 3, signal: null, duration_ms: 5, timed_out: false };
  const streamed = new Headers(init?.headers).get("accept") === "application/x-ndjson";
  const body = streamed
    ? `${JSON.stringify({ stream: "stdout", data: "hi\n" })}\n${JSON.stringify(exit)}\n`
    : JSON.stringify({
        ...exit,
        stdout: "hi\n",
        stderr: "",
        stdout_truncated: false,
        stderr_truncated: false,
      });
  return new Response(body, {
    status: 200,
    headers: { "content-type": streamed ? "application/x-ndjson" : "application/json" },
  });
};

test("exec spins until the command's first output, on a terminal only", async () => {
  const run = (argv: string[], tty: boolean) => cli(argv, tty, slowExec);
  const onTerminal = await run(["exec", "agt_0123456789abcdef", "--", "echo", "hi"], true);
  assert.equal(onTerminal.code, 3);
  assert.equal(onTerminal.stdout, "hi\n");
  assert.match(onTerminal.stderr, /^\r⠋ starting the command in agt_0123456789abcdef's box/);
  assert.ok(onTerminal.stderr.endsWith("\r\u001b[K"));
  const piped = await run(["exec", "agt_0123456789abcdef", "--", "echo", "hi"], false);
  assert.deepEqual(piped, { code: 3, stdout: "hi\n", stderr: "" });
  const json = await run(["exec", "agt_0123456789abcdef", "--json", "--", "echo", "hi"], true);
  assert.equal(json.code, 3);
  assert.equal(json.stderr, "");
  assert.ok(!spun(json.stdout));
  assert.equal((JSON.parse(json.stdout) as { stdout: string }).stdout, "hi\n");
});
