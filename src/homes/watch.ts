// Disk caps while commands run. The box health loop (src/runtime/health.ts) hands this watcher
// each sample's command trees and who started them; the homes of agents with a live tree are
// measured again and again (only those: a home nobody writes to is not walked), and a home
// that passes its cap while it grows, or a machine whose homes together pass the machine's
// cap while one of them grows, gets its agent's command trees stopped through the health
// loop's kill (frozen and killed as a whole), recorded as `workspace.full`.
//
// The bound: a home is measured again once the previous walk of it ended and at least
// max(BOX_HEALTH_MS, 4 x that walk's time) passed since the one before began (at most a fifth
// of one walker thread goes to a home, however large). Passing the cap is therefore seen
// within one interval plus one walk, and the trees are killed right then: the overshoot is at
// most the writer's rate times that (docs/homes.md, "Disk caps during a command").
import { eq } from "drizzle-orm";
import type { HomeLayout } from "../boxes/index.js";
import type { Logger } from "../observability/log.js";
import type { DiskFull } from "../runtime/index.js";
import type { Db } from "../store/index.js";
import { schema } from "../store/index.js";
import { existsSync } from "node:fs";
import { effectiveCap } from "./caps.js";
import { HomeMeter, toMib } from "./measure.js";

const MIB = 1024 * 1024;

/** A walk of a home takes at most this share of the time between two walks of it. */
export const WATCH_DUTY = 4;

/** A command tree of a box, and the agent who started it (when the server knows). */
export interface WatchedTree {
  name: string;
  agentId: string | undefined;
}

export interface DiskWatchOptions {
  db: Db;
  layout: HomeLayout;
  hostMaxMib: number;
  /** The agent's own /workspace folders, counted with its home (as DiskCaps does). */
  workspaceDir?: (machineId: string, agentId: string) => string;
  /** The shortest time between two walks of one home (BOX_HEALTH_MS). */
  intervalMs: number;
  logger: Logger;
  /** Its own meter (one walker thread, so the gates' measurements never wait behind it). */
  meter?: HomeMeter;
}

interface HomeWatch {
  /** Allocated bytes at the last walk. */
  bytes: number;
  /** The sample the last walk was made for (its time), and how long the walk took. */
  startedAt: number;
  walkMs: number;
}

export class DiskWatch {
  readonly #o: DiskWatchOptions;
  readonly #meter: HomeMeter;
  /** By machine: the trees of its last sample, and its homes' last walks (by agent). */
  readonly #trees = new Map<string, WatchedTree[]>();
  readonly #homes = new Map<string, Map<string, HomeWatch>>();
  readonly #checking = new Set<string>();
  #stop: ((full: DiskFull) => Promise<void>) | undefined;
  #closed = false;
  #warm = false;

  constructor(o: DiskWatchOptions) {
    this.#o = o;
    this.#meter = o.meter ?? new HomeMeter({ threads: 1, timeoutMs: 60_000 });
  }

  /** Who stops a full home's trees (the health loop). */
  bind(stop: (full: DiskFull) => Promise<void>): void {
    this.#stop = stop;
  }

  /**
   * One sample of a box: its command trees now. Starts a check of the machine's homes with
   * live trees when none is going on (it never waits for one: the health loop goes on).
   */
  observe(machineId: string, trees: WatchedTree[], now = Date.now()): void {
    if (this.#closed) return;
    // the walker starts with the first box seen, so that the first walk does not wait for it
    if (!this.#warm) {
      this.#warm = true;
      this.#meter.warm();
    }
    const live = trees.filter((t) => t.agentId !== undefined);
    if (live.length === 0) {
      this.forget(machineId);
      return;
    }
    this.#trees.set(machineId, live);
    if (this.#checking.has(machineId)) return;
    this.#checking.add(machineId);
    this.#check(machineId, now)
      .catch((err: unknown) => this.#o.logger.warn({ err, machineId }, "watching the disk caps failed"))
      .finally(() => this.#checking.delete(machineId));
  }

  /** The machine's box is gone or has no command tree: nothing of it is watched. */
  forget(machineId: string): void {
    this.#trees.delete(machineId);
    this.#homes.delete(machineId);
  }

  async close(): Promise<void> {
    this.#closed = true;
    await this.#meter.close();
  }

  async #check(machineId: string, now: number): Promise<void> {
    const o = this.#o;
    const trees = this.#trees.get(machineId) ?? [];
    const liveAgents = new Set(trees.map((t) => t.agentId));
    let homes = this.#homes.get(machineId);
    if (!homes) this.#homes.set(machineId, (homes = new Map()));
    for (const id of [...homes.keys()]) if (!liveAgents.has(id)) homes.delete(id);
    // a live home is due once its interval passed; none due: no walk, and no read of the store
    const due = (id: string | undefined): boolean => {
      const last = id === undefined ? undefined : homes.get(id);
      return !last || now - last.startedAt >= Math.max(o.intervalMs, WATCH_DUTY * last.walkMs);
    };
    if (![...liveAgents].some(due)) return;
    const [machine] = await o.db
      .select({
        name: schema.machines.name,
        orgId: schema.machines.orgId,
        max: schema.machines.maxWorkspaceMib,
      })
      .from(schema.machines)
      .where(eq(schema.machines.id, machineId));
    if (!machine) return;
    const agents = await o.db
      .select({
        id: schema.agents.id,
        name: schema.agents.name,
        max: schema.agents.maxWorkspaceMib,
        stored: schema.agents.workspaceMib,
      })
      .from(schema.agents)
      .where(eq(schema.agents.machineId, machineId));

    // each live home that is due: walked now; the others keep their last figure
    const grew = new Map<string, { bytes: number; was: number }>();
    for (const a of agents) {
      if (!liveAgents.has(a.id) || !due(a.id)) continue;
      const last = homes.get(a.id);
      const began = Date.now();
      const bytes = await this.#measure(machineId, a.id);
      if (bytes === undefined || this.#closed) continue;
      homes.set(a.id, { bytes, startedAt: now, walkMs: Date.now() - began });
      const was = last?.bytes ?? (a.stored ?? 0) * MIB;
      if (bytes > was) grew.set(a.id, { bytes, was });
    }
    if (grew.size === 0) return;

    const full: DiskFull[] = [];
    let total = 0;
    for (const a of agents) total += homes.get(a.id)?.bytes ?? (a.stored ?? 0) * MIB;
    for (const a of agents) {
      const g = grew.get(a.id);
      if (!g) continue;
      const cap = effectiveCap(a.max, o.hostMaxMib);
      const why =
        g.bytes > cap * MIB
          ? `agent ${a.name}'s home grew to ${toMib(g.bytes)} MiB while its commands ran, above its ${cap} MiB limit`
          : total > machine.max * MIB
            ? `machine ${machine.name}'s folder grew to ${toMib(total)} MiB while agent ${a.name}'s commands wrote to its home, above the machine's ${machine.max} MiB limit`
            : undefined;
      if (why === undefined) continue;
      const names = (this.#trees.get(machineId) ?? []).filter((t) => t.agentId === a.id).map((t) => t.name);
      full.push({
        machineId,
        orgId: machine.orgId,
        agentId: a.id,
        trees: names,
        detail: `workspace.full: ${why}; its command trees were stopped; free space from the terminal (or exec) or raise the limit`,
      });
      // the next generation's gate sees the size at once
      await o.db
        .update(schema.agents)
        .set({ workspaceMib: toMib(g.bytes) })
        .where(eq(schema.agents.id, a.id));
    }
    if (full.length > 0 && total > machine.max * MIB)
      await o.db
        .update(schema.machines)
        .set({ workspaceMib: toMib(total) })
        .where(eq(schema.machines.id, machineId));
    for (const f of full) if (f.trees.length > 0) await this.#stop?.(f);
  }

  /** The home's allocated bytes with its per-agent workspace; undefined when it cannot be measured. */
  async #measure(machineId: string, agentId: string): Promise<number | undefined> {
    const o = this.#o;
    try {
      const home = await this.#meter.measure(o.layout.homeDir(machineId, agentId));
      const ws = o.workspaceDir?.(machineId, agentId);
      const extra = ws !== undefined && existsSync(ws) ? (await this.#meter.measure(ws)).bytes : 0;
      return home.bytes + extra;
    } catch (err) {
      o.logger.warn({ err, machineId, agentId }, "a home could not be measured while its commands ran");
      return undefined;
    }
  }
}
