// Watching the agent's browser and taking it over: one screencast per agent (DevTools'
// Page.startScreencast on its active tab, through the browser service) shared by everyone who
// watches it. Frames are JPEG images and nothing else: what a page serves never reaches the
// app's origin as code. Writers (owner, admin, editor) click and type into the same browser,
// each input restarting the machine's idle timer and recorded as theirs (a machine event,
// `browser_input`, counted, the typed text never kept); watchers' input is dropped and they are
// told so; auditors and fenced members are refused, as for terminals.
import { allows, type Access, type Identity } from "../access/index.js";
import type { AgentRow, Agents } from "../agents/service.js";
import {
  BROWSER_FRAME_EVERY_MS,
  BROWSER_FRAME_MAX_EDGE,
  BROWSER_FRAME_QUALITY,
  type BrowserStateView,
  type BrowserWatchInput,
  type BrowserWatchMessage,
} from "../contract/browser-watch.js";
import type { Logger } from "../observability/log.js";
import { schema, type Db } from "../store/index.js";
import { WarrenError } from "../errors.js";
import { sendInput } from "./input.js";
import type { z } from "zod";

export type BrowserStateOut = z.output<typeof BrowserStateView>;
export type WatchInput = z.output<typeof BrowserWatchInput>;
export type WatchMessage = z.output<typeof BrowserWatchMessage>;

/** A DevTools session on one tab (the browser service's CdpSession). */
export interface TabSession {
  send<T = unknown>(method: string, params?: object): Promise<T>;
  on<P>(event: string, fn: (params: P) => void): () => void;
  /** Detaches this session (the tab stays). */
  close(): void;
  closed: Promise<void>;
}

/** What the watch needs of the browser service. */
export interface BrowserDriver {
  state(agentId: string): Promise<BrowserStateOut>;
  start(agentId: string): Promise<unknown>;
  /** The active tab. */
  page(agentId: string): Promise<TabSession>;
  /** Restarts the idle timer of the agent's browser and machine. */
  touch(agentId: string): unknown;
}

export interface Watcher {
  readonly mode: "write" | "watch";
  readonly who: Identity;
  /** A frame (a binary message). */
  frame(jpeg: Buffer): void;
  message(m: WatchMessage): void;
  close(code: number, reason: string): void;
  /** Bytes queued for this watcher and not yet sent. */
  readonly buffered: number;
}

export interface WatchAttachment {
  agent: AgentRow;
  mode: "write" | "watch";
}

export interface BrowserWatchOptions {
  access: Access;
  agents: Pick<Agents, "load">;
  browsers: BrowserDriver;
  db: Db;
  logger: Logger;
  frameEveryMs?: number;
  /** How often the tabs and the browser's state are looked at while someone watches. */
  pollMs?: number;
  /** A writer's inputs are recorded together at most this often. */
  recordEveryMs?: number;
}

/** The close code of a stream that ended normally (the browser stopped) or could not open. */
const CLOSE_ENDED = 1000;
const CLOSE_FAILED = 1011;
/** A watcher with more than this queued skips frames until it drains. */
const MAX_BUFFERED = 2 * 1024 * 1024;
const TOUCH_EVERY_MS = 10_000;

/** An address as a record keeps it: no query, no fragment, no credentials. */
function shortUrl(url: string | null): string | null {
  if (!url) return null;
  try {
    const u = new URL(url);
    return u.protocol === "http:" || u.protocol === "https:" ? `${u.origin}${u.pathname}` : u.protocol;
  } catch {
    return null;
  }
}

/** A writer's inputs not yet recorded. */
interface Tally {
  click: number;
  key: number;
  text: number;
  chars: number;
  scroll: number;
  back: number;
  timer: ReturnType<typeof setTimeout> | undefined;
}

/** What a screencast frame says of the page it shows. */
interface Metadata {
  deviceWidth?: unknown;
  deviceHeight?: unknown;
}

/** One agent's screencast and its watchers. */
class Cast {
  readonly watchers = new Set<Watcher>();
  #session: TabSession | undefined;
  #off: (() => void)[] = [];
  #tab: string | null = null;
  #lastFrame = 0;
  #viewport = "";
  #page = "";
  #poll: ReturnType<typeof setInterval> | undefined;
  ended = false;

  constructor(
    readonly agent: AgentRow,
    private readonly o: BrowserWatchOptions,
    private readonly onEnd: (c: Cast) => void,
  ) {}

  get session(): TabSession | undefined {
    return this.#session;
  }

  get url(): string | null {
    return this.#page ? (JSON.parse(this.#page) as { url: string | null }).url : null;
  }

  async begin(): Promise<void> {
    const s = await this.o.browsers.state(this.agent.id);
    this.#tell(s);
    await this.#castOn(s.tabs.find((t) => t.active)?.id ?? null);
    this.#poll = setInterval(() => void this.#look(), this.o.pollMs ?? 1000);
  }

  add(w: Watcher): void {
    this.watchers.add(w);
    w.message({ type: "attached", mode: w.mode });
    if (this.#viewport) w.message(JSON.parse(this.#viewport) as WatchMessage);
    if (this.#page) w.message(JSON.parse(this.#page) as WatchMessage);
  }

  remove(w: Watcher): void {
    this.watchers.delete(w);
    if (this.watchers.size === 0) this.end(null);
  }

  /** Ends the cast: each watcher is told why (when there is a why) and closed. */
  end(reason: string | null): void {
    if (this.ended) return;
    this.ended = true;
    clearInterval(this.#poll);
    this.#stop();
    for (const w of this.watchers) {
      if (reason) {
        w.message({ type: "ended", reason });
        w.close(CLOSE_ENDED, Buffer.byteLength(reason) <= 123 ? reason : "the browser stream ended");
      }
    }
    this.watchers.clear();
    this.onEnd(this);
  }

  #stop(): void {
    for (const off of this.#off) off();
    this.#off = [];
    const s = this.#session;
    this.#session = undefined;
    if (s)
      void s.send("Page.stopScreencast").then(
        () => s.close(),
        () => s.close(),
      );
  }

  async #castOn(tab: string | null): Promise<void> {
    this.#stop();
    this.#tab = tab;
    const s = await this.o.browsers.page(this.agent.id);
    if (this.ended) return;
    this.#session = s;
    const every = this.o.frameEveryMs ?? BROWSER_FRAME_EVERY_MS;
    this.#off.push(
      s.on("Page.screencastFrame", (p: { data: string; sessionId: number; metadata?: Metadata }) => {
        if (this.#session !== s) return;
        const m: Metadata = p.metadata ?? {};
        if (typeof m.deviceWidth === "number" && typeof m.deviceHeight === "number") {
          const v = JSON.stringify({ type: "viewport", width: m.deviceWidth, height: m.deviceHeight });
          if (v !== this.#viewport) {
            this.#viewport = v;
            for (const w of this.watchers) w.message(JSON.parse(v) as WatchMessage);
          }
        }
        const jpeg = Buffer.from(p.data, "base64");
        for (const w of this.watchers) if (w.buffered < MAX_BUFFERED) w.frame(jpeg);
        // the next frame comes only after this one's ack: acking late bounds the rate
        const wait = Math.max(0, this.#lastFrame + every - Date.now());
        setTimeout(() => {
          this.#lastFrame = Date.now();
          if (this.#session === s)
            void s.send("Page.screencastFrameAck", { sessionId: p.sessionId }).catch(() => {});
        }, wait);
      }),
      s.on("Page.frameNavigated", () => void this.#look()),
    );
    void s.closed.then(() => {
      if (this.#session === s) void this.#look(true);
    });
    await s.send("Page.enable").catch(() => {});
    await s.send("Page.startScreencast", {
      format: "jpeg",
      quality: BROWSER_FRAME_QUALITY,
      maxWidth: BROWSER_FRAME_MAX_EDGE,
      maxHeight: BROWSER_FRAME_MAX_EDGE,
      everyNthFrame: 1,
    });
  }

  /** The browser's state again: tabs told when they change, the cast moved to a new active tab. */
  async #look(sessionGone = false): Promise<void> {
    if (this.ended) return;
    let s: BrowserStateOut;
    try {
      s = await this.o.browsers.state(this.agent.id);
    } catch (err) {
      this.o.logger.warn({ err, agentId: this.agent.id }, "the browser's state could not be read");
      return;
    }
    if (this.ended) return;
    if (s.state === "stopped") return this.end("the agent's browser stopped");
    this.#tell(s);
    const active = s.tabs.find((t) => t.active)?.id ?? null;
    if (s.state === "running" && (sessionGone || active !== this.#tab)) {
      try {
        await this.#castOn(active);
      } catch (err) {
        this.o.logger.warn({ err, agentId: this.agent.id }, "the browser's active tab could not be cast");
        if (sessionGone) this.end("the agent's browser went away");
      }
    }
  }

  #tell(s: BrowserStateOut): void {
    const page = JSON.stringify({ type: "page", url: s.url, tabs: s.tabs });
    if (page === this.#page) return;
    this.#page = page;
    for (const w of this.watchers) w.message(JSON.parse(page) as WatchMessage);
  }
}

export class BrowserWatches {
  readonly #o: BrowserWatchOptions;
  readonly #casts = new Map<string, Cast>();
  readonly #starting = new Map<string, Promise<Cast>>();
  readonly #tallies = new Map<Watcher, Tally>();
  readonly #touched = new Map<string, number>();
  /** The input being sent to each agent's browser (the next waits for it). */
  readonly #queue = new Map<string, Promise<void>>();

  constructor(o: BrowserWatchOptions) {
    this.#o = o;
  }

  /** Who may see the browser: 404 for an unknown agent, 403 for an auditor or a fenced member. */
  async authorize(who: Identity, agentId: string): Promise<WatchAttachment> {
    const agent = await this.#o.agents.load(who, agentId, "inspect");
    // the browser holds the agent's logins: never inside an area, not even to watch
    await this.#o.access.requireUnfenced(agent.orgId, who);
    const role = await this.#o.access.roleIn(agent.orgId, who);
    return { agent, mode: role && allows(role, "write") ? "write" : "watch" };
  }

  /** GET /api/agents/:id/browser. */
  async state(who: Identity, agentId: string): Promise<BrowserStateOut> {
    const a = await this.authorize(who, agentId);
    return this.#o.browsers.state(a.agent.id);
  }

  /**
   * After the upgrade: the watcher joins the agent's screencast. A writer starts the browser
   * (and its machine) if it is not running; a watcher finds it running or is told there is none.
   */
  async open(a: WatchAttachment, w: Watcher): Promise<boolean> {
    try {
      const s = await this.#o.browsers.state(a.agent.id);
      if (s.state === "stopped") {
        if (a.mode !== "write") {
          const reason = "no browser is running for this agent; an owner, admin or editor starts it";
          w.message({ type: "ended", reason });
          w.close(CLOSE_ENDED, reason);
          return false;
        }
        await this.#o.browsers.start(a.agent.id);
      }
      const cast = await this.#castOf(a.agent);
      cast.add(w);
      if (a.mode === "write") this.#touch(a.agent.id);
      return true;
    } catch (err) {
      const e = err instanceof WarrenError ? err : null;
      if (!e) this.#o.logger.error({ err, agentId: a.agent.id }, "the browser stream could not be opened");
      const message = e ? e.message : "internal error; the server log has the details";
      w.message({ type: "error", code: e ? e.code : "internal", message });
      w.close(
        CLOSE_FAILED,
        Buffer.byteLength(message) <= 123 ? message : "the browser stream could not be opened",
      );
      return false;
    }
  }

  /** A watcher left. */
  leave(a: WatchAttachment, w: Watcher): void {
    this.#flush(a, w);
    this.#casts.get(a.agent.id)?.remove(w);
  }

  /**
   * One input of a watcher: sent to the active tab for a writer, dropped (and said) otherwise.
   * Inputs to one agent's browser are sent one after another, in the order they came.
   */
  input(a: WatchAttachment, w: Watcher, m: WatchInput): Promise<void> {
    const prev = this.#queue.get(a.agent.id) ?? Promise.resolve();
    const next = prev.then(() => this.#input(a, w, m));
    this.#queue.set(a.agent.id, next);
    void next.finally(() => {
      if (this.#queue.get(a.agent.id) === next) this.#queue.delete(a.agent.id);
    });
    return next;
  }

  async #input(a: WatchAttachment, w: Watcher, m: WatchInput): Promise<void> {
    if (w.mode !== "write") {
      w.message({
        type: "dropped",
        reason: "your role in this organisation watches the agent's browser; your input is not sent",
      });
      return;
    }
    const s = this.#casts.get(a.agent.id)?.session;
    if (!s) {
      w.message({ type: "dropped", reason: "the browser's page is not there yet" });
      return;
    }
    try {
      await sendInput(s, m);
    } catch (err) {
      w.message({
        type: "error",
        code: "browser.input_failed",
        message: `the browser did not take the input: ${err instanceof Error ? err.message : String(err)}`,
      });
      return;
    }
    this.#touch(a.agent.id);
    this.#count(a, w, m);
  }

  /** Ends every stream (the server stops). */
  close(reason = "the server stopped"): void {
    for (const c of [...this.#casts.values()]) c.end(reason);
  }

  async #castOf(agent: AgentRow): Promise<Cast> {
    const live = this.#casts.get(agent.id);
    if (live && !live.ended) return live;
    const pending = this.#starting.get(agent.id);
    if (pending) return pending;
    const cast = new Cast(agent, this.#o, (c) => {
      if (this.#casts.get(c.agent.id) === c) this.#casts.delete(c.agent.id);
    });
    const begin = cast.begin().then(() => {
      this.#casts.set(agent.id, cast);
      return cast;
    });
    this.#starting.set(agent.id, begin);
    try {
      return await begin;
    } catch (err) {
      cast.end(null);
      throw err;
    } finally {
      this.#starting.delete(agent.id);
    }
  }

  #touch(agentId: string): void {
    const now = Date.now();
    if (now - (this.#touched.get(agentId) ?? 0) < TOUCH_EVERY_MS) return;
    this.#touched.set(agentId, now);
    void Promise.resolve(this.#o.browsers.touch(agentId)).catch(() => {});
  }

  #count(a: WatchAttachment, w: Watcher, m: WatchInput): void {
    let t = this.#tallies.get(w);
    if (!t) {
      t = { click: 0, key: 0, text: 0, chars: 0, scroll: 0, back: 0, timer: undefined };
      this.#tallies.set(w, t);
    }
    t[m.type] += 1;
    if (m.type === "text") t.chars += [...m.text].length;
    t.timer ??= setTimeout(() => this.#flush(a, w), this.#o.recordEveryMs ?? 5000);
  }

  /** Records a writer's inputs since the last record, as theirs, on the agent's machine. */
  #flush(a: WatchAttachment, w: Watcher): void {
    const t = this.#tallies.get(w);
    if (!t) return;
    this.#tallies.delete(w);
    clearTimeout(t.timer);
    const url = shortUrl(this.#casts.get(a.agent.id)?.url ?? null);
    const parts = [
      t.click && `${t.click} click(s)`,
      t.key && `${t.key} key(s)`,
      t.text && `${t.chars} typed character(s)`,
      t.scroll && `${t.scroll} scroll(s)`,
      t.back && `${t.back} back`,
    ].filter(Boolean);
    void this.#o.db
      .insert(schema.machineEvents)
      .values({
        machineId: a.agent.machineId,
        type: "browser_input",
        detail: `${w.who.email} used the browser of agent ${a.agent.id}: ${parts.join(", ")}${url ? ` on ${url}` : ""}`,
        data: {
          agent_id: a.agent.id,
          user_id: w.who.userId,
          email: w.who.email,
          clicks: t.click,
          keys: t.key,
          texts: t.text,
          characters: t.chars,
          scrolls: t.scroll,
          backs: t.back,
          url,
        },
      })
      .catch((err: unknown) =>
        this.#o.logger.error(
          { err, agentId: a.agent.id },
          "an operator's browser input could not be recorded",
        ),
      );
  }
}
