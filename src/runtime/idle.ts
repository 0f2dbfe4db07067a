// Idling: a box with no exec, no generation and no terminal input for idleMs is stopped.
import { inArray } from "drizzle-orm";
import type { Logger } from "../observability/log.js";
import type { Db } from "../store/index.js";
import { schema } from "../store/index.js";
import type { LiveBoxes } from "./live.js";

export interface IdleOptions {
  db: Db;
  logger: Logger;
  idleMs: number;
  /** Agents with a generation running now (their machines are never idle). */
  busyAgents: () => string[];
  live: LiveBoxes;
  stop: (machineId: string, reason: string) => Promise<void>;
}

export class IdleReaper {
  #timer: NodeJS.Timeout | undefined;

  constructor(private readonly o: IdleOptions) {}

  /** Stops boxes idle for longer than idleMs: no exec, no generation, no terminal input. */
  async reap(now = Date.now()): Promise<string[]> {
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
      if (now - live.lastActivity < this.o.idleMs) continue;
      // a process a generation left running (a server it started) keeps the box busy
      const left = await live.boxd.ping().then(
        (p) => p.generationProcesses ?? 0,
        () => 0,
      );
      if (left > 0) continue;
      await this.o.stop(id, `idle for ${Math.round(this.o.idleMs / 1000)} s`);
      stopped.push(id);
    }
    return stopped;
  }

  start(everyMs = Math.min(10_000, Math.max(250, this.o.idleMs / 4))): void {
    this.#timer = setInterval(() => {
      this.reap().catch((err: unknown) => this.o.logger.error({ err }, "idle check failed"));
    }, everyMs);
    this.#timer.unref();
  }

  stop(): void {
    if (this.#timer) clearInterval(this.#timer);
  }
}
