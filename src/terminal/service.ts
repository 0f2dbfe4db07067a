// The agents' terminals: one shared shell per agent, in its home on its machine, as the agent,
// reached only through boxd's socket. Writers (owner, admin, editor) type into it; viewers
// watch it; auditors are refused. It lives until its shell exits or the box stops. Its shell
// holds no secret, but what it prints is redacted of every value that reaches the agent: those
// it had when the terminal opened, those found on each attach, those it stores meanwhile.
import { eq } from "drizzle-orm";
import { allows, type Access, type Identity } from "../access/index.js";
import type { AgentRow, Agents } from "../agents/service.js";
import type { HomeLayout } from "../boxes/index.js";
import { TERMINAL_SCROLLBACK_BYTES } from "../contract/terminal.js";
import { WarrenError } from "../errors.js";
import { agentEnv, commandWalls } from "../exec/service.js";
import { homeOf } from "../machines/placement.js";
import type { Logger } from "../observability/log.js";
import type { MachineRuntime } from "../runtime/index.js";
import type { ResolvedSecrets, Secrets } from "../secrets/service.js";
import type { Db } from "../store/index.js";
import { schema } from "../store/index.js";
import { CLOSE_ENDED, TerminalSession, type Viewer, type ViewerMode } from "./session.js";

/** The agent's login shell (the box's /etc/passwd gives every agent /bin/bash). */
export const LOGIN_SHELL = ["/bin/bash", "-l"];
/** Terminal input restarts the machine's idle timer at most this often. */
export const TOUCH_EVERY_MS = 30_000;
/** The close code of a terminal that could not be opened after the upgrade. */
const CLOSE_FAILED = 1011;

export interface TerminalsOptions {
  db: Db;
  access: Access;
  agents: Agents;
  runtime: Pick<MachineRuntime, "pty" | "touch" | "onStopped">;
  homes: Pick<HomeLayout, "identity">;
  secrets: Pick<Secrets, "resolve" | "onChange">;
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
    o.runtime.onStopped((machineId, reason) => {
      for (const s of [...this.#shared.values(), ...this.#own])
        if (s.machineId === machineId) s.end(`the machine stopped: ${reason}`);
    });
  }

  /** POST /cli: the agent's shared shell, started (with its machine) if it is not running. */
  async start(who: Identity, agentId: string): Promise<void> {
    const agent = await this.#o.agents.load(who, agentId, "write");
    await this.#sharedOf(agent, await this.#o.secrets.resolve(agent), 80, 24);
  }

  /** The upgrade's checks: 404 for an unknown agent, 403 for an auditor, a role's mode. */
  async authorize(
    who: Identity,
    agentId: string,
    q: { cols?: number | undefined; rows?: number | undefined; argv?: string | string[] | undefined },
  ): Promise<Attachment> {
    const agent = await this.#o.agents.load(who, agentId, "inspect");
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
      // resolved again for each viewer: a secret granted since the terminal opened joins
      const secrets = await this.#o.secrets.resolve(a.agent);
      let session: TerminalSession | undefined;
      if (a.argv) {
        session = await this.#startSession(a.agent, secrets, {
          shared: false,
          argv: a.argv,
          cols: a.cols,
          rows: a.rows,
        });
      } else if (a.mode === "write") {
        session = await this.#sharedOf(a.agent, secrets, a.cols, a.rows);
      } else {
        session = this.#shared.get(a.agent.id);
        if (!session || session.ended) {
          const reason = "no terminal is running for this agent; an owner, admin or editor starts it";
          viewer.message({ type: "exit", exit_code: null, signal: null, reason });
          viewer.close(CLOSE_ENDED, reason);
          return null;
        }
        session.redactWith(secrets.redactor.values);
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

  async #sharedOf(
    agent: AgentRow,
    secrets: ResolvedSecrets,
    cols: number,
    rows: number,
  ): Promise<TerminalSession> {
    const live = this.#shared.get(agent.id);
    if (live && !live.ended) {
      live.redactWith(secrets.redactor.values);
      return live;
    }
    const pending = this.#starting.get(agent.id);
    if (pending) {
      const s = await pending;
      s.redactWith(secrets.redactor.values);
      return s;
    }
    const start = this.#startSession(agent, secrets, { shared: true, argv: LOGIN_SHELL, cols, rows });
    this.#starting.set(agent.id, start);
    try {
      return await start;
    } finally {
      this.#starting.delete(agent.id);
    }
  }

  async #startSession(
    agent: AgentRow,
    secrets: ResolvedSecrets,
    o: { shared: boolean; argv: string[]; cols: number; rows: number },
  ): Promise<TerminalSession> {
    const [machine] = await this.#o.db
      .select({ trust: schema.machines.trust })
      .from(schema.machines)
      .where(eq(schema.machines.id, agent.machineId));
    if (!machine) throw new WarrenError("not_found", "machine was not found");
    const session = new TerminalSession({
      agentId: agent.id,
      machineId: agent.machineId,
      shared: o.shared,
      cols: o.cols,
      rows: o.rows,
      scrollbackBytes: this.#o.scrollbackBytes ?? TERMINAL_SCROLLBACK_BYTES,
      secrets: secrets.redactor.values,
      touchEveryMs: this.#o.touchEveryMs ?? TOUCH_EVERY_MS,
      touch: () => this.#o.runtime.touch(agent.machineId),
      onEnd: (s) => {
        stopFollowing?.();
        stopWatching();
        if (this.#shared.get(s.agentId) === s) this.#shared.delete(s.agentId);
        this.#own.delete(s);
      },
    });
    // a value the agent stores from its box (warren-secret store) is redacted at once
    const stopFollowing = secrets.follow?.((value) => session.redactWith([value]));
    // a secret granted while it runs: from the grant's answer on (guilds joined wait for an attach)
    const stopWatching = this.#o.secrets.onChange(agent.orgId, async () => {
      try {
        session.redactWith((await this.#o.secrets.resolve(agent)).redactor.values);
      } catch (err) {
        this.#o.logger.error({ err, agentId: agent.id }, "a terminal's secrets could not be resolved again");
      }
    });
    const home = homeOf(agent.id);
    const walls = commandWalls(agent, machine.trust, this.#o.homes);
    // the agent's environment and walls, and no secret: a terminal is the operator's
    let pty;
    try {
      pty = await this.#o.runtime.pty(
        agent.machineId,
        {
          argv: o.argv,
          env: agentEnv(agent, {
            TERM: "xterm-256color",
            SHELL: "/bin/bash",
            USER: agent.id,
            LOGNAME: agent.id,
          }),
          cwd: home,
          ...walls,
          groups: walls.groups ?? [],
          cols: o.cols,
          rows: o.rows,
        },
        { onData: (chunk) => session.output(chunk) },
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
