// A machine's box over time, as services see it: one object over the parts that start and
// adopt boxes (lifecycle.ts), stop idle ones (idle.ts), reach boxd (reach.ts), keep the
// standing channels (channels.ts) and watch health (health.ts, events.ts).
import type { BoxHandle, BoxProvider } from "../boxes/index.js";
import type { Logger } from "../observability/log.js";
import type { Metrics } from "../observability/metrics.js";
import type { Db } from "../store/index.js";
import { StandingChannels, type BridgeHandler, type CallHandler } from "./channels.js";
import type { BoxView, MachineControl } from "./control.js";
import { BoxEvents } from "./events.js";
import type { BoxExec } from "./exec-port.js";
import { BoxHealth, type DiskWatcher, type RunawayEvent } from "./health.js";
import { IdleReaper } from "./idle.js";
import { BoxLifecycle } from "./lifecycle.js";
import { LiveBoxes } from "./live.js";
import { BoxdReach } from "./reach.js";
import type { EventBus } from "../events/index.js";

export type { BridgeHandler, CallHandler } from "./channels.js";

export interface RuntimeOptions {
  db: Db;
  provider: BoxProvider;
  logger: Logger;
  metrics: Metrics;
  /** Opens boxd on a running box. */
  connect: (box: BoxHandle) => BoxExec;
  /** `harness`: the host folder of the harness CLIs, bound read-only when it exists. */
  paths: { data: string; contracts: string; flows?: string; harness?: string; environments?: string };
  idleMs: number;
  /** Boxes idle this long are paused first (stopped at idleMs); unset or not below idleMs: never. */
  pauseMs?: number | undefined;
  tmpMib?: number;
  /** Agents with a generation running now (their machines are never idle). */
  busyAgents: () => string[];
  /** The agents' pids limit of every box (default 4096). */
  pids?: number;
  /** Warm boxes kept started for machines' first starts (BOX_WARM_POOL, default 0). */
  warmPool?: number;
  /** How often boxd is pinged so that it knows its server is there (default 10 s). */
  keepaliveMs?: number;
  /** Who answers agents' calls (warren-secret); each running box keeps a channel to it. */
  onCall?: CallHandler;
  /** Who takes connections on the boxes' bridges (BOX_BRIDGES); each running box keeps a channel to it. */
  onBridge?: BridgeHandler;
  /** Watches the homes' disk caps while commands run (src/homes/watch.ts); its stops go through health. */
  disk?: DiskWatcher | undefined;
  /** The record writer's redaction of an agent's values, for what machine events say of its commands. */
  redact?: <T>(agentId: string | undefined, value: T) => Promise<T>;
  /** Where a box's stop is told (box.stopped on the event bus). */
  events?: Pick<EventBus, "emit">;
}

export class MachineRuntime implements MachineControl {
  readonly #live = new LiveBoxes();
  readonly #events: BoxEvents;
  readonly #health: BoxHealth;
  readonly #lifecycle: BoxLifecycle;
  readonly #idle: IdleReaper;
  readonly #reach: BoxdReach;
  readonly #fullListeners: ((runId: string, detail: string) => void)[] = [];

  constructor(o: RuntimeOptions) {
    const live = this.#live;
    this.#events = new BoxEvents(o.db, o.redact);
    this.#health = new BoxHealth({
      db: o.db,
      provider: o.provider,
      logger: o.logger,
      metrics: o.metrics,
      keepaliveMs: o.keepaliveMs ?? 10_000,
      live: () => live.running().map(([machineId, l]) => ({ machineId, ping: () => l.boxd.ping() })),
      ownerOf: (machineId, command) => live.ownerOf(machineId, command),
      gone: (machineId, present) => live.keepOwners(machineId, present),
      onRunaway: (e) => this.#events.recordRunaway(e),
      disk: o.disk,
      onFull: (runId, detail) => {
        for (const fn of this.#fullListeners) fn(runId, detail);
      },
    });
    const channels = new StandingChannels({ live, logger: o.logger, onCall: o.onCall, onBridge: o.onBridge });
    this.#lifecycle = new BoxLifecycle(o, live, channels, this.#health);
    this.#idle = new IdleReaper({
      db: o.db,
      logger: o.logger,
      idleMs: o.idleMs,
      pauseMs: o.pauseMs,
      busyAgents: o.busyAgents,
      live,
      stop: (machineId, reason) => this.#lifecycle.stop(machineId, reason),
      pause: (machineId, reason) => this.#lifecycle.pause(machineId, reason),
    });
    this.#reach = new BoxdReach(live, this.#lifecycle);
  }

  // ---- health and events

  /** Called for every runaway command tree stopped (after it is recorded on the machine). */
  onRunaway(fn: (e: RunawayEvent) => Promise<void>): void {
    this.#events.onRunaway(fn);
  }

  /** Called, before the kill, for every run whose command tree is stopped for a disk cap. */
  onDiskFull(fn: (runId: string, detail: string) => void): void {
    this.#fullListeners.push(fn);
  }

  /** One health round now (tests and the timer). */
  checkHealth(now?: number): Promise<RunawayEvent[]> {
    return this.#health.tick(now);
  }

  /** The machine's box: state, usage now, the limit it is at, its latest events. */
  async box(machineId: string, state: BoxView["state"]): Promise<BoxView> {
    const now = this.#live.has(machineId) ? await this.#health.now(machineId) : { usage: null };
    return this.#events.view(machineId, state, now);
  }

  /** The usage of a command tree a run or exec started, while it exists. */
  commandUsage(machineId: string, command: string): ReturnType<BoxHealth["commandUsage"]> {
    return this.#health.commandUsage(machineId, command);
  }

  /** Samples running boxes' usage every `everyMs` and stops runaway command trees. */
  startHealth(everyMs: number): void {
    this.#health.start(everyMs);
  }

  // ---- starting, adopting, stopping

  /** The machine's boxd, starting the box first when it is not running. */
  ensure(machineId: string): Promise<BoxExec> {
    return this.#lifecycle.ensure(machineId);
  }

  isRunning(machineId: string): boolean {
    const live = this.#live.get(machineId);
    return live !== undefined && !live.paused;
  }

  stop(machineId: string, reason: string): Promise<void> {
    return this.#lifecycle.stop(machineId, reason);
  }

  /** Freezes the machine's running box in memory; the next command resumes it. */
  pause(machineId: string, reason: string): Promise<void> {
    return this.#lifecycle.pause(machineId, reason);
  }

  remove(machineId: string): Promise<void> {
    return this.#lifecycle.remove(machineId);
  }

  agentsChanged(machineId: string): Promise<void> {
    return this.#lifecycle.agentsChanged(machineId);
  }

  /**
   * At boot: adopt the live boxes of machines we know, reap every other box. With `later`, a
   * provider that does not answer leaves it for the next box start (`pending`).
   */
  recover(o: { later?: boolean } = {}): ReturnType<BoxLifecycle["recover"]> {
    return this.#lifecycle.recover(o);
  }

  /** Stops every running box (`warren serve --stop-boxes`). */
  stopAll(reason: string): Promise<void> {
    return this.#lifecycle.stopAll(reason);
  }

  // ---- idling

  /** Marks activity (exec, terminal input, generation) so the idle timer starts over. */
  touch(machineId: string): void {
    this.#live.touch(machineId);
  }

  /** Pauses boxes idle for pauseMs and stops those idle for idleMs: no exec, no generation, no terminal input. */
  reapIdle(now?: number): Promise<string[]> {
    return this.#idle.reap(now);
  }

  startIdleTimer(everyMs?: number): void {
    this.#idle.start(everyMs);
  }

  // ---- reaching boxd

  /** Runs a command in the machine's box, counted as activity (BoxdReach.exec: `owner` for runaways). */
  exec(...a: Parameters<BoxdReach["exec"]>): ReturnType<BoxdReach["exec"]> {
    return this.#reach.exec(...a);
  }

  /** Opens a terminal in the machine's box (an idle terminal does not keep the box up). */
  pty(...a: Parameters<BoxdReach["pty"]>): ReturnType<BoxdReach["pty"]> {
    return this.#reach.pty(...a);
  }

  /** A connection to a port of the machine's box. */
  forward(...a: Parameters<BoxdReach["forward"]>): ReturnType<BoxdReach["forward"]> {
    return this.#reach.forward(...a);
  }

  /** Fills the warm pool now (it also fills after recover() and after each claim). */
  fillWarm(): Promise<void> {
    return this.#lifecycle.warm.fill();
  }

  /** Warm boxes ready now. */
  get warmReady(): number {
    return this.#lifecycle.warm.ready;
  }

  /** Stops watching; boxes keep running so that the next server adopts them (warm ones are removed). */
  close(): void {
    void this.#lifecycle.warm.close();
    this.#idle.stop();
    this.#health.stop();
    for (const id of this.#live.ids()) this.#lifecycle.drop(id);
  }
}
