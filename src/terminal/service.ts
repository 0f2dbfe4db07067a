// The agents' terminals: one shared shell per agent, in its home on its machine, as the agent,
// reached only through boxd's socket. Writers (owner, admin, editor) type into it; viewers
// watch it; auditors are refused. It lives until its shell exits or the box stops. Its shell
// holds no secret, but what it prints is redacted of every value that reaches the agent: those
// it had when the terminal opened, those found on each attach, those it stores meanwhile.
import { allows, type Access, type Identity } from "../access/index.js";
import type { AgentRow, Agents } from "../agents/service.js";
import { TERMINAL_SCROLLBACK_BYTES } from "../contract/terminal.js";
import { WarrenError } from "../errors.js";
import type { Logger } from "../observability/log.js";
import type { MachineRuntime } from "../runtime/index.js";
import type { Workloads } from "../workloads/index.js";
import { CLOSE_ENDED, TerminalSession, type Viewer, type ViewerMode } from "./session.js";
import type { EventBus } from "../events/index.js";

/** The agent's login shell (the box's /etc/passwd gives every agent /bin/bash). */
export const LOGIN_SHELL = ["/bin/bash", "-l"];
/** Terminal input restarts the machine's idle timer at most this often. */
export const TOUCH_EVERY_MS = 30_000;
/** The close code of a terminal that could not be opened after the upgrade. */
const CLOSE_FAILED = 1011;

export interface TerminalsOptions {
  access: Access;
  agents: Pick<Agents, "load">;
  /** The agents' door: a terminal is opened through it, its output redacted there. */
  workloads: Workloads;
  runtime: Pick<MachineRuntime, "touch">;
  /** A box that stops ends the terminals in it (box.stopped). */
  events: Pick<EventBus, "on">;
  logger: Logger;
  scrollbackBytes?: number;
  touchEveryMs?: number;
}

/** Who may do what on one agent's terminal, checked before the WebSocket opens. */
export interface Attachment {
  agent: AgentRow;
  mode: ViewerMode;
  /** A command of this connection's own instead of the shared shell. */
  argv: string[] | undefined;
  cols: number;
  rows: number;
}

export class Terminals {
  readonly #o: TerminalsOptions;
  /** The shared shells, by agent id. */
  readonly #shared = new Map<string, TerminalSession>();
  readonly #starting = new Map<string, Promise<TerminalSession>>();
  /** Commands of one connection each. */
  readonly #own = new Set<TerminalSession>();

  constructor(o: TerminalsOptions) {
    this.#o = o;
    o.events.on("box.stopped", ({ machineId, reason }) => {
      for (const s of [...this.#shared.values(), ...this.#own])
        if (s.machineId === machineId) s.end(`the machine stopped: ${reason}`);
    });
    // a deleted agent's shells go with it
    o.events.on("agent.deleted", ({ agentId }) => this.endAgent(agentId, "the agent was deleted"));
  }

  /** Ends the agent's terminals, shared and its own (the agent is deleted, or moves). */
  endAgent(agentId: string, reason: string): void {
    for (const s of [...this.#shared.values(), ...this.#own]) if (s.agentId === agentId) s.end(reason);
  }

  /** POST /cli: the agent's shared shell, started (with its machine) if it is not running. */
  async start(who: Identity, agentId: string): Promise<void> {
    const agent = await this.#o.agents.load(who, agentId, "write");
    await this.#sharedOf(agent, 80, 24);
  }

  /** The upgrade's checks: 404 for an unknown agent, 403 for an auditor, a role's mode. */
  async authorize(
    who: Identity,
    agentId: string,
    q: { cols?: number | undefined; rows?: number | undefined; argv?: string | string[] | undefined },
  ): Promise<Attachment> {
    const agent = await this.#o.agents.load(who, agentId, "inspect");
    // the shared shell sees the whole home: never inside an area, not even to watch
    await this.#o.access.requireUnfenced(agent.orgId, who);
    const role = await this.#o.access.roleIn(agent.orgId, who);
    const mode: ViewerMode = role && allows(role, "write") ? "write" : "watch";
    const argv = q.argv === undefined ? undefined : Array.isArray(q.argv) ? q.argv : [q.argv];
    if (argv && mode !== "write")
      throw new WarrenError(
        "access.denied",
        `your role in this organisation is ${role ?? "none"}, which can watch the agent's terminal but not run a command in it`,
      );
    return { agent, mode, argv, cols: q.cols ?? 80, rows: q.rows ?? 24 };
  }

  /**
   * After the upgrade: the viewer joins the shared shell (a writer starts it if needed; a
   * watcher finds it running or is told there is none), or gets a command of its own.
   * Whatever fails is told to the viewer, which is then closed.
   */
  async open(a: Attachment, viewer: Viewer): Promise<TerminalSession | null> {
    try {
      let session: TerminalSession | undefined;
      if (a.argv) {
        session = await this.#startSession(a.agent, {
          shared: false,
          argv: a.argv,
          cols: a.cols,
          rows: a.rows,
        });
      } else if (a.mode === "write") {
        session = await this.#sharedOf(a.agent, a.cols, a.rows);
      } else {
        session = this.#shared.get(a.agent.id);
        if (!session || session.ended) {
          const reason = "no terminal is running for this agent; an owner, admin or editor starts it";
          viewer.message({ type: "exit", exit_code: null, signal: null, reason });
          viewer.close(CLOSE_ENDED, reason);
          return null;
        }
        // resolved again for each viewer: a secret granted since the terminal opened joins
        await session.refresh();
      }
      session.attach(viewer);
      return session;
    } catch (err) {
      const e = err instanceof WarrenError ? err : null;
      if (!e) this.#o.logger.error({ err, agentId: a.agent.id }, "a terminal could not be opened");
      const message = e ? e.message : "internal error; the server log has the details";
      viewer.message({ type: "error", code: e ? e.code : "internal", message });
      viewer.close(
        CLOSE_FAILED,
        Buffer.byteLength(message) <= 123 ? message : "the terminal could not be opened",
      );
      return null;
    }
  }

  /** Ends every terminal (the server stops). */
  close(reason = "the server stopped"): void {
    for (const s of [...this.#shared.values(), ...this.#own]) s.end(reason);
  }

  /** The agent's shared shell; a running one has the agent's secrets resolved again. */
  async #sharedOf(agent: AgentRow, cols: number, rows: number): Promise<TerminalSession> {
    const live = this.#shared.get(agent.id);
    if (live && !live.ended) {
      await live.refresh();
      return live;
    }
    const pending = this.#starting.get(agent.id);
    if (pending) {
      const s = await pending;
      await s.refresh();
      return s;
    }
    const start = this.#startSession(agent, { shared: true, argv: LOGIN_SHELL, cols, rows });
    this.#starting.set(agent.id, start);
    try {
      return await start;
    } finally {
      this.#starting.delete(agent.id);
    }
  }

  async #startSession(
    agent: AgentRow,
    o: { shared: boolean; argv: string[]; cols: number; rows: number },
  ): Promise<TerminalSession> {
    const work = await this.#o.workloads.open(agent);
    const session = new TerminalSession({
      agentId: agent.id,
      machineId: agent.machineId,
      shared: o.shared,
      cols: o.cols,
      rows: o.rows,
      scrollbackBytes: this.#o.scrollbackBytes ?? TERMINAL_SCROLLBACK_BYTES,
      touchEveryMs: this.#o.touchEveryMs ?? TOUCH_EVERY_MS,
      touch: () => this.#o.runtime.touch(agent.machineId),
      onEnd: (s) => {
        if (this.#shared.get(s.agentId) === s) this.#shared.delete(s.agentId);
        this.#own.delete(s);
      },
    });
    // the agent's environment and walls, and no secret: a terminal is the operator's; what it
    // prints reaches the session redacted by the door
    let pty;
    try {
      pty = await work.pty(
        { argv: o.argv, cols: o.cols, rows: o.rows },
        { deliver: (b) => session.deliver(b), rescrub: (r) => session.rescrub(r) },
      );
    } catch (err) {
      session.end("the terminal could not be started");
      throw err;
    }
    if (o.shared) this.#shared.set(agent.id, session);
    else this.#own.add(session);
    session.started(pty);
    return session;
  }
}
