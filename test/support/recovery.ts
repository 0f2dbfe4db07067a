// What the recovery suites share: a `warren serve` of the built CLI on a free port over one
// STATE_ROOT, started, killed with SIGKILL as a crash (its boxes go on) and started again on the
// same state; JSON calls to whichever one runs, and the local provider on that state to see
// the boxes as the next server will.
import type { ChildProcess } from "node:child_process";
import { rm } from "node:fs/promises";
import path from "node:path";
import { LocalProvider } from "../../src/boxes/local/provider.js";
import { freePort, serveOn } from "./serve.js";

interface Crashable {
  /** The local provider on the server's state (the boxes, whichever server runs). */
  provider: LocalProvider;
  /** A JSON request to the server on the port (the loopback operator). */
  call: (method: string, url: string, body?: unknown) => Promise<{ status: number; body: any }>;
  /** Starts a server on the state and port; answers once /health does. */
  start(): Promise<void>;
  /** SIGKILL to the server running: nothing of its stop runs, its boxes go on. */
  crash(): Promise<void>;
  /** Stops the server still running (SIGTERM), removes every box of the state, then the state. */
  close(): Promise<void>;
}

const exited = (child: ChildProcess) =>
  child.exitCode !== null || child.signalCode !== null
    ? Promise.resolve()
    : new Promise<void>((r) => child.once("exit", () => r()));

export async function crashableServe(stateRoot: string): Promise<Crashable> {
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const provider = new LocalProvider({ stateRoot, runRoot: path.join(stateRoot, "run") });
  let child: ChildProcess | undefined;
  const signal = async (sig: NodeJS.Signals) => {
    const c = child;
    child = undefined;
    if (!c || c.exitCode !== null || c.signalCode !== null) return;
    const gone = exited(c);
    c.kill(sig);
    await gone;
  };
  return {
    provider,
    call: async (method, url, body) => {
      const r = await fetch(base + url, {
        method,
        headers: body ? { "content-type": "application/json" } : {},
        body: body ? JSON.stringify(body) : undefined,
      });
      const text = await r.text();
      return { status: r.status, body: text ? JSON.parse(text) : undefined };
    },
    async start() {
      child = await serveOn(stateRoot, port);
    },
    crash: () => signal("SIGKILL"),
    async close() {
      try {
        await signal("SIGTERM");
        for (const b of await provider.list()) await provider.remove(b.id).catch(() => {});
      } finally {
        await rm(stateRoot, { recursive: true, force: true, maxRetries: 3 });
      }
    },
  };
}
