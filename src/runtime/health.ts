// Box health: live usage of every running box (read by the provider from the box's
// cgroups, never from inside the box), a box at its pids or memory limit and since when,
// and runaway command trees stopped and recorded. A command tree (one cgroup boxd made
// for one exec or run, with everything it left in the background) is a runaway when, for
// longer than the machine's runaway_after_s, it holds the agents' cgroup at (within a
// margin of) its pids limit or at its memory limit, or keeps having forks refused, or
// when the OOM killer hits it three times within that time. It is frozen and killed as a
// whole; the box stays up and other command trees (a server left running) are left alone.
//
// The pids rule: "at the limit" is within max(8, 1 %) of the agents' pids.max, or a fork
// refused since the last look in any cgroup of the box (cgroup v1 counts a refusal in
// the forking task's own cgroup, v2 in the one whose limit was hit and its parents: both
// are read). It clears only once the count has stayed well below the limit, with no fork
// refused, for CALM_MS: a count that wobbles around the limit does not restart the clock.
//
// Disk: each sample's trees and their owners go to the disk watcher (src/homes/watch.ts),
// which measures the homes with live trees and has the trees of a home (or machine) that
// passed its cap while growing stopped here, the same way, as `disk` / `full`.
import { inArray } from "drizzle-orm";
import type { BoxProvider, BoxUsage, UsageSample } from "../boxes/index.js";
import type { Logger } from "../observability/log.js";
import type { Metrics } from "../observability/metrics.js";
import type { Db } from "../store/index.js";
import {
  CALM_MS,
  climbRunaway,
  limitHeld,
  nextClimb,
  nextPressure,
  OOM_KILLS_RUNAWAY,
  pidsMargin,
  pidsShare,
  type ClimbWatch,
  type LimitName,
  type Pressure,
} from "./health-rules.js";
import { schema } from "../store/index.js";

/** Who started a command tree, as far as the server knows. */
export interface CommandOwner {
  agentId: string;
  runId?: string | undefined;
  argv: string[];
}

export type RunawayReason = "held" | "forks" | "oom" | "full";

/** A home or machine past its disk cap while commands ran: the agent's trees to stop, and why. */
export interface DiskFull {
  machineId: string;
  orgId: string;
  agentId: string;
  trees: string[];
  /** Starts with `workspace.full:`. */
  detail: string;
}

/** What watches the homes' disk caps while commands run (src/homes/watch.ts). */
export interface DiskWatcher {
  observe(machineId: string, trees: { name: string; agentId: string | undefined }[], now: number): void;
  forget(machineId: string): void;
  bind(stop: (full: DiskFull) => Promise<void>): void;
  close?(): Promise<void>;
}

/** A runaway command tree the server stopped. */
export interface RunawayEvent {
  machineId: string;
  orgId: string;
  at: Date;
  limit: LimitName | "disk";
  /**
   * `held`: at the limit for longer than allowed; `forks`: its forks kept being refused
   * for longer than allowed; `oom`: hit by the OOM killer repeatedly; `full`: its agent's
   * home (or its machine's folder) passed its disk cap while it ran (limit `disk`).
   */
  reason: RunawayReason;
  heldS: number;
  command: string;
  owner: CommandOwner | undefined;
  pids: number;
  memoryBytes: number;
  oomKills: number;
  /** Forks refused in the tree's own cgroup (its pids.events `max`). */
  forkFailures: number;
  ended: number;
  detail: string;
}

export interface HealthNow {
  usage: { cpu_s: number; memory_bytes: number; memory_peak_bytes: number; pids: number } | null;
  at_limit?: { limit: LimitName; since: string };
}

/** Refused forks of one command tree: the last counter, and since when they keep coming. */
interface ForkWatch {
  seen: number;
  since?: number | undefined;
  last?: number | undefined;
}

/** A stopped tree's refusals are over; its counter is kept (its folder may linger, emptied). */
function calmForks(w: MachineWatch, name: string): void {
  const f = w.forks.get(name);
  if (f) f.since = f.last = undefined;
}

interface MachineWatch {
  at: number;
  usage: BoxUsage;
  atLimit: Pressure | undefined;
  oomSeen: Map<string, number>;
  oomTimes: Map<string, number[]>;
  forks: Map<string, ForkWatch>;
  climbs: Map<string, ClimbWatch>;
  /**
   * Trees already stopped: never judged again. Their folder can linger, emptied, and the
   * kill itself (pids.max 0) refuses the forks of what was still dying, which would look
   * like a tree at its own limit whose forks keep being refused.
   */
  killed: Set<string>;
  lastPing: number;
}

export interface HealthOptions {
  db: Db;
  provider: BoxProvider;
  logger: Logger;
  metrics: Metrics;
  /** Running boxes now, with a ping (keeps boxd from thinking its server is gone). */
  live: () => { machineId: string; ping: () => Promise<unknown> }[];
  ownerOf: (machineId: string, command: string) => CommandOwner | undefined;
  /** Command trees that exist no more (their owners can be forgotten). */
  gone: (machineId: string, present: Set<string>) => void;
  onRunaway: (e: RunawayEvent) => Promise<void>;
  /** How often boxd is pinged (it stops its box after BOX_ORPHAN_S without the server). */
  keepaliveMs: number;
  /** Told each sample's trees; stops the trees of a home past its disk cap through this loop. */
  disk?: DiskWatcher | undefined;
  /** Told of a run whose tree is stopped for a disk cap, before the kill (its end is then workspace.full). */
  onFull?: (runId: string, detail: string) => void;
}

const round = (n: number, digits = 3): number => Math.round(n * 10 ** digits) / 10 ** digits;

export function usageView(u: UsageSample): NonNullable<HealthNow["usage"]> {
  return {
    cpu_s: round(u.cpuSeconds),
    memory_bytes: u.memoryBytes,
    memory_peak_bytes: u.memoryPeakBytes,
    pids: u.pids,
  };
}

export class BoxHealth {
  readonly #o: HealthOptions;
  readonly #watch = new Map<string, MachineWatch>();
  #timer: NodeJS.Timeout | undefined;
  #running = false;

  constructor(o: HealthOptions) {
    this.#o = o;
    o.disk?.bind((full) => this.#stopFull(full));
  }

  /** Stops the trees of an agent whose home (or machine) passed its disk cap while they ran. */
  async #stopFull(f: DiskFull): Promise<void> {
    const w = this.#watch.get(f.machineId);
    if (!w) return;
    for (const name of f.trees) {
      const c = w.usage.commands.find((x) => x.name === name);
      if (!c || w.killed.has(name)) continue;
      w.killed.add(name);
      const runId = this.#o.ownerOf(f.machineId, name)?.runId;
      if (runId !== undefined) this.#o.onFull?.(runId, f.detail);
      const m = { id: f.machineId, orgId: f.orgId, after: 0 };
      await this.#stop(m, c, "disk", "full", 0, Date.now(), undefined, f.detail);
    }
  }

  /** Usage and limit state of a machine's box now (from the last sample when it is fresh). */
  async now(machineId: string, maxAgeMs = 2000): Promise<HealthNow> {
    const w = this.#watch.get(machineId);
    let usage: BoxUsage | null = w && Date.now() - w.at <= maxAgeMs ? w.usage : null;
    if (!usage) usage = await this.#o.provider.usage(machineId).catch(() => null);
    if (!usage) return { usage: null };
    const out: HealthNow = { usage: usageView(usage.box) };
    if (w?.atLimit) out.at_limit = { limit: w.atLimit.limit, since: new Date(w.atLimit.since).toISOString() };
    return out;
  }

  /** The usage of one command tree, when it still exists. */
  commandUsage(machineId: string, command: string): HealthNow["usage"] {
    const c = this.#watch.get(machineId)?.usage.commands.find((x) => x.name === command);
    return c ? usageView(c) : null;
  }

  forget(machineId: string): void {
    this.#watch.delete(machineId);
  }

  start(everyMs: number): void {
    this.#timer = setInterval(() => {
      if (this.#running) return;
      this.#running = true;
      this.tick()
        .catch((err: unknown) => this.#o.logger.error({ err }, "box health check failed"))
        .finally(() => {
          this.#running = false;
        });
    }, everyMs);
    this.#timer.unref();
  }

  stop(): void {
    if (this.#timer) clearInterval(this.#timer);
    void this.#o.disk?.close?.();
  }

  /** One round: sample every running box, stop runaways, refresh the gauges. */
  async tick(now = Date.now()): Promise<RunawayEvent[]> {
    const o = this.#o;
    const live = o.live();
    const ids = live.map((l) => l.machineId);
    for (const id of this.#watch.keys())
      if (!ids.includes(id)) {
        this.#watch.delete(id);
        o.disk?.forget(id);
      }
    if (ids.length === 0) {
      this.#gauges([]);
      return [];
    }
    const rows = await o.db
      .select({ id: schema.machines.id, orgId: schema.machines.orgId, after: schema.machines.runawayAfterS })
      .from(schema.machines)
      .where(inArray(schema.machines.id, ids));
    const byId = new Map(rows.map((r) => [r.id, r]));
    const events: RunawayEvent[] = [];
    const seen: { machineId: string; orgId: string; usage: BoxUsage; atLimit: boolean }[] = [];
    for (const l of live) {
      const m = byId.get(l.machineId);
      if (!m) continue;
      const usage = await o.provider.usage(l.machineId).catch(() => null);
      const prev = this.#watch.get(l.machineId);
      if (now - (prev?.lastPing ?? 0) >= o.keepaliveMs) l.ping().catch(() => undefined);
      if (!usage) continue;
      const w: MachineWatch = prev ?? {
        at: now,
        usage,
        atLimit: undefined,
        oomSeen: new Map(),
        oomTimes: new Map(),
        forks: new Map(),
        climbs: new Map(),
        killed: new Set(),
        lastPing: now,
      };
      if (now - w.lastPing >= o.keepaliveMs) w.lastPing = now;
      const before = prev?.usage.agents;
      const windowMs = m.after * 1000;
      // OOM kills per command tree, within the machine's window
      let oomDelta = 0;
      const present = new Set(usage.commands.map((c) => c.name));
      for (const c of usage.commands) {
        const was = w.oomSeen.get(c.name) ?? 0;
        const delta = Math.max(0, c.oomKills - was);
        w.oomSeen.set(c.name, c.oomKills);
        if (delta === 0) continue;
        oomDelta += delta;
        const times = (w.oomTimes.get(c.name) ?? []).filter((t) => now - t <= windowMs);
        for (let i = 0; i < delta; i++) times.push(now);
        w.oomTimes.set(c.name, times);
      }
      // refused forks per command tree (cgroup v1 counts them where the fork was tried)
      let forkDelta = 0;
      for (const c of usage.commands) {
        const f = w.forks.get(c.name) ?? { seen: 0 };
        const delta = Math.max(0, c.pidsLimitHits - f.seen);
        f.seen = c.pidsLimitHits;
        if (delta > 0) {
          // a tree refused at a tighter limit of its own does not say the box is full
          const own = c.pidsLimit !== null && c.pids >= c.pidsLimit - pidsMargin(c.pidsLimit);
          if (!own) forkDelta += delta;
          f.since ??= now;
          f.last = now;
        } else if (f.last !== undefined && now - f.last >= CALM_MS) {
          f.since = f.last = undefined;
        }
        w.forks.set(c.name, f);
      }
      // trees holding a share of the pids limit, and since when
      const agentsLimit = usage.agents.pidsLimit;
      for (const c of usage.commands) {
        const next =
          agentsLimit === null ? undefined : nextClimb(w.climbs.get(c.name), c.pids, agentsLimit, now);
        if (next) w.climbs.set(c.name, next);
        else w.climbs.delete(c.name);
      }
      for (const map of [w.oomSeen, w.oomTimes, w.forks, w.climbs])
        for (const name of [...map.keys()]) if (!present.has(name)) map.delete(name);
      for (const name of w.killed) if (!present.has(name)) w.killed.delete(name);
      o.gone(l.machineId, present);
      o.disk?.observe(
        l.machineId,
        usage.commands
          .filter((c) => !w.killed.has(c.name))
          .map((c) => ({ name: c.name, agentId: o.ownerOf(l.machineId, c.name)?.agentId })),
        now,
      );

      const limit = limitHeld(usage.agents, before, oomDelta, forkDelta);
      w.atLimit = nextPressure(w.atLimit, limit, usage.agents, now);
      w.at = now;
      w.usage = usage;
      this.#watch.set(l.machineId, w);

      // a tree the OOM killer keeps hitting
      for (const [name, times] of w.oomTimes) {
        if (times.length < OOM_KILLS_RUNAWAY || w.killed.has(name)) continue;
        const c = usage.commands.find((x) => x.name === name);
        if (!c) continue;
        const heldS = (now - (times[0] ?? now)) / 1000;
        events.push(await this.#stop(m, c, "memory", "oom", heldS, now));
        w.oomTimes.delete(name);
      }
      const stopped = new Set(w.killed);
      for (const e of events) if (e.machineId === m.id) stopped.add(e.command);
      // a tree climbing toward the pids limit for the whole window: stopped from where its
      // climb began, not from when it reached the limit (a bomb's forks can take longer to
      // get there than the window itself on a loaded host)
      if (agentsLimit !== null) {
        const boxAtPids = w.atLimit?.limit === "pids" && w.atLimit.calmSince === undefined;
        for (const [name, climb] of w.climbs) {
          const c = usage.commands.find((x) => x.name === name);
          if (!c || stopped.has(name) || !climbRunaway(climb, c.pids, agentsLimit, boxAtPids, windowMs, now))
            continue;
          events.push(await this.#stop(m, c, "pids", "held", (now - climb.since) / 1000, now, climb.low));
          stopped.add(name);
          calmForks(w, name);
          w.climbs.delete(name);
        }
        if (w.atLimit?.limit === "pids" && stopped.size > 0) w.atLimit = undefined;
      }
      // trees holding the box at a limit for too long
      // (not while the box is calming down: what held it may have ended by itself)
      if (w.atLimit && w.atLimit.calmSince === undefined && now - w.atLimit.since >= windowMs) {
        const heldS = (now - w.atLimit.since) / 1000;
        const victims = this.#victims(w, usage, w.atLimit.limit).filter((c) => !stopped.has(c.name));
        for (const c of victims) {
          events.push(await this.#stop(m, c, w.atLimit.limit, "held", heldS, now));
          stopped.add(c.name);
          calmForks(w, c.name);
        }
        if (victims.length) w.atLimit = undefined;
      }
      // a tree whose forks keep being refused (at the box's limit or its own) for too long
      for (const [name, f] of w.forks) {
        if (f.since === undefined || now - f.since < windowMs || stopped.has(name)) continue;
        const c = usage.commands.find((x) => x.name === name);
        if (!c || c.pids === 0) continue;
        const holdsBox = agentsLimit !== null && c.pids >= pidsShare(agentsLimit);
        const atOwn = c.pidsLimit !== null && c.pids >= c.pidsLimit - pidsMargin(c.pidsLimit);
        if (!holdsBox && !atOwn) continue; // refused because others filled the box: not its doing
        events.push(await this.#stop(m, c, "pids", "forks", (now - f.since) / 1000, now));
        stopped.add(name);
        calmForks(w, name);
      }
      for (const e of events) if (e.machineId === m.id) w.killed.add(e.command);
      seen.push({ machineId: l.machineId, orgId: m.orgId, usage, atLimit: w.atLimit !== undefined });
    }
    this.#gauges(seen);
    return events;
  }

  /**
   * The trees to stop for a limit held too long. Memory: the one using the most. Pids: the
   * one with the most processes, and every other whose forks are being refused, each only
   * when it holds a share of the limit (pidsShare): a small tree (a server) is never one.
   */
  #victims(w: MachineWatch, usage: BoxUsage, limit: LimitName): ({ name: string } & UsageSample)[] {
    if (limit === "memory") {
      const top = [...usage.commands].sort((a, b) => b.memoryBytes - a.memoryBytes)[0];
      return top && top.memoryBytes > 0 ? [top] : [];
    }
    const byPids = [...usage.commands].sort((a, b) => b.pids - a.pids);
    const top = byPids[0];
    const max = usage.agents.pidsLimit;
    if (!top || max === null || top.pids < pidsShare(max)) return [];
    const failing = byPids.filter(
      (c) => c !== top && c.pids >= pidsShare(max) && w.forks.get(c.name)?.since !== undefined,
    );
    return [top, ...failing];
  }

  async #stop(
    m: { id: string; orgId: string; after: number },
    c: { name: string } & UsageSample,
    limit: LimitName | "disk",
    reason: RunawayReason,
    heldS: number,
    now: number,
    /** For a climb: the fewest processes the tree held since it reached a share of the limit. */
    climbedFrom?: number,
    /** For a disk cap: what passed it (the watcher's `workspace.full: ...`). */
    full?: string,
  ): Promise<RunawayEvent> {
    const o = this.#o;
    const owner = o.ownerOf(m.id, c.name);
    let ended = 0;
    let failure: string | null = null;
    try {
      ended = await o.provider.killCommand(m.id, c.name);
    } catch (err) {
      failure = err instanceof Error ? err.message : String(err);
    }
    const who = owner
      ? `${owner.runId ? `run ${owner.runId}` : "an exec"} of agent ${owner.agentId} (${JSON.stringify(owner.argv.join(" ").slice(0, 200))})`
      : `command tree ${c.name}`;
    const why =
      full !== undefined
        ? `wrote to a home past its disk cap (${full})`
        : reason === "oom"
          ? `was hit by the OOM killer ${OOM_KILLS_RUNAWAY} times within ${m.after} s`
          : reason === "forks"
            ? `kept having its forks refused for ${round(heldS, 1)} s (allowed: ${m.after} s)`
            : climbedFrom !== undefined
              ? `held a tenth or more of the box's pids limit for ${round(heldS, 1)} s (allowed: ${m.after} s), climbing from ${climbedFrom} to ${c.pids} processes`
              : `held the box at its ${limit} limit for ${round(heldS, 1)} s (allowed: ${m.after} s)`;
    const detail = `stopped ${who}: it ${why}; ${c.pids} processes, ${c.memoryBytes} bytes of memory, ${
      c.pidsLimitHits
    } forks refused${failure ? `; freezing and killing failed: ${failure}` : `; frozen and killed: ${ended} processes ended`}`;
    const e: RunawayEvent = {
      machineId: m.id,
      orgId: m.orgId,
      at: new Date(now),
      limit,
      reason,
      heldS: round(heldS, 1),
      command: c.name,
      owner,
      pids: c.pids,
      memoryBytes: c.memoryBytes,
      oomKills: c.oomKills,
      forkFailures: c.pidsLimitHits,
      ended,
      detail,
    };
    o.logger.warn({ machineId: m.id, command: c.name, limit, reason, runId: owner?.runId }, detail);
    o.metrics.boxRunaways.inc({ machine: m.id, org: m.orgId, limit });
    await o.onRunaway(e).catch((err: unknown) => o.logger.error({ err }, "recording a runaway failed"));
    return e;
  }

  #gauges(seen: { machineId: string; orgId: string; usage: BoxUsage; atLimit: boolean }[]): void {
    const g = this.#o.metrics;
    for (const gauge of [g.boxCpu, g.boxMemory, g.boxMemoryPeak, g.boxPids, g.boxAtLimit]) gauge.reset();
    for (const s of seen) {
      const labels = { machine: s.machineId, org: s.orgId };
      g.boxCpu.set(labels, round(s.usage.box.cpuSeconds));
      g.boxMemory.set(labels, s.usage.box.memoryBytes);
      g.boxMemoryPeak.set(labels, s.usage.box.memoryPeakBytes);
      g.boxPids.set(labels, s.usage.box.pids);
      g.boxAtLimit.set(labels, s.atLimit ? 1 : 0);
    }
  }
}
