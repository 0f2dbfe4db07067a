// Starting, adopting and stopping machines' boxes. The database's state column follows
// every transition, with its reason and time; a machine never has two boxes.
import { existsSync, mkdirSync } from "node:fs";
import { eq, inArray, sql } from "drizzle-orm";
import {
  BOX_BRIDGES,
  BOX_PATHS,
  gpuDevices,
  type BoxHandle,
  type BoxProvider,
  type BoxSpec,
} from "../boxes/index.js";
import { WarrenError } from "../errors.js";
import type { Logger } from "../observability/log.js";
import type { Metrics } from "../observability/metrics.js";
import type { Db } from "../store/index.js";
import { schema } from "../store/index.js";
import type { StandingChannels } from "./channels.js";
import type { BoxExec } from "./exec-port.js";
import type { BoxHealth } from "./health.js";
import type { Live, LiveBoxes } from "./live.js";
import { WARM_LABEL, WarmPool } from "./warm.js";
import type { EventBus } from "../events/index.js";

/** The tier of a warm box until it is claimed (a claim gives it its machine's limits). */
const MACHINE_WARM = { memoryMib: 2048, cpus: 1 };

export interface LifecycleOptions {
  db: Db;
  provider: BoxProvider;
  logger: Logger;
  metrics: Metrics;
  /** Opens boxd on a running box. */
  connect: (box: BoxHandle) => BoxExec;
  /** `harness`: the host folder of the harness CLIs, bound read-only when it exists. */
  paths: {
    data: string;
    contracts: string;
    flows?: string | undefined;
    harness?: string | undefined;
    /** Machines' environment layers, bound read-only at /opt/warren/env (made when absent). */
    environments?: string | undefined;
  };
  tmpMib?: number | undefined;
  /** The agents' pids limit of every box (default 4096). */
  pids?: number | undefined;
  /** Warm boxes kept started for machines' first starts (default 0: none). */
  warmPool?: number | undefined;
  /** Where a box's stop is told (box.stopped): the turns and terminals in it end. */
  events?: Pick<EventBus, "emit"> | undefined;
}

type MachineRow = typeof schema.machines.$inferSelect;

export class BoxLifecycle {
  readonly warm: WarmPool;
  /** The provider did not answer at boot: the last server's boxes are taken back at the next start. */
  #adoptionPending = false;
  #adopting: Promise<void> | null = null;

  constructor(
    private readonly o: LifecycleOptions,
    private readonly live: LiveBoxes,
    private readonly channels: StandingChannels,
    private readonly health: BoxHealth,
  ) {
    this.warm = new WarmPool({
      provider: o.provider,
      logger: o.logger,
      size: o.warmPool ?? 0,
      specFor: (id) => {
        const spec = this.specFor({
          id,
          orgId: "warm",
          memoryMib: MACHINE_WARM.memoryMib,
          cpus: MACHINE_WARM.cpus,
        });
        return { ...spec, labels: { ...spec.labels, [WARM_LABEL]: "1" } };
      },
    });
  }

  /** Tells whenever a machine's box is stopped (idle, by a request, gone), with the reason. */
  #stopped(machineId: string, reason: string): void {
    this.o.events?.emit("box.stopped", { machineId, reason });
  }

  /** Forgets the box: its channels and its boxd client close (the box itself keeps running). */
  drop(machineId: string): void {
    const live = this.live.delete(machineId);
    this.health.forget(machineId);
    live?.calls?.close();
    live?.bridges?.close();
    live?.boxd.close();
  }

  async #setState(machineId: string, state: MachineRow["state"], reason: string): Promise<void> {
    await this.o.db
      .update(schema.machines)
      .set({ state, stateReason: reason, stateChangedAt: new Date() })
      .where(eq(schema.machines.id, machineId));
  }

  specFor(
    m: Pick<MachineRow, "id" | "orgId" | "memoryMib" | "cpus"> & Partial<Pick<MachineRow, "image" | "gpu">>,
  ): BoxSpec {
    const { provider, paths } = this.o;
    if (paths.environments && !existsSync(paths.environments))
      mkdirSync(paths.environments, { recursive: true, mode: 0o755 });
    return {
      id: m.id,
      labels: {
        "warren.kind": "machine",
        "warren.org": m.orgId,
        "warren.machine": m.id,
        "warren.provider": provider.name,
      },
      mounts: [
        { kind: "bind", source: provider.homes.machineDir(m.id), target: BOX_PATHS.homes, readOnly: false },
        { kind: "bind", source: paths.data, target: BOX_PATHS.data, readOnly: true },
        { kind: "bind", source: paths.contracts, target: BOX_PATHS.contracts, readOnly: true },
        // flow instances' workspaces: each bound at /workspace for its own agents' commands only
        ...(paths.flows
          ? [{ kind: "bind" as const, source: paths.flows, target: BOX_PATHS.flows, readOnly: false }]
          : []),
        ...(paths.environments
          ? [{ kind: "bind" as const, source: paths.environments, target: BOX_PATHS.env, readOnly: true }]
          : []),
        ...(paths.harness && existsSync(paths.harness)
          ? [{ kind: "bind" as const, source: paths.harness, target: BOX_PATHS.harness, readOnly: true }]
          : []),
        { kind: "tmpfs", target: BOX_PATHS.tmp, sizeMib: this.o.tmpMib ?? 1024, mode: 0o1777 },
      ],
      limits: {
        memoryMib: m.memoryMib,
        cpus: m.cpus,
        pids: this.o.pids ?? 4096,
        tmpMib: this.o.tmpMib ?? 1024,
      },
      bridges: Object.entries(BOX_BRIDGES).map(([name, port]) => ({ name, port })),
      // a machine's own image and the host's GPU devices (capabilities checked when it was saved)
      ...(m.image ? { image: m.image } : {}),
      ...(m.gpu ? { devices: gpuDevices() } : {}),
    };
  }

  /** The machine's boxd, starting the box first when it is not running. */
  async ensure(machineId: string): Promise<BoxExec> {
    const live = this.live.get(machineId);
    if (live && !live.paused) {
      live.lastActivity = Date.now();
      return live.boxd;
    }
    // boxes the last server left are taken back before any starts (a machine never has two)
    if (this.#adoptionPending) await this.#adoptPending();
    return this.live.serial(machineId, async () => {
      const again = this.live.get(machineId);
      if (again && !again.paused) return again.boxd;
      if (again && (await this.#resume(machineId, again))) return again.boxd;
      const [m] = await this.o.db.select().from(schema.machines).where(eq(schema.machines.id, machineId));
      if (!m) throw new WarrenError("not_found", "machine was not found");
      const t0 = process.hrtime.bigint();
      let box: BoxHandle;
      try {
        // the state written while the folder is made and the box looked for (a claim's few ms)
        const [starting, prepared, inspected] = await Promise.allSettled([
          this.#setState(machineId, "starting", "started on demand"),
          this.o.provider.homes.prepareMachine(machineId),
          this.o.provider.inspect(machineId),
        ]);
        for (const r of [starting, prepared]) if (r.status === "rejected") throw r.reason;
        if (inspected.status === "rejected") throw inspected.reason;
        // a machine's first start takes a warm box when there is one
        // (a warm box runs the boxes' image without devices: a machine with its own or a GPU starts cold)
        const first = inspected.value === null && !m.image && !m.gpu;
        const warm = first ? await this.warm.claim(this.specFor(m)) : null;
        if (warm) box = warm;
        else {
          await this.o.provider.create(this.specFor(m));
          box = await this.o.provider.start(machineId);
        }
      } catch (err) {
        await this.#setState(machineId, "stopped", `start failed: ${messageOf(err)}`);
        this.o.logger.error({ err, machineId }, "box start failed");
        throw new WarrenError(
          "box.unavailable",
          `the machine's box could not be started: ${messageOf(err)}`,
          undefined,
          { cause: err },
        );
      }
      this.o.metrics.boxStarts.observe(Number(process.hrtime.bigint() - t0) / 1e9);
      const boxd = this.o.connect(box);
      const live: Live = { box, boxd, lastActivity: Date.now(), liveExecs: 0 };
      this.live.set(machineId, live);
      await Promise.all([
        this.channels.open(machineId, live),
        this.#setState(machineId, "running", "started on demand"),
        // the box records the environment revision it starts with (its commands' PATH leads there)
        this.o.db
          .update(schema.machines)
          .set({ boxEnvRevision: sql`${schema.machines.envRevision}` })
          .where(eq(schema.machines.id, machineId)),
      ]);
      this.o.events?.emit("box.started", { machineId });
      return boxd;
    });
  }

  /**
   * Freezes the machine's running box in memory (its processes, files and channels stay);
   * the next command resumes it. A box that is not running is left as it is; one with a
   * command or a terminal going on is refused (409 machine.busy): frozen, they would answer
   * nothing and never end.
   */
  async pause(machineId: string, reason: string): Promise<void> {
    await this.live.serial(machineId, async () => {
      const live = this.live.get(machineId);
      if (!live || live.paused) return;
      if (live.liveExecs > 0 || (live.openPtys ?? 0) > 0)
        throw new WarrenError(
          "machine.busy",
          `the machine's box has ${live.liveExecs} command(s) and ${live.openPtys ?? 0} terminal(s) going on: it is not paused`,
        );
      await this.o.provider.pause(machineId);
      live.paused = true;
      await this.#setState(machineId, "paused", reason);
    });
  }

  /** Thaws a paused box (in the machine's queue); false when it is gone (then forgotten and stopped). */
  async #resume(machineId: string, live: Live): Promise<boolean> {
    const t0 = process.hrtime.bigint();
    try {
      live.box = await this.o.provider.resume(machineId);
    } catch (err) {
      this.o.logger.warn({ err, machineId }, "a paused box did not resume; starting it afresh");
      this.drop(machineId);
      this.#stopped(machineId, "the paused box did not resume");
      await this.o.provider.stop(machineId);
      return false;
    }
    this.o.metrics.boxResumes.observe(Number(process.hrtime.bigint() - t0) / 1e9);
    live.paused = false;
    live.lastActivity = Date.now();
    if (live.channelsClosed) {
      live.channelsClosed = false;
      await this.channels.open(machineId, live);
    }
    await this.#setState(machineId, "running", "resumed on demand");
    return true;
  }

  /** True when the machine's box was believed running but is gone; it is then marked stopped. */
  async forgetIfDead(machineId: string): Promise<boolean> {
    if (!this.live.has(machineId)) return false;
    const handle = await this.o.provider.inspect(machineId);
    if (handle?.state === "running" || handle?.state === "paused") return false;
    await this.live.serial(machineId, async () => {
      this.drop(machineId);
      this.#stopped(machineId, "the box stopped on its own");
      await this.o.provider.stop(machineId);
      await this.#setState(machineId, "stopped", "the box stopped on its own");
    });
    this.o.logger.warn({ machineId }, "a box stopped on its own; starting it again");
    return true;
  }

  async stop(machineId: string, reason: string): Promise<void> {
    await this.live.serial(machineId, async () => {
      this.drop(machineId);
      this.#stopped(machineId, reason);
      await this.o.provider.stop(machineId);
      await this.#setState(machineId, "stopped", reason);
    });
  }

  async remove(machineId: string): Promise<void> {
    await this.live.serial(machineId, async () => {
      this.drop(machineId);
      this.#stopped(machineId, "the machine was deleted");
      await this.o.provider.remove(machineId);
    });
  }

  async agentsChanged(machineId: string): Promise<void> {
    if (this.live.has(machineId)) await this.o.provider.refreshUsers(machineId);
  }

  /**
   * At boot: adopt the live boxes of machines we know, reap every other box, and mark
   * machines whose box is gone as stopped. A machine never has two boxes. With `later` (a
   * degraded start the operator allowed for the provider's checks), a provider that does not
   * answer leaves this for the next box start (`pending`): until it answers, starts fail with
   * box.unavailable naming it, and runs wait with that reason.
   */
  async recover(
    o: { later?: boolean } = {},
  ): Promise<{ adopted: string[]; reaped: string[]; pending?: true }> {
    let boxes: BoxHandle[];
    try {
      boxes = await this.o.provider.list({ "warren.kind": "machine" });
    } catch (err) {
      if (!o.later) throw err;
      this.#adoptionPending = true;
      this.o.logger.warn(
        { provider: this.o.provider.name, err: messageOf(err) },
        `the ${this.o.provider.name} provider does not answer: the boxes of the last server are taken back once it does (at the next box start); until then no box starts and runs wait`,
      );
      return { adopted: [], reaped: [], pending: true };
    }
    return this.#takeBack(boxes);
  }

  /** Takes back the last server's boxes now (once, whoever asks), or says the provider is down. */
  async #adoptPending(): Promise<void> {
    this.#adopting ??= (async () => {
      const boxes = await this.o.provider.list({ "warren.kind": "machine" });
      const r = await this.#takeBack(boxes);
      this.#adoptionPending = false;
      this.o.logger.info(
        { provider: this.o.provider.name, ...r },
        `the ${this.o.provider.name} provider answers again: the boxes of the last server are taken back`,
      );
    })().finally(() => {
      this.#adopting = null;
    });
    try {
      await this.#adopting;
    } catch (err) {
      throw new WarrenError(
        "box.unavailable",
        `the machine's box could not be started: the ${this.o.provider.name} provider is down (${messageOf(err)})`,
        undefined,
        { cause: err },
      );
    }
  }

  async #takeBack(boxes: BoxHandle[]): Promise<{ adopted: string[]; reaped: string[] }> {
    const ids = boxes.map((b) => b.labels["warren.machine"]);
    const known = ids.length
      ? await this.o.db.select().from(schema.machines).where(inArray(schema.machines.id, ids))
      : [];
    const byId = new Map(known.map((m) => [m.id, m]));
    const adopted: string[] = [];
    const reaped: string[] = [];
    for (const box of boxes) {
      const m = byId.get(box.labels["warren.machine"]);
      const ours = m && m.orgId === box.labels["warren.org"] && box.id === m.id;
      // taken back by an earlier try that failed after it (a retry of a pending adoption)
      if (ours && this.live.has(m.id)) continue;
      if (ours && box.state === "paused") {
        // a frozen boxd answers nothing: adopted as it is, its channels open at its resume
        const boxd = this.o.connect(box);
        const live: Live = {
          box,
          boxd,
          lastActivity: Date.now(),
          liveExecs: 0,
          paused: true,
          channelsClosed: true,
        };
        this.live.set(m.id, live);
        await this.#setState(m.id, "paused", "adopted paused after a server restart");
        adopted.push(m.id);
        // what lives beside a box (its agents' short-lived tokens) is taken up again
        this.o.events?.emit("box.started", { machineId: m.id, adopted: true });
        continue;
      }
      if (ours && box.state === "running") {
        try {
          const boxd = this.o.connect(box);
          await boxd.ping();
          const live: Live = { box, boxd, lastActivity: Date.now(), liveExecs: 0 };
          this.live.set(m.id, live);
          await this.channels.open(m.id, live);
          await this.#setState(m.id, "running", "adopted after a server restart");
          adopted.push(m.id);
          this.o.events?.emit("box.started", { machineId: m.id, adopted: true });
          continue;
        } catch (err) {
          this.o.logger.warn({ err, machineId: m.id }, "could not adopt a box; reaping it");
        }
      }
      await this.o.provider
        .remove(box.id)
        .catch((err: unknown) => this.o.logger.error({ err, box: box.id }, "reaping a box failed"));
      // a warm box of an earlier server: its folder goes with it
      if (box.labels[WARM_LABEL]) await this.o.provider.homes.removeMachine(box.id).catch(() => undefined);
      reaped.push(box.id);
    }
    void this.warm.fill();
    const all = await this.o.db
      .select({ id: schema.machines.id, state: schema.machines.state })
      .from(schema.machines);
    for (const m of all) {
      if (m.state !== "stopped" && !this.live.has(m.id))
        await this.#setState(m.id, "stopped", "the box was gone after a server restart");
    }
    return { adopted, reaped };
  }

  /** Stops every running box (`warren serve --stop-boxes`). */
  async stopAll(reason: string): Promise<void> {
    await this.warm.close();
    for (const id of this.live.ids())
      await this.stop(id, reason).catch((err: unknown) =>
        this.o.logger.error({ err, machineId: id }, "stopping a box failed"),
      );
  }
}

const messageOf = (e: unknown): string => (e instanceof Error ? e.message : String(e));
