// The agents' browsers: one headless Chromium per agent, started in its box as the agent
// through the door (src/workloads) like every command of the agent, its profile in the home
// (/home/<agent id>/.browser, kept across box restarts and counted against the home's cap),
// its traffic through the agent's egress proxy (--proxy-server, loopback included, so every
// connection is decided and recorded), and its DevTools endpoint on the loopback of the box at
// the last port of the agent's block: the server reaches it only through boxd's forward, never
// a port on the host; an isolated machine's walls keep the other agents off that port.
// --no-sandbox: Chromium's own sandbox needs namespaces a box does not give again; the box is
// the wall around the browser, as around every command of the agent.
import type { Logger } from "../observability/log.js";
import type { EventBus } from "../events/index.js";
import type { MachineRuntime } from "../runtime/index.js";
import type { Workload, Workloads } from "../workloads/index.js";
import { homeOf, portsOf } from "../machines/placement.js";
import { BOX_BRIDGES } from "../boxes/index.js";
import { WarrenError } from "../errors.js";
import { CdpConnection, CdpError, type CdpSession } from "./cdp.js";
import { devtoolsUrl } from "./devtools.js";

export type { CdpSession } from "./cdp.js";

export interface BrowserTab {
  id: string;
  url: string;
  title: string;
  active: boolean;
}

export interface BrowserState {
  state: "stopped" | "starting" | "running";
  url: string | null;
  tabs: BrowserTab[];
}

/** Chromium itself, not Debian's wrapper script (which reads the host's /etc/chromium.d). */
const CHROMIUM = "/usr/lib/chromium/chromium";
/** The profile's folder in the home. */
const PROFILE_DIR = ".browser";
/** Where downloads land in the home (under the home's cap). */
const DOWNLOADS_DIR = "downloads";
/** The longest the browser takes to answer on its DevTools port after its start. */
const START_TIMEOUT_MS = 30_000;

export interface BrowsersOptions {
  workloads: Pick<Workloads, "openAgent">;
  runtime: Pick<MachineRuntime, "forward" | "touch">;
  events: Pick<EventBus, "on">;
  logger: Logger;
  /** A browser not used for this long is stopped (the box's idle time): its box may then idle. */
  idleMs: number;
  /** Where Chromium is in the box (the host's /usr on `local`). */
  chromium?: string;
}

interface TargetInfo {
  targetId: string;
  type: string;
  url: string;
  title: string;
  openerId?: string;
}

/** One agent's running (or starting) browser. */
class Running {
  state: "starting" | "running" = "starting";
  conn: CdpConnection | null = null;
  readonly targets = new Map<string, TargetInfo>();
  active: string | null = null;
  lastUse = Date.now();
  /** Why the browser ended, once it did. */
  ended: string | null = null;
  /** Asked to close (Browsers.stop): ended once it has. */
  stopping = false;
  /** Settles once its process ended. */
  exited: Promise<unknown> = Promise.resolve();
  readonly stderr: string[] = [];
  /** Tabs that crashed (their renderer was killed), with why. */
  readonly crashed = new Map<string, string>();
  /** Downloads the pages began: their file names and states. */
  readonly downloads = new Map<string, { file: string; state: string }>();

  constructor(
    readonly agentId: string,
    readonly machineId: string,
    readonly port: number,
    readonly abort: AbortController,
    readonly work: Workload,
  ) {}
}

export class Browsers {
  readonly #o: BrowsersOptions;
  readonly #live = new Map<string, Running>();
  readonly #starting = new Map<string, Promise<Running>>();
  #timer: NodeJS.Timeout | undefined;

  constructor(o: BrowsersOptions) {
    this.#o = o;
    o.events.on("box.stopped", ({ machineId, reason }) => {
      for (const r of this.#live.values())
        if (r.machineId === machineId) this.#end(r, `the box stopped: ${reason}`);
    });
    // a deleted agent's browser goes with it
    o.events.on("agent.deleted", ({ agentId }) => this.stop(agentId, "the agent was deleted"));
    this.#timer = setInterval(() => this.#reap(), Math.max(250, Math.min(10_000, o.idleMs / 4)));
    this.#timer.unref();
  }

  /** The agent's browser as it is now; a stopped browser has no tabs. */
  async state(agentId: string): Promise<BrowserState> {
    const r = this.#live.get(agentId);
    // a browser asked to close is told as stopped from then on (its tabs are closing)
    if (!r || r.ended || r.stopping) return { state: "stopped", url: null, tabs: [] };
    if (r.state === "starting" || !r.conn) return { state: "starting", url: null, tabs: [] };
    const tabs = this.tabs(agentId);
    return { state: "running", url: tabs.find((t) => t.active)?.url ?? null, tabs };
  }

  /** The tabs of a running browser, as last told by it (empty when none runs). */
  tabs(agentId: string): BrowserTab[] {
    const r = this.#live.get(agentId);
    if (!r || r.state !== "running") return [];
    return [...r.targets.values()]
      .filter((t) => t.type === "page")
      .map((t) => ({ id: t.targetId, url: t.url, title: t.title, active: t.targetId === r.active }));
  }

  /** The active tab's URL as last told by the browser (null: no browser, or no tab). */
  currentUrl(agentId: string): string | null {
    const r = this.#live.get(agentId);
    const t = r?.active ? r.targets.get(r.active) : undefined;
    return t?.url ?? null;
  }

  /** Starts the agent's browser (and wakes its box) if it is not running; one per agent. */
  async start(agentId: string): Promise<void> {
    await this.#running(agentId);
  }

  /** A DevTools session attached to the active tab (a new blank tab when there is none). */
  async page(agentId: string): Promise<CdpSession> {
    const r = await this.#running(agentId);
    const conn = r.conn;
    if (!conn) throw new WarrenError("box.unavailable", "the browser is not running");
    let target = r.active && r.targets.has(r.active) ? r.active : null;
    // a crashed tab is closed: the next call gets a fresh one
    if (target && r.crashed.has(target)) {
      await conn.browser.send("Target.closeTarget", { targetId: target }).catch(() => {});
      r.targets.delete(target);
      target = null;
    }
    if (!target) {
      const made = await conn.browser.send<{ targetId: string }>("Target.createTarget", {
        url: "about:blank",
      });
      target = made.targetId;
      r.active = target;
    }
    const { sessionId } = await conn.browser.send<{ sessionId: string }>("Target.attachToTarget", {
      targetId: target,
      flatten: true,
    });
    return conn.session(sessionId);
  }

  /** Makes a tab the active one (a tool's choice, or a pop-up's opening). */
  activate(agentId: string, targetId: string): void {
    const r = this.#live.get(agentId);
    if (r?.targets.has(targetId)) r.active = targetId;
  }

  /** Why a tab crashed, if it did (its renderer was killed: the box's memory limit, mostly). */
  crashOf(agentId: string, targetId: string): string | undefined {
    return this.#live.get(agentId)?.crashed.get(targetId);
  }

  /** Why the agent's browser ended, if it did since its start. */
  endedWhy(agentId: string): string | null {
    return this.#live.get(agentId)?.ended ?? null;
  }

  /** The downloads its pages began since the browser started. */
  downloads(agentId: string): { file: string; state: string }[] {
    return [...(this.#live.get(agentId)?.downloads.values() ?? [])];
  }

  /** Keeps the box awake: restarts the browser's and the machine's idle timers. */
  touch(agentId: string): void {
    const r = this.#live.get(agentId);
    if (!r) return;
    r.lastUse = Date.now();
    this.#o.runtime.touch(r.machineId);
  }

  /**
   * Stops the agent's browser (nothing when none runs): asked to close first, so that its
   * profile (cookies) is written whole, then ended.
   */
  async stop(agentId: string, why = "stopped"): Promise<void> {
    const r = this.#live.get(agentId);
    if (!r) return;
    r.stopping = true;
    if (r.conn?.isOpen) {
      await r.conn.browser.send("Browser.close").catch(() => {});
      await Promise.race([r.exited, new Promise((res) => setTimeout(res, 10_000))]);
    }
    this.#end(r, why);
  }

  /** Stops every browser (the server stops). */
  close(): void {
    if (this.#timer) clearInterval(this.#timer);
    for (const r of [...this.#live.values()]) this.#end(r, "the server stopped");
  }

  #reap(): void {
    const now = Date.now();
    for (const r of [...this.#live.values()])
      if (r.state === "running" && now - r.lastUse >= this.#o.idleMs)
        void this.stop(r.agentId, `not used for ${Math.round(this.#o.idleMs / 1000)} s`);
  }

  #end(r: Running, why: string): void {
    r.ended ??= why;
    if (this.#live.get(r.agentId) === r) this.#live.delete(r.agentId);
    r.conn?.close();
    r.abort.abort();
  }

  async #running(agentId: string): Promise<Running> {
    const live = this.#live.get(agentId);
    if (live && !live.ended && live.state === "running" && live.conn?.isOpen) {
      this.touch(agentId);
      return live;
    }
    if (live) this.#end(live, "its DevTools connection closed");
    const pending = this.#starting.get(agentId);
    if (pending) return pending;
    const start = this.#launch(agentId);
    this.#starting.set(agentId, start);
    try {
      return await start;
    } finally {
      this.#starting.delete(agentId);
    }
  }

  async #launch(agentId: string): Promise<Running> {
    const work = await this.#o.workloads.openAgent(agentId);
    await work.ready();
    const agent = work.agent;
    const port = portsOf(agent.slot).last;
    const home = homeOf(agent.id);
    const r = new Running(agent.id, agent.machineId, port, new AbortController(), work);
    this.#live.set(agent.id, r);
    const argv = [
      this.#o.chromium ?? CHROMIUM,
      "--headless",
      "--no-sandbox",
      "--disable-dev-shm-usage",
      "--disable-gpu",
      "--no-first-run",
      "--no-default-browser-check",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
      "--disable-quic",
      "--password-store=basic",
      `--user-data-dir=${home}/${PROFILE_DIR}`,
      `--remote-debugging-address=127.0.0.1`,
      `--remote-debugging-port=${port}`,
      `--proxy-server=http://127.0.0.1:${BOX_BRIDGES.egress}`,
      // loopback too goes through the proxy: the box's loopback is nobody's site
      "--proxy-bypass-list=<-loopback>",
      "--window-size=1280,800",
      "about:blank",
    ];
    const exited = work
      .exec(
        { argv, timeoutMs: 7 * 24 * 3600 * 1000, shownAs: ["chromium"] },
        {
          signal: r.abort.signal,
          onStderr: (c) => {
            r.stderr.push(c.toString("utf8"));
            while (r.stderr.length > 20) r.stderr.shift();
          },
        },
      )
      .then(
        (res) =>
          res.cancelled
            ? "stopped"
            : `the browser ended (${res.signal ? `signal ${res.signal}` : `exit code ${res.exitCode}`}${res.signal === "SIGKILL" ? ": killed, most likely by the box's memory limit" : ""})`,
        (err: unknown) => `the browser could not run: ${err instanceof Error ? err.message : String(err)}`,
      )
      .then((why) => {
        this.#end(r, why);
        return why;
      });
    r.exited = exited;
    try {
      const url = await this.#waitForEndpoint(r, exited);
      const conn = await CdpConnection.open(url, await this.#o.runtime.forward(r.machineId, port));
      r.conn = conn;
      // a closed connection ends the browser, but a closing browser is let finish writing its profile
      void conn.closed.then(() =>
        setTimeout(() => this.#end(r, r.ended ?? "its DevTools connection closed"), 10_000).unref(),
      );
      this.#follow(r, conn);
      await conn.browser.send("Target.setDiscoverTargets", { discover: true });
      await conn.browser.send("Browser.setDownloadBehavior", {
        behavior: "allow",
        downloadPath: `${home}/${DOWNLOADS_DIR}`,
        eventsEnabled: true,
      });
      const { targetInfos } = await conn.browser.send<{ targetInfos: TargetInfo[] }>("Target.getTargets");
      for (const t of targetInfos) r.targets.set(t.targetId, t);
      r.active = targetInfos.find((t) => t.type === "page")?.targetId ?? null;
      if (r.ended) throw new WarrenError("box.unavailable", r.ended);
      r.state = "running";
      r.lastUse = Date.now();
      return r;
    } catch (err) {
      this.#end(r, r.ended ?? "it did not start");
      if (err instanceof WarrenError) throw err;
      const tail = r.stderr.join("").slice(-500).trim();
      throw new WarrenError(
        "box.unavailable",
        `the browser did not start: ${err instanceof Error ? err.message : String(err)}${tail ? ` (it said: ${tail})` : ""}`,
      );
    }
  }

  /** The browser's WebSocket URL, once its DevTools port answers (or why it never will). */
  async #waitForEndpoint(r: Running, exited: Promise<string>): Promise<string> {
    const deadline = Date.now() + START_TIMEOUT_MS;
    let last = "";
    for (let wait = 50; Date.now() < deadline; wait = Math.min(wait * 2, 500)) {
      if (r.ended) throw new WarrenError("box.unavailable", `the browser did not start: ${r.ended}`);
      try {
        return await devtoolsUrl(() => this.#o.runtime.forward(r.machineId, r.port), r.port);
      } catch (err) {
        last = err instanceof Error ? err.message : String(err);
      }
      await Promise.race([new Promise((res) => setTimeout(res, wait)), exited]);
    }
    throw new CdpError(`its DevTools port did not answer within ${START_TIMEOUT_MS / 1000} s: ${last}`);
  }

  /** Keeps the tabs as the browser tells them. */
  #follow(r: Running, conn: CdpConnection): void {
    const b = conn.browser;
    const put = (t: TargetInfo) => {
      r.targets.set(t.targetId, t);
      // a pop-up opened by the active tab becomes the active one, as a person would see it
      if (t.type === "page" && t.openerId && t.openerId === r.active && !r.targets.get(t.targetId)?.url)
        r.active = t.targetId;
    };
    b.on("Target.targetCreated", (p: { targetInfo: TargetInfo }) => {
      const fresh = !r.targets.has(p.targetInfo.targetId);
      r.targets.set(p.targetInfo.targetId, p.targetInfo);
      if (fresh && p.targetInfo.type === "page" && (!r.active || p.targetInfo.openerId === r.active))
        r.active = p.targetInfo.targetId;
    });
    b.on("Target.targetInfoChanged", (p: { targetInfo: TargetInfo }) => put(p.targetInfo));
    b.on("Target.targetDestroyed", (p: { targetId: string }) => {
      r.targets.delete(p.targetId);
      if (r.active === p.targetId)
        r.active = [...r.targets.values()].filter((t) => t.type === "page").at(-1)?.targetId ?? null;
    });
    b.on("Target.targetCrashed", (p: { targetId: string; status?: string; errorCode?: number }) => {
      r.crashed.set(
        p.targetId,
        `the page's renderer was ended (${p.status ?? "crashed"}${p.errorCode !== undefined ? `, code ${p.errorCode}` : ""}): most likely it went past the box's memory limit`,
      );
    });
    b.on("Browser.downloadWillBegin", (p: { guid: string; suggestedFilename: string }) =>
      r.downloads.set(p.guid, { file: `${DOWNLOADS_DIR}/${p.suggestedFilename}`, state: "inProgress" }),
    );
    b.on("Browser.downloadProgress", (p: { guid: string; state: string }) => {
      const d = r.downloads.get(p.guid);
      if (d) d.state = p.state;
    });
  }
}
