// A machine's box over time: started on demand, adopted or reaped at boot, stopped when idle.
// The database's state column follows every transition, with its reason and time.
import { existsSync } from "node:fs";
import { desc, eq, inArray } from "drizzle-orm";
import type { Duplex } from "node:stream";
import { BOX_BRIDGES, BOX_PATHS, type BoxHandle, type BoxProvider, type BoxSpec } from "../boxes/index.js";
import { WarrenError } from "../errors.js";
import type { Logger } from "../observability/log.js";
import type { Metrics } from "../observability/metrics.js";
import type { Db } from "../store/index.js";
import { schema } from "../store/index.js";
import type { BridgeOffer, CallAnswer, CallMessage, CallsChannel } from "../boxd/index.js";
import type {
  BoxExec,
  BoxExecRequest,
  BoxExecResult,
  BoxPtyRequest,
  ExecIo,
  PtyOptions,
  PtyStream,
} from "./exec-port.js";
import type { BoxView, MachineControl } from "./control.js";
import { BoxHealth, type CommandOwner, type RunawayEvent } from "./health.js";

export interface RuntimeOptions {
  db: Db;
  provider: BoxProvider;
  logger: Logger;
  metrics: Metrics;
  /** Opens boxd on a running box. */
  connect: (box: BoxHandle) => BoxExec;
  /** `harness`: the host folder of the harness CLIs, bound read-only when it exists. */
  paths: { data: string; contracts: string; harness?: string };
  idleMs: number;
  tmpMib?: number;
  /** Agents with a generation running now (their machines are never idle). */
  busyAgents: () => string[];
  /** The agents' pids limit of every box (default 4096). */
  pids?: number;
  /** How often boxd is pinged so that it knows its server is there (default 10 s). */
  keepaliveMs?: number;
}

/** Events of a machine's box shown with it (the newest). */
const BOX_EVENTS_SHOWN = 20;

/** Answers an agent's call from inside its machine's box (see setCallHandler). */
export type CallHandler = (machineId: string, call: CallMessage) => Promise<CallAnswer>;

/**
 * Takes a connection accepted on a bridge's port in a machine's box (see
 * setBridgeHandler): `claim` opens it as a byte stream. A connection not claimed within
 * 10 s is closed by boxd.
 */
export type BridgeHandler = (machineId: string, offer: BridgeOffer, claim: () => Promise<Duplex>) => void;

/** The standing channels a running box keeps to the server. */
type Standing = "calls" | "bridges";

/** How long to wait before opening a machine's standing channel again after it ended. */
const CALLS_RETRY_MS = 1000;

interface Live {
  box: BoxHandle;
  boxd: BoxExec;
  lastActivity: number;
  liveExecs: number;
  calls?: CallsChannel;
  bridges?: CallsChannel;
}

type MachineRow = typeof schema.machines.$inferSelect;

export class MachineRuntime implements MachineControl {
  readonly #o: RuntimeOptions;
  readonly #live = new Map<string, Live>();
  readonly #locks = new Map<string, Promise<unknown>>();
  #idleTimer: NodeJS.Timeout | undefined;
  /** Who started each command tree (by its cgroup name), per machine. */
  readonly #owners = new Map<string, Map<string, CommandOwner>>();
  readonly #runawayListeners: ((e: RunawayEvent) => Promise<void>)[] = [];
  readonly #stopListeners: ((machineId: string, reason: string) => void)[] = [];
  readonly #health: BoxHealth;
  #onCall: CallHandler | undefined;
  #onBridge: BridgeHandler | undefined;

  constructor(o: RuntimeOptions) {
    this.#o = o;
    this.#health = new BoxHealth({
      db: o.db,
      provider: o.provider,
      logger: o.logger,
      metrics: o.metrics,
      keepaliveMs: o.keepaliveMs ?? 10_000,
      live: () => [...this.#live].map(([machineId, l]) => ({ machineId, ping: () => l.boxd.ping() })),
      ownerOf: (machineId, command) => this.#owners.get(machineId)?.get(command),
      gone: (machineId, present) => {
        const owners = this.#owners.get(machineId);
        if (!owners) return;
        for (const name of owners.keys()) if (!present.has(name)) owners.delete(name);
      },
      onRunaway: (e) => this.#recordRunaway(e),
    });
  }

  async #recordRunaway(e: RunawayEvent): Promise<void> {
    await this.#o.db.insert(schema.machineEvents).values({
      machineId: e.machineId,
      type: "runaway",
      at: e.at,
      detail: e.detail,
      data: {
        limit: e.limit,
        reason: e.reason,
        held_s: e.heldS,
        command: e.command,
        agent_id: e.owner?.agentId ?? null,
        run_id: e.owner?.runId ?? null,
        argv: e.owner?.argv ?? null,
        pids: e.pids,
        memory_bytes: e.memoryBytes,
        oom_kills: e.oomKills,
        fork_failures: e.forkFailures,
        ended: e.ended,
      },
    });
    for (const fn of this.#runawayListeners) await fn(e);
  }

  /** Called for every runaway command tree stopped (after it is recorded on the machine). */
  onRunaway(fn: (e: RunawayEvent) => Promise<void>): void {
    this.#runawayListeners.push(fn);
  }

  /** One health round now (tests and the timer). */
  checkHealth(now?: number): Promise<RunawayEvent[]> {
    return this.#health.tick(now);
  }

  /** The machine's box: state, usage now, the limit it is at, its latest events. */
  async box(machineId: string, state: BoxView["state"]): Promise<BoxView> {
    const now = this.#live.has(machineId) ? await this.#health.now(machineId) : { usage: null };
    const rows = await this.#o.db
      .select()
      .from(schema.machineEvents)
      .where(eq(schema.machineEvents.machineId, machineId))
      .orderBy(desc(schema.machineEvents.id))
      .limit(BOX_EVENTS_SHOWN);
    return {
      state,
      ...now,
      events: rows.reverse().map((r) => ({
        at: r.at.toISOString(),
        type: r.type,
        detail: r.detail,
        data: r.data as Record<string, unknown>,
      })),
    };
  }

  /** The usage of a command tree a run or exec started, while it exists. */
  commandUsage(machineId: string, command: string): ReturnType<BoxHealth["commandUsage"]> {
    return this.#health.commandUsage(machineId, command);
  }

  /** Who answers agents' calls (warren-secret); each running box keeps a channel to it. */
  setCallHandler(fn: CallHandler): void {
    this.#onCall = fn;
    for (const [id, live] of this.#live) if (!live.calls) void this.#keep(id, live, "calls");
  }

  /** Who takes connections on the boxes' bridges (BOX_BRIDGES); each running box keeps a channel to it. */
  setBridgeHandler(fn: BridgeHandler): void {
    this.#onBridge = fn;
    for (const [id, live] of this.#live) if (!live.bridges) void this.#keep(id, live, "bridges");
  }

  /** Opens the box's standing channels (calls, bridges) and keeps them open. */
  async #keepChannels(machineId: string, live: Live): Promise<void> {
    await Promise.all([this.#keep(machineId, live, "calls"), this.#keep(machineId, live, "bridges")]);
  }

  #opener(machineId: string, live: Live, kind: Standing): (() => Promise<CallsChannel>) | undefined {
    if (kind === "calls") {
      const onCall = this.#onCall;
      return onCall && (() => live.boxd.calls((call) => onCall(machineId, call)));
    }
    const onBridge = this.#onBridge;
    return (
      onBridge &&
      (() =>
        live.boxd.bridges((offer) => {
          live.lastActivity = Date.now();
          onBridge(machineId, offer, () => live.boxd.bridge(offer.id));
        }))
    );
  }

  /**
   * Keeps one of the box's standing channels open while the box is live: opened now,
   * opened again when it ends (boxd restarted, a dropped connection) until the box stops.
   */
  #keep(machineId: string, live: Live, kind: Standing): Promise<void> {
    const openChannel = this.#opener(machineId, live, kind);
    if (!openChannel) return Promise.resolve();
    const current = () => this.#live.get(machineId) === live;
    let opened: () => void = () => {};
    // settles after the first attempt, so that a command started next finds the channel
    const first = new Promise<void>((resolve) => (opened = resolve));
    const open = async (): Promise<void> => {
      while (current()) {
        try {
          const ch = await openChannel();
          if (!current()) {
            ch.close();
            break;
          }
          live[kind] = ch;
          opened();
          await ch.closed;
        } catch (err) {
          if (current()) this.#o.logger.warn({ err, machineId }, `the box's ${kind} channel did not open`);
        }
        opened();
        if (current()) await new Promise((r) => setTimeout(r, CALLS_RETRY_MS).unref());
      }
      opened();
    };
    live[kind] = { close: () => {}, closed: Promise.resolve() };
    void open();
    return first;
  }

  #drop(machineId: string): void {
    const live = this.#live.get(machineId);
    this.#live.delete(machineId);
    this.#owners.delete(machineId);
    this.#health.forget(machineId);
    live?.calls?.close();
    live?.bridges?.close();
    live?.boxd.close();
  }

  /** Runs `fn` after every earlier call for the same machine has settled. */
  async #serial<T>(machineId: string, fn: () => Promise<T>): Promise<T> {
    const prev = this.#locks.get(machineId) ?? Promise.resolve();
    const next = prev.then(fn, fn);
    const tail = next.catch(() => undefined);
    this.#locks.set(machineId, tail);
    try {
      return await next;
    } finally {
      if (this.#locks.get(machineId) === tail) this.#locks.delete(machineId);
    }
  }

  async #setState(machineId: string, state: MachineRow["state"], reason: string): Promise<void> {
    await this.#o.db
      .update(schema.machines)
      .set({ state, stateReason: reason, stateChangedAt: new Date() })
      .where(eq(schema.machines.id, machineId));
  }

  specFor(m: MachineRow): BoxSpec {
    return {
      id: m.id,
      labels: {
        "warren.kind": "machine",
        "warren.org": m.orgId,
        "warren.machine": m.id,
        "warren.provider": this.#o.provider.name,
      },
      mounts: [
        {
          kind: "bind",
          source: this.#o.provider.homes.machineDir(m.id),
          target: BOX_PATHS.homes,
          readOnly: false,
        },
        { kind: "bind", source: this.#o.paths.data, target: BOX_PATHS.data, readOnly: true },
        { kind: "bind", source: this.#o.paths.contracts, target: BOX_PATHS.contracts, readOnly: true },
        ...(this.#o.paths.harness && existsSync(this.#o.paths.harness)
          ? [
              {
                kind: "bind" as const,
                source: this.#o.paths.harness,
                target: BOX_PATHS.harness,
                readOnly: true,
              },
            ]
          : []),
        { kind: "tmpfs", target: BOX_PATHS.tmp, sizeMib: this.#o.tmpMib ?? 1024, mode: 0o1777 },
      ],
      limits: {
        memoryMib: m.memoryMib,
        cpus: m.cpus,
        pids: this.#o.pids ?? 4096,
        tmpMib: this.#o.tmpMib ?? 1024,
      },
      bridges: Object.entries(BOX_BRIDGES).map(([name, port]) => ({ name, port })),
    };
  }

  /** The machine's boxd, starting the box first when it is not running. */
  async ensure(machineId: string): Promise<BoxExec> {
    const live = this.#live.get(machineId);
    if (live) {
      live.lastActivity = Date.now();
      return live.boxd;
    }
    return this.#serial(machineId, async () => {
      const again = this.#live.get(machineId);
      if (again) return again.boxd;
      const [m] = await this.#o.db.select().from(schema.machines).where(eq(schema.machines.id, machineId));
      if (!m) throw new WarrenError("not_found", "machine was not found");
      await this.#setState(machineId, "starting", "started on demand");
      const t0 = process.hrtime.bigint();
      let box: BoxHandle;
      try {
        await this.#o.provider.homes.prepareMachine(machineId);
        await this.#o.provider.create(this.specFor(m));
        box = await this.#o.provider.start(machineId);
      } catch (err) {
        await this.#setState(machineId, "stopped", `start failed: ${messageOf(err)}`);
        this.#o.logger.error({ err, machineId }, "box start failed");
        throw new WarrenError(
          "box.unavailable",
          `the machine's box could not be started: ${messageOf(err)}`,
          undefined,
          { cause: err },
        );
      }
      this.#o.metrics.boxStarts.observe(Number(process.hrtime.bigint() - t0) / 1e9);
      const boxd = this.#o.connect(box);
      const live: Live = { box, boxd, lastActivity: Date.now(), liveExecs: 0 };
      this.#live.set(machineId, live);
      await this.#keepChannels(machineId, live);
      await this.#setState(machineId, "running", "started on demand");
      return boxd;
    });
  }

  /** Marks activity (exec, terminal input, generation) so the idle timer starts over. */
  touch(machineId: string): void {
    const live = this.#live.get(machineId);
    if (live) live.lastActivity = Date.now();
  }

  /**
   * Runs a command in the machine's box, counting it as activity while it runs. `owner`
   * names who started it, so that a runaway tree is recorded against its agent and run.
   */
  async exec(
    machineId: string,
    req: BoxExecRequest,
    io: ExecIo = {},
    owner?: CommandOwner,
  ): Promise<BoxExecResult> {
    const tracked: ExecIo = {
      ...io,
      onStart: (pid, cgroup) => {
        if (cgroup && owner) {
          let owners = this.#owners.get(machineId);
          if (!owners) this.#owners.set(machineId, (owners = new Map()));
          owners.set(cgroup, owner);
        }
        io.onStart?.(pid, cgroup);
      },
    };
    try {
      return await this.#execOnce(machineId, req, tracked);
    } catch (err) {
      // boxd unreachable before the command started: a box that died on its own (killed,
      // out of memory) is forgotten and started again, once
      if (!unreachable(err) || !(await this.#forgetIfDead(machineId))) throw err;
      return this.#execOnce(machineId, req, tracked);
    }
  }

  async #execOnce(machineId: string, req: BoxExecRequest, io: ExecIo): Promise<BoxExecResult> {
    const boxd = await this.ensure(machineId);
    const live = this.#live.get(machineId);
    if (live) live.liveExecs++;
    try {
      return await boxd.exec(req, io);
    } finally {
      if (live) {
        live.liveExecs--;
        live.lastActivity = Date.now();
      }
    }
  }

  /** True when the machine's box was believed running but is gone; it is then marked stopped. */
  async #forgetIfDead(machineId: string): Promise<boolean> {
    if (!this.#live.has(machineId)) return false;
    const handle = await this.#o.provider.inspect(machineId);
    if (handle?.state === "running") return false;
    await this.#serial(machineId, async () => {
      this.#drop(machineId);
      this.#stopped(machineId, "the box stopped on its own");
      await this.#o.provider.stop(machineId);
      await this.#setState(machineId, "stopped", "the box stopped on its own");
    });
    this.#o.logger.warn({ machineId }, "a box stopped on its own; starting it again");
    return true;
  }

  /**
   * Opens a terminal in the machine's box (started first when it is not running). The
   * terminal is activity only when its user types (`touch`): an idle terminal does not
   * keep the box up.
   */
  async pty(machineId: string, req: BoxPtyRequest, opts: PtyOptions): Promise<PtyStream> {
    const once = async () => (await this.ensure(machineId)).pty(req, opts);
    try {
      return await once();
    } catch (err) {
      if (!unreachable(err) || !(await this.#forgetIfDead(machineId))) throw err;
      return once();
    }
  }

  /** Called with the reason whenever a machine's box is stopped (idle, by a request, gone). */
  onStopped(fn: (machineId: string, reason: string) => void): void {
    this.#stopListeners.push(fn);
  }

  #stopped(machineId: string, reason: string): void {
    for (const fn of this.#stopListeners) fn(machineId, reason);
  }

  async forward(machineId: string, port: number): Promise<Duplex> {
    const once = async () => {
      const boxd = await this.ensure(machineId);
      this.touch(machineId);
      return boxd.forward(port);
    };
    try {
      return await once();
    } catch (err) {
      if (!unreachable(err) || !(await this.#forgetIfDead(machineId))) throw err;
      return once();
    }
  }

  isRunning(machineId: string): boolean {
    return this.#live.has(machineId);
  }

  async stop(machineId: string, reason: string): Promise<void> {
    await this.#serial(machineId, async () => {
      this.#drop(machineId);
      this.#stopped(machineId, reason);
      await this.#o.provider.stop(machineId);
      await this.#setState(machineId, "stopped", reason);
    });
  }

  async remove(machineId: string): Promise<void> {
    await this.#serial(machineId, async () => {
      this.#drop(machineId);
      this.#stopped(machineId, "the machine was deleted");
      await this.#o.provider.remove(machineId);
    });
  }

  async agentsChanged(machineId: string): Promise<void> {
    if (this.#live.has(machineId)) await this.#o.provider.refreshUsers(machineId);
  }

  /**
   * At boot: adopt the live boxes of machines we know, reap every other box, and mark
   * machines whose box is gone as stopped. A machine never has two boxes.
   */
  async recover(): Promise<{ adopted: string[]; reaped: string[] }> {
    const boxes = await this.#o.provider.list({ "warren.kind": "machine" });
    const ids = boxes.map((b) => b.labels["warren.machine"]);
    const known = ids.length
      ? await this.#o.db.select().from(schema.machines).where(inArray(schema.machines.id, ids))
      : [];
    const byId = new Map(known.map((m) => [m.id, m]));
    const adopted: string[] = [];
    const reaped: string[] = [];
    for (const box of boxes) {
      const m = byId.get(box.labels["warren.machine"]);
      const ours = m && m.orgId === box.labels["warren.org"] && box.id === m.id;
      if (ours && box.state === "running" && !this.#live.has(m.id)) {
        try {
          const boxd = this.#o.connect(box);
          await boxd.ping();
          const live: Live = { box, boxd, lastActivity: Date.now(), liveExecs: 0 };
          this.#live.set(m.id, live);
          await this.#keepChannels(m.id, live);
          await this.#setState(m.id, "running", "adopted after a server restart");
          adopted.push(m.id);
          continue;
        } catch (err) {
          this.#o.logger.warn({ err, machineId: m.id }, "could not adopt a box; reaping it");
        }
      }
      await this.#o.provider
        .remove(box.id)
        .catch((err: unknown) => this.#o.logger.error({ err, box: box.id }, "reaping a box failed"));
      reaped.push(box.id);
    }
    const all = await this.#o.db
      .select({ id: schema.machines.id, state: schema.machines.state })
      .from(schema.machines);
    for (const m of all) {
      if (m.state !== "stopped" && !this.#live.has(m.id))
        await this.#setState(m.id, "stopped", "the box was gone after a server restart");
    }
    return { adopted, reaped };
  }

  /** Stops boxes idle for longer than idleMs: no exec, no generation, no terminal input. */
  async reapIdle(now = Date.now()): Promise<string[]> {
    const busy = new Set(this.#o.busyAgents());
    let busyMachines = new Set<string>();
    if (busy.size > 0) {
      const rows = await this.#o.db
        .select({ machineId: schema.agents.machineId })
        .from(schema.agents)
        .where(inArray(schema.agents.id, [...busy]));
      busyMachines = new Set(rows.map((r) => r.machineId));
    }
    const stopped: string[] = [];
    for (const [id, live] of this.#live) {
      if (live.liveExecs > 0 || busyMachines.has(id)) continue;
      if (now - live.lastActivity < this.#o.idleMs) continue;
      // a process a generation left running (a server it started) keeps the box busy
      const left = await live.boxd.ping().then(
        (p) => p.generationProcesses ?? 0,
        () => 0,
      );
      if (left > 0) continue;
      await this.stop(id, `idle for ${Math.round(this.#o.idleMs / 1000)} s`);
      stopped.push(id);
    }
    return stopped;
  }

  startIdleTimer(everyMs = Math.min(10_000, Math.max(250, this.#o.idleMs / 4))): void {
    this.#idleTimer = setInterval(() => {
      this.reapIdle().catch((err: unknown) => this.#o.logger.error({ err }, "idle check failed"));
    }, everyMs);
    this.#idleTimer.unref();
  }

  /** Stops every running box (`warren serve --stop-boxes`). */
  async stopAll(reason: string): Promise<void> {
    for (const id of [...this.#live.keys()])
      await this.stop(id, reason).catch((err: unknown) =>
        this.#o.logger.error({ err, machineId: id }, "stopping a box failed"),
      );
  }

  /** Samples running boxes' usage every `everyMs` and stops runaway command trees. */
  startHealth(everyMs: number): void {
    this.#health.start(everyMs);
  }

  /** Stops watching; boxes keep running so that the next server adopts them. */
  close(): void {
    if (this.#idleTimer) clearInterval(this.#idleTimer);
    this.#health.stop();
    for (const id of [...this.#live.keys()]) this.#drop(id);
  }
}

const messageOf = (e: unknown): string => (e instanceof Error ? e.message : String(e));

const unreachable = (e: unknown): boolean =>
  e instanceof WarrenError &&
  e.code === "box.unavailable" &&
  /cannot reach boxd|did not accept/.test(e.message);
