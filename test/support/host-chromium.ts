// Debian's Chromium on this host, headless, spoken to over its DevTools WebSocket on loopback:
// the parts of the browser service the watch stream uses (state, start, page, touch, stop), for
// tests of the stream and its page on their own. A real browser and the real protocol; only the
// box around it is left out (the box's own tests are the browser service's).
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { WebSocket } from "ws";

interface Session {
  send<T = unknown>(method: string, params?: object): Promise<T>;
  on<P>(event: string, fn: (params: P) => void): () => void;
  close(): void;
  closed: Promise<void>;
}

interface Tab {
  id: string;
  url: string;
  title: string;
  active: boolean;
}

export class HostChromium {
  #proc: ChildProcess | undefined;
  #ws: WebSocket | undefined;
  #dir: string | undefined;
  #next = 1;
  #pending = new Map<number, { resolve: (v: any) => void; reject: (e: Error) => void }>();
  #listeners = new Map<string, Set<(p: any) => void>>();
  #detached = new Map<string, () => void>();
  #active: string | null = null;
  /** How many times the idle timer was restarted. */
  touches = 0;
  /** Whether a start was asked. */
  started = 0;

  async state(_agentId: string): Promise<{ state: "stopped" | "running"; url: string | null; tabs: Tab[] }> {
    if (!this.#ws || this.#ws.readyState !== WebSocket.OPEN) return { state: "stopped", url: null, tabs: [] };
    const { targetInfos } = await this.#send<{
      targetInfos: { targetId: string; type: string; url: string; title: string }[];
    }>(undefined, "Target.getTargets");
    const pages = targetInfos.filter((t) => t.type === "page");
    if (!pages.some((p) => p.targetId === this.#active)) this.#active = pages[0]?.targetId ?? null;
    const tabs = pages.map((p) => ({
      id: p.targetId,
      url: p.url,
      title: p.title,
      active: p.targetId === this.#active,
    }));
    return { state: "running", url: tabs.find((t) => t.active)?.url ?? null, tabs };
  }

  async start(_agentId: string): Promise<void> {
    this.started += 1;
    if (this.#ws) return;
    this.#dir = await mkdtemp(path.join(os.tmpdir(), "warren-host-chromium-"));
    const proc = spawn(
      "/usr/bin/chromium",
      [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        "--disable-background-networking",
        "--remote-debugging-port=0",
        `--user-data-dir=${this.#dir}`,
        "--window-size=800,600",
        "about:blank",
      ],
      { stdio: ["ignore", "ignore", "pipe"] },
    );
    this.#proc = proc;
    const url = await new Promise<string>((resolve, reject) => {
      let err = "";
      proc.stderr.on("data", (b: Buffer) => {
        err += b.toString();
        const m = /DevTools listening on (ws:\/\/\S+)/.exec(err);
        if (m) resolve(m[1]!);
      });
      proc.once("exit", (code) => reject(new Error(`chromium exited (${code}): ${err}`)));
    });
    const ws = new WebSocket(url, { perMessageDeflate: false });
    await new Promise((r, j) => ws.once("open", r).once("error", j));
    ws.on("message", (d: Buffer) => {
      const m = JSON.parse(d.toString());
      if (typeof m.id === "number") {
        const p = this.#pending.get(m.id);
        this.#pending.delete(m.id);
        if (m.error) p?.reject(new Error(m.error.message));
        else p?.resolve(m.result ?? {});
        return;
      }
      if (m.method === "Target.detachedFromTarget") this.#detached.get(m.params.sessionId)?.();
      for (const fn of this.#listeners.get(`${m.sessionId ?? ""}\n${m.method}`) ?? []) fn(m.params);
    });
    ws.on("close", () => {
      for (const done of this.#detached.values()) done();
      for (const p of this.#pending.values()) p.reject(new Error("closed"));
    });
    this.#ws = ws;
  }

  async page(_agentId: string): Promise<Session> {
    await this.state(_agentId);
    const { sessionId } = await this.#send<{ sessionId: string }>(undefined, "Target.attachToTarget", {
      targetId: this.#active,
      flatten: true,
    });
    let done!: () => void;
    const closed = new Promise<void>((r) => (done = r));
    this.#detached.set(sessionId, done);
    return {
      send: (method, params) => this.#send(sessionId, method, params),
      on: (event, fn) => {
        const key = `${sessionId}\n${event}`;
        let set = this.#listeners.get(key);
        if (!set) this.#listeners.set(key, (set = new Set()));
        set.add(fn as (p: any) => void);
        return () => set.delete(fn as (p: any) => void);
      },
      close: () => {
        done();
        void this.#send(undefined, "Target.detachFromTarget", { sessionId }).catch(() => {});
      },
      closed,
    };
  }

  touch(_agentId: string): void {
    this.touches += 1;
  }

  /** Ends the browser (what the service's idle timer or a box stop does). */
  async stop(): Promise<void> {
    const proc = this.#proc;
    this.#ws?.terminate();
    this.#ws = undefined;
    this.#proc = undefined;
    if (proc && proc.exitCode === null) {
      const exited = new Promise((r) => proc.once("exit", r));
      proc.kill("SIGKILL");
      await exited;
    }
    if (this.#dir) await rm(this.#dir, { recursive: true, force: true, maxRetries: 3 });
    this.#dir = undefined;
  }

  #send<T>(sessionId: string | undefined, method: string, params: object = {}): Promise<T> {
    const ws = this.#ws;
    if (!ws || ws.readyState !== WebSocket.OPEN)
      return Promise.reject(new Error("the browser is not running"));
    const id = this.#next++;
    return new Promise<T>((resolve, reject) => {
      this.#pending.set(id, { resolve, reject });
      ws.send(JSON.stringify({ id, method, params, ...(sessionId ? { sessionId } : {}) }));
    });
  }
}
