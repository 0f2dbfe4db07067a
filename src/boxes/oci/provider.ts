// The oci provider: a box is a container of the Docker Engine API (Docker, or Podman's
// compatible service) on this host, from the image scripts/oci.sh builds, with boxd as
// its first process speaking the same protocol over the same bind-mounted socket folder
// as a local box. The agents' command trees live in cgroups the provider makes on the
// host and binds in (as `local` does), so that boxd limits, measures and kills each
// command alike on both providers. State: STATE_ROOT/run/oci-boxes/<id>/ (box.json, the
// socket folders, passwd and group); the container carries the box's labels.
import fs from "node:fs";
import path from "node:path";
import { WarrenError } from "../../errors.js";
import type { BoxHandle, BoxLabels, BoxProvider, BoxSpec, BoxState, BoxUsage, HostProbe } from "../types.js";
import { ProviderBase, type ProviderBaseOptions } from "../kit/base.js";
import { BOX_ROOT_HOST_ID } from "../kit/boxd.js";
import {
  applyPlan,
  boxUsage,
  cgroupPlan,
  delegateCgroups,
  destroyBoxCgroups,
  detectLayout,
  freezeBox,
  freezeCgroup,
  isFrozen,
} from "../kit/cgroups.js";
import {
  checkSpec,
  etcEntries,
  readBoxRecord,
  recordSpec,
  socketDirs,
  systemDirs,
  writeBoxRecord,
  type BoxRecord,
} from "../kit/record.js";
import { refreshBoxUsers } from "../kit/users.js";
import { removeRuntimeRoot, runtimeRoot } from "../kit/runtime-dirs.js";
import { BoxFiles } from "../kit/box-files.js";
import { packageRoot } from "../kit/logger.js";
import { hostSeccompArch } from "../kit/seccomp.js";
import { containerConfig, containerName } from "./container.js";
import { containerStates, Engine, engineState } from "./engine.js";
import { ociProbes } from "./checks.js";
import {
  explainStartFailure,
  forgetRuntime,
  keptRuntime,
  noRuntimeError,
  type OciRuntime,
  type RuntimeChoice,
} from "./runtime.js";
import { containerFreezerDirs } from "./freezer.js";
import { claimWarmContainer, updateLimits } from "./warm.js";

export interface OciProviderOptions extends ProviderBaseOptions {
  /** The engine's unix socket (WARREN_OCI_SOCKET). */
  socket: string;
  /** The boxes' image (WARREN_OCI_IMAGE, built by scripts/oci.sh image). */
  image: string;
  /** The OCI runtime (WARREN_OCI_RUNTIME); unset, the first the engine runs a box with (./runtime.ts). */
  runtime?: OciRuntime | undefined;
  cgroupParent?: string;
  boxdBinary?: string;
  /**
   * boxd and its helpers, bound into every box by the engine from this path of the engine's
   * host (default dist/native; a server in a container copies them to its state volume).
   */
  nativeDir?: string | undefined;
  orphanAfterS?: number;
  startTimeoutMs?: number;
}

export class OciProvider extends ProviderBase implements BoxProvider {
  readonly name = "oci" as const;
  readonly engine: Engine;
  private readonly native: string;
  private readonly boxdBinary: string;
  private readonly image: string;
  private readonly cgroupParent: string;
  private readonly orphanAfterS: number;
  private readonly startTimeoutMs: number;
  private readonly boxFiles: BoxFiles;
  private readonly wantedRuntime: OciRuntime | undefined;

  constructor(o: OciProviderOptions) {
    super(o, "oci-boxes");
    this.engine = new Engine(o.socket);
    this.native = path.resolve(o.nativeDir ?? path.join(packageRoot, "dist", "native"));
    this.boxdBinary = path.resolve(o.boxdBinary ?? path.join(this.native, "boxd"));
    this.image = o.image;
    this.wantedRuntime = o.runtime;
    this.cgroupParent = o.cgroupParent ?? "warren-oci";
    this.orphanAfterS = o.orphanAfterS ?? 300;
    this.startTimeoutMs = o.startTimeoutMs ?? 20_000;
    this.boxFiles = new BoxFiles(path.join(this.runRoot, "oci-box-files"), BOX_ROOT_HOST_ID);
  }

  /** Nothing to let go of: each request opens its own connection to the engine. */
  close(): void {}

  /** The name of the container of a box's record: its own, or a claimed warm box's. */
  private cname(rec: BoxRecord): string {
    return rec.container ?? containerName(rec.spec.id);
  }

  /** The name of the container of the box `id` (a claimed warm box keeps its own). */
  containerOf(id: string): string {
    const rec = readBoxRecord(this.boxDir(id));
    return rec ? this.cname(rec) : containerName(id);
  }

  /** The engine's view of the box's container, or null when there is none. */
  private async container(
    rec: BoxRecord,
  ): Promise<{ Id: string; State: { Status?: string; Pid?: number } } | null> {
    const r = await this.engine.request("GET", `/containers/${this.cname(rec)}/json`);
    if (r.status === 404) return null;
    if (r.status !== 200)
      throw new WarrenError("box.unavailable", `inspecting box ${rec.spec.id}: ${r.status}`);
    return r.body as { Id: string; State: { Status?: string; Pid?: number } };
  }

  /** The container's state, or null when there is none: paused by its freezer when the provider froze it. */
  private async containerState(rec: BoxRecord): Promise<BoxState | null> {
    const c = await this.container(rec);
    if (!c) return null;
    return this.stateOf(rec, engineState(c.State.Status));
  }

  private stateOf(rec: BoxRecord, engine: BoxState): BoxState {
    const own = rec.containerCgroups ?? [];
    if ((engine === "running" || engine === "paused") && rec.state === "paused" && own.length)
      return isFrozen(own) ? "paused" : "running";
    return engine;
  }

  private handle(rec: BoxRecord, state: BoxState): BoxHandle {
    return this.handleOf(rec, state, null);
  }

  private plan(rec: BoxRecord) {
    const layout = detectLayout();
    if (!layout) throw new WarrenError("box.unavailable", "no usable cgroups for the agents' command trees");
    return cgroupPlan(rec.spec.limits, layout, { parent: this.cgroupParent, boxId: rec.spec.id });
  }

  async create(spec: BoxSpec): Promise<BoxHandle> {
    checkSpec(spec);
    return this.locks.run(spec.id, async () => {
      const rec = await recordSpec(this.boxDir(spec.id), spec);
      return this.handle(rec, (await this.containerState(rec)) ?? "created");
    });
  }

  async start(id: string): Promise<BoxHandle> {
    return this.locks.run(id, async () => {
      const rec = this.recordOf(id);
      const now = await this.containerState(rec);
      if (now === "running") return this.handle(rec, "running");
      if (now === "paused") return this.unpause(rec);
      await this.end(rec);
      return this.launch(rec);
    });
  }

  async stop(id: string): Promise<void> {
    await this.locks.run(id, async () => {
      const rec = readBoxRecord(this.boxDir(id));
      if (!rec) return;
      await this.end(rec);
      removeRuntimeRoot(this.boxDir(id));
      await writeBoxRecord(this.boxDir(id), { ...rec, state: "stopped", startedAt: null });
    });
  }

  /**
   * Freezes the container's cgroup (./freezer.ts: as the engine's pause does, where the
   * engine runs on this host; else the engine's pause) and the agents' command trees with it.
   */
  async pause(id: string): Promise<void> {
    await this.locks.run(id, async () => {
      const rec = this.recordOf(id);
      const c = await this.container(rec);
      const now = c ? this.stateOf(rec, engineState(c.State.Status)) : null;
      if (now === "paused") return;
      if (!c || now !== "running") throw new WarrenError("box.unavailable", `box ${id} is not running`);
      const own = containerFreezerDirs(c.State.Pid ?? 0, c.Id);
      await freezeBox([...rec.cgroupDirs, ...own], true);
      if (!own.length) await this.engine.expect("POST", `/containers/${this.cname(rec)}/pause`, [204]);
      await writeBoxRecord(this.boxDir(id), { ...rec, state: "paused", containerCgroups: own });
    });
  }

  async resume(id: string): Promise<BoxHandle> {
    return this.locks.run(id, async () => {
      const rec = this.recordOf(id);
      // frozen by the provider: thawed without asking the engine (a gone container's freezer is gone too)
      const own = rec.containerCgroups ?? [];
      if (rec.state === "paused" && own.length && isFrozen(own)) return this.unpause(rec);
      return this.resumeFrom(
        id,
        await this.containerState(rec),
        () => this.unpause(rec),
        () => this.handle(rec, "running"),
      );
    });
  }

  private async unpause(rec: BoxRecord): Promise<BoxHandle> {
    const answered = this.pingNow(rec.spec.id);
    const own = rec.containerCgroups ?? [];
    if (own.length) await freezeBox([...own, ...rec.cgroupDirs], false);
    else {
      await this.engine.expect("POST", `/containers/${this.cname(rec)}/unpause`, [204]);
      await freezeBox(rec.cgroupDirs, false);
    }
    const running: BoxRecord = { ...rec, state: "running", containerCgroups: undefined };
    await writeBoxRecord(this.boxDir(rec.spec.id), running);
    await answered();
    return this.handle(running, "running");
  }

  /** A warm box given to a machine (./warm.ts). */
  async claim(warmId: string, spec: BoxSpec): Promise<BoxHandle> {
    const layout = detectLayout();
    if (!layout) throw new WarrenError("box.unavailable", "no usable cgroups for the agents' command trees");
    return this.locks.run(warmId, () =>
      this.locks.run(spec.id, async () => {
        // its boxd answering is what running means here (claimWarm reads its record's state)
        const warm = readBoxRecord(this.boxDir(warmId));
        const up = await this.answers(warmId, 1000);
        if (!warm || !up) throw new WarrenError("box.unavailable", "the warm box is not running");
        const rec = await claimWarmContainer(this.cname(warm), {
          ...{ warmBoxDir: this.boxDir(warmId), boxDir: this.boxDir(spec.id), spec },
          ...{ warmMachineDir: this.homes.machineDir(warmId), machineDir: this.homes.machineDir(spec.id) },
          ...{ layout, cgroupParent: this.cgroupParent },
        });
        // the container's own limits next, under the box's lock (./warm.ts says why not before)
        void this.locks
          .run(spec.id, () => updateLimits(this.engine, this.cname(rec), spec.limits))
          .catch((err: unknown) =>
            this.logger.error(`box ${spec.id}: the container's limits were not updated: ${String(err)}`),
          );
        return this.handle(rec, "running");
      }),
    );
  }

  async inspect(id: string): Promise<BoxHandle | null> {
    const rec = readBoxRecord(this.boxDir(id));
    if (!rec) return null;
    return this.handle(
      rec,
      (await this.containerState(rec)) ?? (rec.state === "created" ? "created" : "stopped"),
    );
  }

  async list(labels?: Partial<BoxLabels>): Promise<BoxHandle[]> {
    // by the box's record: a claimed warm box's container keeps the labels it was made with
    const want = Object.entries(labels ?? {}).filter(([, v]) => v !== undefined);
    const states = await containerStates(this.engine);
    const out: BoxHandle[] = [];
    for (const id of this.dirs.ids()) {
      const rec = readBoxRecord(this.boxDir(id));
      const state = rec && states.get(this.cname(rec));
      if (rec && state && want.every(([k, v]) => rec.spec.labels[k] === v))
        out.push(this.handle(rec, this.stateOf(rec, state)));
    }
    return out;
  }

  async remove(id: string): Promise<void> {
    await this.locks.run(id, async () => {
      const rec = readBoxRecord(this.boxDir(id));
      if (rec) await this.end(rec);
      else await this.engine.request("DELETE", `/containers/${containerName(id)}?force=true`);
      fs.rmSync(this.boxDir(id), { recursive: true, force: true });
    });
  }

  async usage(id: string): Promise<BoxUsage | null> {
    const rec = readBoxRecord(this.boxDir(id));
    if (!rec || rec.cgroupDirs.length === 0 || rec.startedAt === null) return null;
    return boxUsage(rec.cgroupDirs);
  }

  hostProbes(): Record<string, HostProbe> {
    return ociProbes(this.engine, this.image, () => this.runtime());
  }

  /** The OCI runtime boxes run with (./runtime.ts: found once per engine, image and wish in a process). */
  runtime(): Promise<RuntimeChoice> {
    return keptRuntime(this.engine, this.image, this.wantedRuntime);
  }

  // ---- the thin part that runs things ----------------------------------------------

  /** Removes the container (its pid namespace ends every process) and the agents' cgroups. */
  private async end(rec: BoxRecord): Promise<void> {
    const dirs = new Set(rec.cgroupDirs);
    const layout = detectLayout();
    if (layout)
      for (const d of cgroupPlan(rec.spec.limits, layout, { parent: this.cgroupParent, boxId: rec.spec.id })
        .boxDirs)
        dirs.add(d);
    // boxd (pid 1) goes first, and with it its pid namespace: a command running as its box
    // stops is answered "box gone", not a signal; then what is left of the commands' cgroups
    // a container the provider froze is thawed first, for the engine's kill to take
    if (rec.containerCgroups?.length) freezeCgroup(rec.containerCgroups, false);
    await this.engine.request("POST", `/containers/${this.cname(rec)}/kill?signal=KILL`);
    await destroyBoxCgroups([...dirs]);
    await this.engine.expect("DELETE", `/containers/${this.cname(rec)}?force=true`, [200, 204, 404]);
    fs.rmSync(this.endpoint(rec.spec.id).path, { force: true });
  }

  private async launch(rec: BoxRecord): Promise<BoxHandle> {
    const id = rec.spec.id;
    const dir = this.boxDir(id);
    const parts = {
      boxdBinary: this.boxdBinary,
      spawnHelper: path.join(this.native, "boxd-spawn"),
      userns: path.join(this.native, "box-userns"),
      warrenSecret: path.join(this.native, "warren-secret"),
    };
    for (const [what, file] of Object.entries(parts))
      if (!fs.existsSync(file))
        throw new WarrenError("box.unavailable", `the ${what} ${file} is missing; run \`npm run build\``);
    const arch = hostSeccompArch();
    if (!arch) throw new WarrenError("box.unavailable", `no seccomp table for ${process.arch}`);
    const runtime = await this.runtime();
    if (!runtime.runtime) throw noRuntimeError(runtime);
    const plan = this.plan(rec);
    applyPlan(plan);
    delegateCgroups(plan.delegate, BOX_ROOT_HOST_ID);
    const { seccompFile, etcFiles } = this.boxFiles.ensure(arch);
    const users = refreshBoxUsers(dir);
    const { socketDir, callsDir } = socketDirs(dir, BOX_ROOT_HOST_ID);
    const body = containerConfig(rec.spec, {
      image: this.image,
      systemDirs: systemDirs(),
      etcNames: etcEntries().map((e) => e.name),
      etcFiles: { ...etcFiles, passwd: users.passwd, group: users.group },
      ...parts,
      seccompFile,
      socketDir,
      callsDir,
      runtimeDir: runtimeRoot(dir),
      runtime: runtime.runtime,
      cgroups: plan.agents,
      cgroupVersion: plan.version,
      boxRootId: BOX_ROOT_HOST_ID,
      orphanAfterS: this.orphanAfterS,
      nofile: 8192,
      nproc: 16384,
    });
    const started: BoxRecord = {
      ...rec,
      container: undefined,
      containerCgroups: undefined,
      state: "running",
      startedAt: new Date().toISOString(),
      cgroupDirs: plan.boxDirs,
    };
    await writeBoxRecord(dir, started);
    try {
      await this.engine.expect("POST", `/containers/create?name=${containerName(id)}`, [201], body);
      await this.engine.expect("POST", `/containers/${containerName(id)}/start`, [204, 304]);
      const deadline = Date.now() + this.startTimeoutMs;
      for (;;) {
        const ok = await this.answers(id, 1000);
        if (ok) break;
        if (Date.now() > deadline) throw new Error(`boxd did not answer within ${this.startTimeoutMs} ms`);
        if ((await this.containerState(started)) === "stopped") throw new Error("the container exited");
        await new Promise((r) => setTimeout(r, 5));
      }
    } catch (err) {
      const logs = await this.engine
        .request("GET", `/containers/${containerName(id)}/logs?stderr=true&stdout=true&tail=20`)
        .then((r) =>
          String(r.body)
            .replace(/[^\x20-\x7e\n]/g, "")
            .slice(-1500),
        )
        .catch(() => "");
      await this.end(started).catch((cleanup: unknown) =>
        this.logger.warn(`box ${id}: its container was not removed after a failed start: ${String(cleanup)}`),
      );
      await writeBoxRecord(dir, { ...started, state: "stopped", startedAt: null });
      this.logger.error(`box ${id} failed to start: ${(err as Error).message}`);
      // the runtime kept may have stopped working (the service started again with another)
      if (/OCI runtime/i.test((err as Error).message))
        forgetRuntime(this.engine, this.image, this.wantedRuntime);
      const fix = explainStartFailure((err as Error).message);
      throw new WarrenError(
        "box.unavailable",
        `box ${id} did not start: ${(err as Error).message}${fix ? ` (${fix})` : ""}${logs ? `; log: ${logs}` : ""}`,
        undefined,
        { cause: err },
      );
    }
    this.logger.info(`box ${id} started in container ${containerName(id)} (runtime ${runtime.runtime})`);
    return this.handle(started, "running");
  }
}
