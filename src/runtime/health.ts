// Box health: live usage of every running box (read by the provider from the box's
// cgroups, never from inside the box), a box at its pids or memory limit and since when,
// and runaway command trees stopped and recorded. A command tree (one cgroup boxd made
// for one exec or run, with everything it left in the background) that holds the agents'
// cgroup at its pids or memory limit for longer than the machine's runaway_after_s, or
// that the OOM killer hits three times within that time, is killed as a whole; the box
// stays up and other command trees are left alone.
import { inArray } from "drizzle-orm";
import type { BoxProvider, BoxUsage, UsageSample } from "../boxes/index.js";
import type { Logger } from "../observability/log.js";
import type { Metrics } from "../observability/metrics.js";
import type { Db } from "../store/index.js";
import { schema } from "../store/index.js";

/** Who started a command tree, as far as the server knows. */
export interface CommandOwner {
  agentId: string;
  runId?: string | undefined;
  argv: string[];
}

export type LimitName = "pids" | "memory";

/** A runaway command tree the server stopped. */
export interface RunawayEvent {
  machineId: string;
  orgId: string;
  at: Date;
  limit: LimitName;
  /** `held`: at the limit for longer than allowed; `oom`: hit by the OOM killer repeatedly. */
  reason: "held" | "oom";
  heldS: number;
  command: string;
  owner: CommandOwner | undefined;
  pids: number;
  memoryBytes: number;
  oomKills: number;
  ended: number;
  detail: string;
}

export interface HealthNow {
  usage: { cpu_s: number; memory_bytes: number; memory_peak_bytes: number; pids: number } | null;
  at_limit?: { limit: LimitName; since: string };
}

/** The OOM kills of one command tree within runaway_after_s that make it a runaway. */
export const OOM_KILLS_RUNAWAY = 3;

interface MachineWatch {
  at: number;
  usage: BoxUsage;
  atLimit: { limit: LimitName; since: number } | undefined;
  oomSeen: Map<string, number>;
  oomTimes: Map<string, number[]>;
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

/** Which limit the agents' cgroup is at in this sample, given the one before. */
export function limitHeld(
  now: UsageSample,
  before: UsageSample | undefined,
  oomDelta: number,
): LimitName | null {
  if (now.pidsLimit !== null) {
    const hits = before !== undefined && now.pidsLimitHits > before.pidsLimitHits;
    if (now.pids >= now.pidsLimit - 1 || hits) return "pids";
  }
  if (now.memoryLimitBytes !== null) {
    if (oomDelta > 0) return "memory";
    // page cache is reclaimed at the limit (and counts as a hit on cgroup v1): only memory
    // that cannot be reclaimed (anonymous, tmpfs) near the limit is holding it
    const near = now.unreclaimableBytes >= now.memoryLimitBytes * 0.9;
    const hits = before !== undefined && now.memoryLimitHits > before.memoryLimitHits;
    if (near && hits) return "memory";
  }
  return null;
}

export class BoxHealth {
  readonly #o: HealthOptions;
  readonly #watch = new Map<string, MachineWatch>();
  #timer: NodeJS.Timeout | undefined;
  #running = false;

  constructor(o: HealthOptions) {
    this.#o = o;
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
  }

  /** One round: sample every running box, stop runaways, refresh the gauges. */
  async tick(now = Date.now()): Promise<RunawayEvent[]> {
    const o = this.#o;
    const live = o.live();
    const ids = live.map((l) => l.machineId);
    for (const id of this.#watch.keys()) if (!ids.includes(id)) this.#watch.delete(id);
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
      for (const name of [...w.oomSeen.keys()]) if (!present.has(name)) w.oomSeen.delete(name);
      for (const name of [...w.oomTimes.keys()]) if (!present.has(name)) w.oomTimes.delete(name);
      o.gone(l.machineId, present);

      const limit = limitHeld(usage.agents, before, oomDelta);
      if (!limit) w.atLimit = undefined;
      else if (w.atLimit?.limit !== limit) w.atLimit = { limit, since: now };
      w.at = now;
      w.usage = usage;
      this.#watch.set(l.machineId, w);

      // a tree the OOM killer keeps hitting
      for (const [name, times] of w.oomTimes) {
        if (times.length < OOM_KILLS_RUNAWAY) continue;
        const c = usage.commands.find((x) => x.name === name);
        if (!c) continue;
        const heldS = (now - (times[0] ?? now)) / 1000;
        events.push(await this.#stop(m, c, "memory", "oom", heldS, now));
        w.oomTimes.delete(name);
      }
      // a tree holding the box at a limit for too long
      if (w.atLimit && now - w.atLimit.since >= windowMs) {
        const key = w.atLimit.limit === "pids" ? "pids" : "memoryBytes";
        const victim = [...usage.commands].sort((a, b) => b[key] - a[key])[0];
        if (victim && victim[key] > 0) {
          const heldS = (now - w.atLimit.since) / 1000;
          events.push(await this.#stop(m, victim, w.atLimit.limit, "held", heldS, now));
          w.atLimit = undefined;
        }
      }
      seen.push({ machineId: l.machineId, orgId: m.orgId, usage, atLimit: w.atLimit !== undefined });
    }
    this.#gauges(seen);
    return events;
  }

  async #stop(
    m: { id: string; orgId: string; after: number },
    c: { name: string } & UsageSample,
    limit: LimitName,
    reason: "held" | "oom",
    heldS: number,
    now: number,
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
      reason === "oom"
        ? `was hit by the OOM killer ${OOM_KILLS_RUNAWAY} times within ${m.after} s`
        : `held the box at its ${limit} limit for ${round(heldS, 1)} s (allowed: ${m.after} s)`;
    const detail = `stopped ${who}: it ${why}; ${c.pids} processes, ${c.memoryBytes} bytes of memory${
      failure ? `; killing failed: ${failure}` : `; ${ended} processes ended`
    }`;
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
