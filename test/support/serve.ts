// What tests that start a real `warren serve` share: the built CLI, a free loopback port, and
// the server itself started and stopped.
import { spawn, type ChildProcess } from "node:child_process";
import net from "node:net";
import path from "node:path";
import { fileURLToPath } from "node:url";

// a readiness wait, not a timing: a `warren serve` starting on a 2-core host that other work
// keeps busy has taken over a minute to answer /health (PGlite's first start, the migrations)
const SERVE_READY_MS = 180_000;

export const builtCli = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../dist/cli/main.js");

/** A loopback port nothing listens on right now. */
export const freePort = () =>
  new Promise<number>((resolve) => {
    const s = net.createServer();
    s.listen(0, "127.0.0.1", () => {
      const p = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(p));
    });
  });

/** An answer of the API. */
export interface Answer {
  status: number;
  /** The body as JSON, when it is JSON. */
  body: any;
  text: string;
}

/** A `warren serve --stop-boxes` of the built CLI, running for a test. */
export interface Served {
  base: string;
  /** The API as the person `as` (the trusted header): a body is JSON, or sent as is with `type`. */
  call(
    method: string,
    url: string,
    body: object | string | undefined,
    o: { as: string; type?: string },
  ): Promise<Answer>;
  /** What it printed so far (for a failure's message). */
  log(): string;
  /** SIGTERM (SIGKILL after 20 s); it stops the boxes still running. */
  stop(): Promise<void>;
  /** SIGKILL, as a crash: nothing of its stop runs, its boxes go on (the next server adopts them). */
  kill(): Promise<void>;
}

/**
 * Starts the built CLI's server on a free loopback port in trusted-header mode, and waits
 * until /health answers (it fails with the server's output if it exits or never does).
 */
export async function startServe(o: { stateRoot: string; env?: Record<string, string> }): Promise<Served> {
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const child = spawn(process.execPath, [builtCli, "serve", "--stop-boxes"], {
    cwd: path.resolve(path.dirname(builtCli), "../.."),
    env: {
      PATH: process.env.PATH ?? "/usr/bin:/bin",
      HOME: process.env.HOME ?? "/root",
      STATE_ROOT: o.stateRoot,
      WARREN_HOST: "127.0.0.1",
      WARREN_PORT: String(port),
      WARREN_PREVIEW_PORT: "0",
      AUTH_MODE: "trusted-header",
      LOG_LEVEL: "warn",
      WARREN_SHUTDOWN_GRACE_S: "1",
      ...o.env,
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let log = "";
  child.stdout?.setEncoding("utf8").on("data", (c: string) => (log += c));
  child.stderr?.setEncoding("utf8").on("data", (c: string) => (log += c));
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null || !child.pid) return;
    const exited = new Promise((r) => child.once("exit", r));
    process.kill(child.pid, "SIGTERM");
    const timer = setTimeout(() => child.pid && process.kill(child.pid, "SIGKILL"), 20_000);
    await exited;
    clearTimeout(timer);
  };
  const deadline = Date.now() + SERVE_READY_MS;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`warren serve exited:\n${log}`);
    const ok = await fetch(`${base}/health`).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) break;
    if (Date.now() > deadline) {
      await stop();
      throw new Error(`warren serve never became healthy:\n${log}`);
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  const kill = async () => {
    if (child.exitCode !== null || child.signalCode !== null || !child.pid) return;
    const exited = new Promise((r) => child.once("exit", r));
    process.kill(child.pid, "SIGKILL");
    await exited;
  };
  const call: Served["call"] = async (method, url, body, o) => {
    const r = await fetch(`${base}${url}`, {
      method,
      headers: {
        "x-forwarded-email": o.as,
        ...(body === undefined ? {} : { "content-type": o.type ?? "application/json" }),
      },
      body: body === undefined ? undefined : o.type && typeof body === "string" ? body : JSON.stringify(body),
    });
    const text = await r.text();
    let json: unknown = undefined;
    try {
      json = text ? JSON.parse(text) : undefined;
    } catch {
      // not JSON: the text is the answer
    }
    return { status: r.status, body: json, text };
  };
  return { base, log: () => log, stop, kill, call };
}

/**
 * `warren serve` of the built CLI on `port` with this process's environment (the default
 * auth mode: the loopback operator), once /health answers: for tests that kill it (SIGKILL)
 * and start another on the same state, with the boxes left running in between.
 */
export async function serveOn(stateRoot: string, port: number): Promise<ChildProcess> {
  const child = spawn(process.execPath, [builtCli, "serve"], {
    env: {
      ...process.env,
      STATE_ROOT: stateRoot,
      WARREN_PORT: String(port),
      WARREN_PREVIEW_PORT: "0",
      LOG_LEVEL: "warn",
      BOX_IDLE_S: "3600",
    },
    stdio: ["ignore", "ignore", "inherit"],
  });
  const deadline = Date.now() + SERVE_READY_MS;
  while (Date.now() < deadline) {
    const ok = await fetch(`http://127.0.0.1:${port}/health`).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) return child;
    if (child.exitCode !== null) throw new Error(`warren serve exited with ${child.exitCode}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  child.kill("SIGKILL");
  throw new Error("warren serve did not become healthy");
}
