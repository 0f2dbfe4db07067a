// Idling: a box with no exec, no generation and no terminal input for pauseMs is paused
// (frozen in memory, resumed by the next command), and stopped once idle for idleMs.
import { inArray } from "drizzle-orm";
import type { Logger } from "../observability/log.js";
import type { Db } from "../store/index.js";
import { schema } from "../store/index.js";
import type { LiveBoxes } from "./live.js";

export interface IdleOptions {
  db: Db;
  logger: Logger;
  idleMs: number;
  /** Pause first after this long idle; unset, 0 or not below idleMs: never pause. */
  pauseMs?: number | undefined;
  /** Agents with a generation running now (their machines are never idle). */
  busyAgents: () => string[];
  live: LiveBoxes;
  stop: (machineId: string, reason: string) => Promise<void>;
  pause: (machineId: string, reason: string) => Promise<void>;
}

export class IdleReaper {
  #timer: NodeJS.Timeout | undefined;

  constructor(private readonly o: IdleOptions) {}

  /**
   * Pauses boxes idle for pauseMs and stops those idle for idleMs (paused ones too): no
   * exec, no generation, no terminal input. The machines stopped or paused.
   */
  async reap(now = Date.now()): Promise<string[]> {
    const pauseMs = this.o.pauseMs && this.o.pauseMs < this.o.idleMs ? this.o.pauseMs : null;
    const busy = new Set(this.o.busyAgents());
    let busyMachines = new Set<string>();
    if (busy.size > 0) {
      const rows = await this.o.db
        .select({ machineId: schema.agents.machineId })
        .from(schema.agents)
        .where(inArray(schema.agents.id, [...busy]));
      busyMachines = new Set(rows.map((r) => r.machineId));
    }
    const stopped: string[] = [];
    for (const [id, live] of this.o.live.entries()) {
      if (live.liveExecs > 0 || busyMachines.has(id)) continue;
      const idle = now - live.lastActivity;
      if (live.paused) {
        // what it ran was checked when it was paused: a frozen box cannot start anything
        if (idle < this.o.idleMs) continue;
        await this.o.stop(id, `idle for ${Math.round(this.o.idleMs / 1000)} s`);
        stopped.push(id);
        continue;
      }
      const stopNow = idle >= this.o.idleMs;
      if (!stopNow && (pauseMs === null || idle < pauseMs)) continue;
      // an open terminal is not frozen (it would answer its user nothing): stopped at idleMs
      if (!stopNow && (live.openPtys ?? 0) > 0) continue;
      // a process a generation left running (a server it started) keeps the box busy
      const left = await live.boxd.ping().then(
        (p) => p.generationProcesses ?? 0,
        () => 0,
      );
      if (left > 0) continue;
      if (!stopNow) await this.o.pause(id, `idle for ${Math.round((pauseMs ?? 0) / 1000)} s`);
      else await this.o.stop(id, `idle for ${Math.round(this.o.idleMs / 1000)} s`);
      stopped.push(id);
    }
    return stopped;
  }

  start(
    everyMs = Math.min(10_000, Math.max(250, Math.min(this.o.idleMs, this.o.pauseMs || Infinity) / 4)),
  ): void {
    this.#timer = setInterval(() => {
      this.reap().catch((err: unknown) => this.o.logger.error({ err }, "idle check failed"));
    }, everyMs);
    this.#timer.unref();
  }

  stop(): void {
    if (this.#timer) clearInterval(this.#timer);
  }
}
