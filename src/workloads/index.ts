// The one door for an agent's work in its box. Exec, command runs, harness runs, the
// assistant's run_command and terminals all open a Workload here: the agent, its machine and
// trust, and its resolved secrets are loaded once for the unit of work (a request, a run, a
// terminal), and the door alone builds the walls, the environment, the cwd and the limits,
// stages a run's files, and hands back what the box printed only after redaction (of every
// secret that reached the agent, every value it stores meanwhile, and what the work itself
// protects, like a run's workload token). Nothing else in src/ holds the runtime's exec or
// pty (test/structure.test.ts checks it), so an output that skipped redaction cannot be written.
import { eq } from "drizzle-orm";
import type { Fence } from "../areas/fence.js";
import { BOX_PATHS, type HomeLayout, type Trust } from "../boxes/index.js";
import { SECRET_VALUE_MIN_BYTES } from "../contract/secrets.js";
import { WarrenError } from "../errors.js";
import { homeOf, uidOf } from "../machines/placement.js";
import type { Logger } from "../observability/log.js";
import type { SandboxPolicy } from "../contract/policy.js";
import type { BoxExecResult, ExecIo, MachineRuntime, PtyStream } from "../runtime/index.js";
import { Redactor, withCaseForms } from "../secrets/redact.js";
import type { ResolvedSecrets, Secrets } from "../secrets/service.js";
import { schema, type AgentRow, type Db, type MachineRow } from "../store/index.js";
import { BoundedOutput } from "./output.js";
import { redactedIo } from "./redacted-io.js";
import { TerminalRedaction } from "./terminal-redaction.js";
import { runLabels, type InstanceRef, type WorkspaceMount, type Workspaces } from "../workspaces/service.js";
import { boxdFence, heldBy, onDisk, type HomeView } from "./home-view.js";
import { agentEnv, commandWalls, cwdOf, limitsOf, type CommandLimits, type Walls } from "./walls.js";

export { BoundedOutput } from "./output.js";
export { argvOf, type CommandLimits } from "./walls.js";

export type { MachineRow } from "../store/index.js";
/** What the door needs of a machine: its id and its trust (fixed when the machine is made). */
export type MachineRef = Pick<MachineRow, "id" | "trust">;

/** Where a run's private files go: written on the host, seen in the box at /agent. */
export interface RunStaging {
  stage(
    machineId: string,
    runId: string,
    files: Record<string, Buffer>,
    uid: number,
  ): Promise<{ boxPath: string }>;
  /** The run's labels beside its part of the box, for recovery (gone with unstage). */
  label(machineId: string, runId: string, labels: RunLabels): Promise<void>;
  /** The run's part of the box goes: its files and its labels. */
  unstage(machineId: string, runId: string): Promise<void>;
}

/** A run part's labels: kind (`agent`, `flow`), owner, run, agent, machine, flow instance. */
export type RunLabels = Record<string, string>;

/** One command of the agent, as its caller asks for it; the door adds the rest. */
export interface WorkloadCommand {
  argv: string[];
  /** The caller's variables: under the agent's secrets and warren's own. */
  env?: Record<string, string> | undefined;
  /** Relative to the home (or absolute inside the box); the home when absent. */
  cwd?: string | undefined;
  stdin?: Buffer | undefined;
  timeoutMs: number;
  /** The command's own limits, tighter than its machine's. */
  limits?: CommandLimits | undefined;
  /**
   * The run's own command (a command run's, a harness CLI's): it reads the run's staged files
   * at /agent, and is the run's generation. A run's other commands (run_command) are not.
   */
  main?: boolean | undefined;
  /** Variables of warren's for this command (a harness CLI's set-up): over the secrets'. */
  own?: Record<string, string> | undefined;
  /** How the machine's records name the command (runaway events); its argv when absent. */
  shownAs?: string[] | undefined;
}

/** A terminal in the box: its bytes reach `deliver` only redacted. */
export interface AgentPty {
  readonly stream: PtyStream;
  /** The agent's secrets resolved again: any new value is redacted from the next byte on. */
  refresh(): Promise<void>;
  /** Lets out the bytes still held (the terminal ended) and stops following new values. */
  end(): void;
}

export interface WorkloadsOptions {
  db: Db;
  runtime: Pick<MachineRuntime, "ensure" | "exec" | "pty">;
  homes: Pick<HomeLayout, "identity">;
  secrets: Pick<Secrets, "resolve" | "onChange">;
  staging: RunStaging;
  logger: Logger;
  /** The /workspace of each unit of work, by the agent's class (none when absent). */
  workspaces?: Pick<Workspaces, "mount"> | undefined;
  /** The folder of /opt/warren/contracts of the agent's own flow (in the instance, else its contract flow's). */
  selfOf?: ((agentId: string, instance?: InstanceRef) => Promise<string | undefined>) | undefined;
  /** The variables that make a machine's box trust its interception authority (egress/authority.ts). */
  authority?: { boxEnv(machineId: string): Promise<Record<string, string>> } | undefined;
  /** The machine's environment revision now (its last good one): the unit of work's PATH leads to it. */
  envRevisionOf?: ((machineId: string) => Promise<number>) | undefined;
  /** Agents held while they move (src/runs/registry.ts): no door of theirs opens meanwhile. */
  moving?: { refuseWhileMoving(agentId: string): void } | undefined;
}

/** The run a workload belongs to. */
export interface RunScope {
  id: string;
  /** The sandbox policy of the run's version, for its whole life (default: the agent's as it is). */
  policy?: SandboxPolicy | undefined;
}

export class Workloads {
  /** Machines' trust by id: set when a machine is made and never changed, so kept once read. */
  readonly #machines = new Map<string, MachineRef>();

  constructor(private readonly o: WorkloadsOptions) {}

  /**
   * The door for one unit of the agent's work: its machine (given, or read here) and its
   * secrets, resolved now (a grant or a value changed reaches the next unit of work).
   */
  async open(
    agent: AgentRow,
    opts: {
      machine?: MachineRef;
      run?: RunScope;
      secrets?: readonly string[] | undefined;
      fence?: Fence | undefined;
      /** The folder its commands run in when they name none (relative to the home). */
      cwd?: string | undefined;
      /** Folders of the home its commands find empty. */
      hide?: readonly string[] | undefined;
      /** A conversation's worktree (from) seen at its repository's folder (at): ./home-view.ts. */
      place?: { from: string; at: string } | undefined;
      /** The flow instance the work is done in: its /workspace is the instance's. */
      instance?: InstanceRef | undefined;
    } = {},
  ): Promise<Workload> {
    // a moving agent's home is being copied: work that reached its old machine would be lost
    this.o.moving?.refuseWhileMoving(agent.id);
    const machine = opts.machine ?? (await this.#machineOf(agent));
    const resolved = await this.o.secrets.resolve(agent);
    let secrets = opts.secrets ? narrowed(resolved, opts.secrets) : resolved;
    // a secret of use egress (a marker in WARREN_SECRET_*): its programs trust the machine's authority
    if (this.o.authority && Object.keys(secrets.env).some((k) => k.startsWith("WARREN_SECRET_")))
      secrets = { ...secrets, env: { ...secrets.env, ...(await this.o.authority.boxEnv(machine.id)) } };
    const workspace =
      (await this.o.workspaces?.mount(agent, {
        ...(opts.run ? { run: opts.run } : {}),
        ...(opts.instance ? { instance: opts.instance } : {}),
      })) ?? null;
    const work = new Workload(
      this.o,
      agent,
      machine,
      secrets,
      opts.run,
      { fence: opts.fence ?? null, cwd: opts.cwd, hide: opts.hide ?? [], place: opts.place },
      workspace,
      opts.instance,
    );
    work.selfDir = await this.o.selfOf?.(agent.id, opts.instance);
    work.envRevision = (await this.o.envRevisionOf?.(machine.id)) ?? 0;
    // nor one that began moving while the door opened
    try {
      this.o.moving?.refuseWhileMoving(agent.id);
    } catch (err) {
      await work.release();
      throw err;
    }
    return work;
  }

  /** The door of an agent known by id (work the server starts itself, not a request). */
  async openAgent(agentId: string, opts: { run?: RunScope } = {}): Promise<Workload> {
    const [agent] = await this.o.db.select().from(schema.agents).where(eq(schema.agents.id, agentId));
    if (!agent) throw new WarrenError("not_found", "agent was not found");
    return this.open(agent, opts);
  }

  async #machineOf(agent: AgentRow): Promise<MachineRef> {
    const known = this.#machines.get(agent.machineId);
    if (known) return known;
    const [m] = await this.o.db
      .select({ id: schema.machines.id, trust: schema.machines.trust })
      .from(schema.machines)
      .where(eq(schema.machines.id, agent.machineId));
    if (!m) throw new WarrenError("not_found", "machine was not found");
    if (this.#machines.size >= 10_000) this.#machines.clear();
    this.#machines.set(m.id, m);
    return m;
  }
}

/**
 * The secrets of a narrowed unit of work (a persona's turn): only the named variables reach
 * its commands; every value that reaches the agent is still redacted. Never a widening: a
 * name that does not reach the agent adds nothing.
 */
function narrowed(s: ResolvedSecrets, names: readonly string[]): ResolvedSecrets {
  const keep = new Set(names);
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(s.env)) if (keep.has(k.replace(/^WARREN_SECRET_/, ""))) env[k] = v;
  return { ...s, env };
}

export class Workload {
  /** Values this work protects beyond the agent's secrets (a run's workload token). */
  readonly #protected: Buffer[] = [];
  /** Secrets granted while the work goes on (secret_request): variables of its next commands. */
  readonly #granted: Record<string, string> = {};
  #redactor: Redactor | undefined;
  #staged: string | undefined;
  /** The run's labels, written once before its first command (recovery finds the run by them). */
  #labelled: Promise<void> | undefined;
  /** The redaction set of the run's records (Records.openRun): what this work protects joins it. */
  #recording: { add(values: readonly (Buffer | string)[]): void } | undefined;
  /** Its flow's folder, seen read-only at /opt/warren/contracts/self by its commands. */
  selfDir: string | undefined;
  /** The machine's environment revision this unit of work's commands find on their PATH. */
  envRevision = 0;

  constructor(
    private readonly o: WorkloadsOptions,
    readonly agent: AgentRow,
    readonly machine: MachineRef,
    readonly secrets: ResolvedSecrets,
    readonly run: RunScope | undefined,
    /** The view of the home of this work (a conversation's turn): ./home-view.ts. */
    private readonly view: HomeView = { fence: null, hide: [] },
    /** What is bound at /workspace for this work's commands; null: none. */
    readonly workspace: WorkspaceMount | null = null,
    /** The flow instance the work is done in. */
    readonly instance: InstanceRef | undefined = undefined,
  ) {}

  /** A run's labels beside its part of the box, written once (nothing for work that is no run). */
  async #label(): Promise<void> {
    const run = this.run;
    if (!run) return;
    // once the box is there: a machine's first start may take a warm box, whose folder
    // replaces the machine's
    this.#labelled ??= this.ready().then(() =>
      this.o.staging.label(this.machine.id, run.id, runLabels(this.agent, run.id, this.instance)),
    );
    await this.#labelled;
  }

  /** The folders its file tools hold (null: the whole home). */
  get fence(): Fence {
    return heldBy(this.view);
  }

  /**
   * Where a path of the home its file tools name is on the host (its worktree's, below its
   * repository's folder); null when its commands find nothing there (a .git of a fenced turn).
   */
  onDisk(components: readonly string[]): string[] | null {
    return onDisk(this.view, components);
  }

  /** The command's own view of the home, for boxd (none: the whole home as it is). */
  #homeView(): { fence?: NonNullable<ReturnType<typeof boxdFence>> } {
    const fence = boxdFence(homeOf(this.agent.id), this.view);
    return fence ? { fence } : {};
  }

  get trust(): Trust {
    return this.machine.trust;
  }

  get uid(): number {
    return uidOf(this.agent.slot);
  }

  /** The walls of the agent's commands (a run's own command also reads its /agent). */
  walls(opts: { main?: boolean } = {}): Walls {
    const walls = commandWalls(this.agent, this.trust, this.o.homes, {
      run: opts.main === true,
      envRevision: this.envRevision,
      policy: this.run?.policy,
    });
    const ws = this.workspace;
    if (!ws) return walls;
    // /workspace read-write, and the groups that reach it (a flow instance's)
    return {
      ...walls,
      groups: [...(walls.groups ?? []), ...ws.groups],
      files: walls.files
        ? { read: walls.files.read, write: [...walls.files.write, BOX_PATHS.workspace] }
        : walls.files,
    };
  }

  /** The end of this unit of work: a `memory: false` workspace goes with it. */
  async release(): Promise<void> {
    await this.workspace?.release();
  }

  /** What every record and every output of this work is redacted of: the secrets and what it protects. */
  redactor(): Redactor {
    if (this.#protected.length === 0) return this.secrets.redactor;
    // built once per set of protected values, not for every command
    this.#redactor ??= new Redactor(
      [...this.secrets.redactor.values, ...this.#protected],
      SECRET_VALUE_MIN_BYTES,
    );
    return this.#redactor;
  }

  /** The run's records are redacted of what this work protects too. */
  recordInto(recording: { add(values: readonly (Buffer | string)[]): void }): void {
    this.#recording = recording;
    if (this.#protected.length > 0) recording.add(this.#protected);
  }

  /** Values redacted from everything the box prints from now on, and from the run's records. */
  protect(values: readonly string[]): void {
    for (const v of values) this.#protected.push(...withCaseForms([v]));
    this.#redactor = undefined;
    this.#recording?.add(values);
  }

  /** A secret given to the agent while it works (secret_request): its next commands see it, redacted. */
  grantSecret(variable: string, value: string): void {
    this.#granted[variable] = value;
    this.protect([value]);
  }

  /** The agent's box, started if it is not running (a refusal comes before any output). */
  async ready(): Promise<void> {
    await this.o.runtime.ensure(this.agent.machineId);
  }

  /** A run's private files, seen by its own command at /agent until `unstage`. */
  async stage(files: Record<string, Buffer>): Promise<void> {
    if (!this.run) throw new Error("only a run stages files");
    await this.#label();
    const staged = await this.o.staging.stage(this.machine.id, this.run.id, files, this.uid);
    this.#staged = staged.boxPath;
  }

  async unstage(): Promise<void> {
    if (!this.run || (this.#staged === undefined && this.#labelled === undefined)) return;
    this.#staged = undefined;
    this.#labelled = undefined;
    await this.o.staging
      .unstage(this.machine.id, this.run.id)
      .catch((err: unknown) => this.o.logger.warn({ err, runId: this.run?.id }, "unstaging failed"));
  }

  /** The environment of a command: warren's variables over its own over the secrets over the caller's. */
  env(cmd: Pick<WorkloadCommand, "env" | "own" | "main">): Record<string, string> {
    return agentEnv(
      this.agent,
      {
        ...cmd.env,
        ...this.secrets.env,
        ...this.#granted,
        ...cmd.own,
        ...(this.run ? { WARREN_RUN_ID: this.run.id } : {}),
        ...(cmd.main && this.#staged !== undefined ? { WARREN_INPUT: `${BOX_PATHS.agent}/input` } : {}),
      },
      this.envRevision,
    );
  }

  /**
   * Runs a command of the agent. `io` gets its stdout and stderr only redacted, the last held
   * bytes once it ended, before this answers.
   */
  async exec(cmd: WorkloadCommand, plain: ExecIo = {}): Promise<BoxExecResult> {
    const main = cmd.main === true;
    if (main && (!this.run || this.#staged === undefined))
      throw new Error("a run's own command needs its files staged first");
    await this.#label();
    await this.workspace?.ensure();
    const io = redactedIo(plain, {
      redactor: this.redactor(),
      ...(this.secrets.follow ? { follow: this.secrets.follow } : {}),
    });
    try {
      return await this.o.runtime.exec(
        this.agent.machineId,
        {
          argv: cmd.argv,
          env: this.env(cmd),
          cwd: cwdOf(this.agent.id, cmd.cwd ?? this.view.cwd),
          ...this.walls({ main }),
          stdin: cmd.stdin,
          timeoutMs: cmd.timeoutMs,
          limits: limitsOf(cmd.limits),
          ...(main ? { agentDir: this.#staged, generation: true } : {}),
          ...this.#homeView(),
          ...(this.workspace ? { workspaceDir: this.workspace.boxDir } : {}),
          ...(this.selfDir !== undefined ? { selfDir: this.selfDir } : {}),
        },
        io,
        { agentId: this.agent.id, runId: this.run?.id, argv: cmd.shownAs ?? cmd.argv },
      );
    } finally {
      io.flush();
    }
  }

  /** Runs a command and keeps its stdout and stderr (redacted) up to `limitBytes` each. */
  async collect(
    cmd: WorkloadCommand,
    o: { limitBytes: number; signal?: AbortSignal | undefined },
  ): Promise<{ result: BoxExecResult; stdout: BoundedOutput; stderr: BoundedOutput }> {
    const stdout = new BoundedOutput(o.limitBytes);
    const stderr = new BoundedOutput(o.limitBytes);
    const result = await this.exec(cmd, {
      ...(o.signal ? { signal: o.signal } : {}),
      onStdout: (c) => stdout.push(c),
      onStderr: (c) => stderr.push(c),
    });
    return { result, stdout, stderr };
  }

  /**
   * A terminal of the agent: its environment and walls, and no secret (a terminal is the
   * operator's), but what it prints reaches `deliver` redacted of every value that reaches
   * the agent: those it has now, those it stores meanwhile, those granted while it runs.
   * `rescrub` is told each new set, for what was printed before it (a scrollback).
   */
  async pty(
    req: { argv: string[]; cols: number; rows: number },
    out: { deliver: (redacted: Buffer) => void; rescrub: (r: Redactor) => void },
  ): Promise<AgentPty> {
    const redaction = new TerminalRedaction(out.deliver);
    const add = (values: Iterable<Buffer>) => {
      const r = redaction.add(values);
      if (r) out.rescrub(r);
    };
    add(this.secrets.redactor.values);
    const refresh = async () => add((await this.o.secrets.resolve(this.agent)).redactor.values);
    // a value the agent stores from its box (warren-secret store) is redacted at once
    const stopFollowing = this.secrets.follow?.((value) => add([value]));
    // a secret granted while it runs: from the grant's answer on
    const stopWatching = this.o.secrets.onChange(this.agent.orgId, () =>
      refresh().catch((err: unknown) =>
        this.o.logger.error(
          { err, agentId: this.agent.id },
          "a terminal's secrets could not be resolved again",
        ),
      ),
    );
    let ended = false;
    const end = () => {
      if (ended) return;
      ended = true;
      stopFollowing?.();
      stopWatching();
      redaction.end();
      void this.release();
    };
    const walls = this.walls();
    try {
      await this.workspace?.ensure();
      const stream = await this.o.runtime.pty(
        this.agent.machineId,
        {
          argv: req.argv,
          env: agentEnv(
            this.agent,
            {
              TERM: "xterm-256color",
              SHELL: "/bin/bash",
              USER: this.agent.id,
              LOGNAME: this.agent.id,
            },
            this.envRevision,
          ),
          cwd: homeOf(this.agent.id),
          ...walls,
          groups: walls.groups ?? [],
          ...(this.workspace ? { workspaceDir: this.workspace.boxDir } : {}),
          ...(this.selfDir !== undefined ? { selfDir: this.selfDir } : {}),
          cols: req.cols,
          rows: req.rows,
        },
        { onData: (chunk) => redaction.push(chunk) },
      );
      return { stream, refresh, end };
    } catch (err) {
      end();
      throw err;
    }
  }
}
