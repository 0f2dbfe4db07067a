// The local provider: boxes are bubblewrap sandboxes in cgroups on this host. Spec-like
// work happens in pure functions (bwrapArgv, cgroupPlan, seccompProgram); this file
// only runs them. Homes are in STATE_ROOT/workspaces (./layout.ts). State lives in
// STATE_ROOT/run/boxes/<id>/:
//
//   box.json      the record: spec, labels, state, pid and its start time, cgroups
//   box.log       bwrap's and boxd's stderr
//   passwd, group the box's /etc/passwd and /etc/group
//   boxd/         (0700) bound at /run/boxd in the box: boxd's socket
//
// and, once per server, STATE_ROOT/run/box-files/ (seccomp filters, /etc files). Boxes are
// started by a launcher process (./launcher.ts), never forked by the server; a box is paused
// by freezing its cgroup tree (record: `paused`); a warm box is claimed by ./warm.ts. A box
// survives the server (its own session, no --die-with-parent): a new provider finds it by
// its record, the same process (pid + start time), and boxd's answer.

import fs from "node:fs";
import path from "node:path";
import { WarrenError } from "../../errors.js";
import type { BoxHandle, BoxLabels, BoxProvider, BoxSpec, BoxState, BoxUsage, HostProbe } from "../types.js";
import { ProviderBase } from "../kit/base.js";
import { bwrapArgv, bwrapEnv } from "./bwrap.js";
import { BOX_ROOT_HOST_ID } from "../kit/boxd.js";
import {
  applyPlan,
  cgroupPlan,
  boxUsage,
  delegateCgroups,
  destroyBoxCgroups,
  freezeBox,
  detectLayout,
  type CgroupLayout,
} from "../kit/cgroups.js";
import { localProbes, requireLaunchParts } from "./checks.js";
import { killBoxTree } from "./warm.js";
import { claimWarm } from "../kit/warm.js";
import { BoxFiles } from "../kit/box-files.js";
import { BoxLauncher } from "./launcher.js";
import { isSameProcess, JOIN_AND_EXEC, pidStartTime, tail } from "./proc.js";
import { hostSeccompArch } from "../kit/seccomp.js";
import {
  checkSpec,
  recordSpec,
  type BoxRecord,
  systemDirs,
  etcEntries,
  readBoxRecord,
  writeBoxRecord,
  socketDirs,
} from "../kit/record.js";
import { refreshBoxUsers } from "../kit/users.js";
import { removeRuntimeRoot, runtimeRoot } from "../kit/runtime-dirs.js";
import { packageRoot } from "../kit/logger.js";
import { optionsSchema, type LocalProviderOptions } from "./options.js";
export type { LocalProviderOptions } from "./options.js";
export type { LoggerLike } from "../kit/logger.js";

export class LocalProvider extends ProviderBase implements BoxProvider {
  readonly name = "local" as const;
  private readonly boxdBinary: string;
  private readonly spawnHelper: string;
  private readonly warrenSecret: string;
  private readonly userns: string;
  private readonly boxRootId: number;
  private readonly bwrap: string;
  private readonly cgroupParent: string;
  private readonly startTimeoutMs: number;
  private readonly orphanAfterS: number;
  private layout: CgroupLayout | null | undefined;
  private readonly launcher: BoxLauncher;
  private readonly boxFiles: BoxFiles;

  constructor(options: LocalProviderOptions) {
    super(options, "boxes");
    const o = optionsSchema.parse(options);
    this.boxdBinary = path.resolve(o.boxdBinary ?? path.join(packageRoot, "dist", "native", "boxd"));
    this.spawnHelper = path.resolve(o.spawnHelper ?? path.join(packageRoot, "dist", "native", "boxd-spawn"));
    this.warrenSecret = path.join(path.dirname(this.spawnHelper), "warren-secret");
    this.userns = path.resolve(o.userns ?? path.join(packageRoot, "dist", "native", "box-userns"));
    this.boxRootId = o.boxRootId ?? BOX_ROOT_HOST_ID;
    this.bwrap = o.bwrap ?? "/usr/bin/bwrap";
    this.cgroupParent = o.cgroupParent ?? "warren";
    this.startTimeoutMs = o.startTimeoutMs ?? 10_000;
    this.orphanAfterS = o.orphanAfterS ?? 300;
    this.boxFiles = new BoxFiles(path.join(this.runRoot, "box-files"), this.boxRootId);
    this.launcher = new BoxLauncher(path.join(path.dirname(this.spawnHelper), "box-launch"));
  }

  /** Ends the box launcher; boxes go on (the next server adopts them). */
  close(): void {
    this.launcher.close();
  }

  // ---- records ---------------------------------------------------------------------

  private readRecord(id: string): BoxRecord | null {
    return readBoxRecord(this.boxDir(id));
  }

  private writeRecord(rec: BoxRecord): Promise<void> {
    return writeBoxRecord(this.boxDir(rec.spec.id), rec);
  }

  private cgroupLayout(): CgroupLayout {
    if (this.layout === undefined) this.layout = detectLayout();
    if (!this.layout)
      throw new WarrenError(
        "box.unavailable",
        "no usable cgroups: need cgroup v2 with memory, pids and cpu delegated, or v1 memory, pids and cpu hierarchies",
      );
    return this.layout;
  }

  private handle(rec: BoxRecord, state: BoxState): BoxHandle {
    return this.handleOf(rec, state, rec.pid);
  }

  private async liveState(rec: BoxRecord): Promise<BoxState> {
    if (rec.pid !== null && rec.pidStart !== null && isSameProcess(rec.pid, rec.pidStart)) {
      // a frozen boxd cannot answer: the record says the box was paused, and it is still there
      if (rec.state === "paused") return "paused";
      try {
        // a live boxd on a busy host may wait for a core: judged hung (and started again, its
        // commands with it) only after seconds
        await this.client(rec.spec.id).ping(3000);
        return "running";
      } catch {
        return "stopped";
      }
    }
    return rec.state === "created" ? "created" : "stopped";
  }

  // ---- BoxProvider -------------------------------------------------------------------

  async create(spec: BoxSpec): Promise<BoxHandle> {
    checkSpec(spec);
    if (spec.image !== undefined)
      throw new WarrenError(
        "machine.capability_unavailable",
        `image: local boxes run the host's system folders; the image ${spec.image} needs the oci or kubernetes provider`,
      );
    const sock = this.endpoint(spec.id).path;
    if (Buffer.byteLength(sock) > 107)
      throw new WarrenError(
        "request.invalid",
        `boxd's socket path ${sock} is longer than 107 bytes; use a shorter STATE_ROOT`,
      );
    return this.locks.run(spec.id, async () => {
      const rec = await recordSpec(this.boxDir(spec.id), spec);
      return this.handle(rec, await this.liveState(rec));
    });
  }

  async start(id: string): Promise<BoxHandle> {
    return this.locks.run(id, async () => {
      const rec = this.recordOf(id);
      const now = await this.liveState(rec);
      if (now === "running") return this.handle(rec, "running");
      if (now === "paused") {
        const thawed = await this.thaw(rec).catch((err: unknown) => {
          this.logger.warn(`box ${id} did not resume (${String(err)}); it starts again`);
          return null;
        });
        if (thawed) return thawed;
      }
      // Whatever is left of an earlier run (a hung boxd, stray processes) goes first:
      // a machine never has two boxes.
      await this.kill(rec);
      return this.launch(rec);
    });
  }

  async stop(id: string): Promise<void> {
    await this.locks.run(id, async () => {
      const rec = this.readRecord(id);
      if (!rec) return;
      await this.kill(rec);
      await this.writeRecord({
        ...rec,
        state: rec.state === "created" ? "created" : "stopped",
        pid: null,
        pidStart: null,
        startedAt: null,
      });
    });
  }

  /** Freezes the box's whole cgroup tree (boxd, commands, terminals): the freezer keeps it in memory. */
  async pause(id: string): Promise<void> {
    await this.locks.run(id, async () => {
      const rec = this.recordOf(id);
      const now = await this.liveState(rec);
      if (now === "paused") return;
      if (now !== "running") throw new WarrenError("box.unavailable", `box ${id} is not running`);
      if (!(await freezeBox(rec.cgroupDirs, true)))
        throw new WarrenError(
          "box.unavailable",
          "this host's cgroups have no freezer: a box cannot be paused",
        );
      await this.writeRecord({ ...rec, state: "paused" });
    });
  }

  async resume(id: string): Promise<BoxHandle> {
    return this.locks.run(id, async () => {
      const rec = this.recordOf(id);
      const now = await this.liveState(rec);
      return this.resumeFrom(
        id,
        now,
        () => this.thaw(rec),
        () => this.handle(rec, "running"),
      );
    });
  }

  /** Thaws a paused box. The ping connects first: a thawed boxd counts it as its server's contact. */
  private async thaw(rec: BoxRecord): Promise<BoxHandle> {
    const answered = this.pingNow(rec.spec.id);
    await freezeBox(rec.cgroupDirs, false);
    const running: BoxRecord = { ...rec, state: "running" };
    await this.writeRecord(running);
    await answered();
    return this.handle(running, "running");
  }

  async claim(warmId: string, spec: BoxSpec): Promise<BoxHandle> {
    return this.locks.run(warmId, () =>
      this.locks.run(spec.id, async () => {
        const rec = await claimWarm({
          ...{ warmBoxDir: this.boxDir(warmId), boxDir: this.boxDir(spec.id), spec },
          ...{ warmMachineDir: this.homes.machineDir(warmId), machineDir: this.homes.machineDir(spec.id) },
          ...{ layout: this.cgroupLayout(), cgroupParent: this.cgroupParent },
        });
        return this.handle(rec, "running");
      }),
    );
  }

  async inspect(id: string): Promise<BoxHandle | null> {
    const rec = this.readRecord(id);
    if (!rec) return null;
    return this.handle(rec, await this.liveState(rec));
  }

  async list(labels?: Partial<BoxLabels>): Promise<BoxHandle[]> {
    const out: BoxHandle[] = [];
    for (const id of this.dirs.ids()) {
      const rec = this.readRecord(id);
      if (!rec) continue;
      const want = Object.entries(labels ?? {});
      if (!want.every(([k, v]) => v === undefined || rec.spec.labels[k] === v)) continue;
      out.push(this.handle(rec, await this.liveState(rec)));
    }
    return out;
  }

  async remove(id: string): Promise<void> {
    await this.locks.run(id, async () => {
      const rec = this.readRecord(id);
      if (rec) await this.kill(rec);
      fs.rmSync(this.boxDir(id), { recursive: true, force: true });
    });
  }

  async usage(id: string): Promise<BoxUsage | null> {
    const rec = this.readRecord(id);
    if (!rec || rec.pid === null || rec.cgroupDirs.length === 0) return null;
    if (rec.pidStart === null || !isSameProcess(rec.pid, rec.pidStart)) return null;
    return boxUsage(rec.cgroupDirs);
  }

  hostProbes(opts: { repair: boolean }): Record<string, HostProbe> {
    return localProbes({
      bwrap: this.bwrap,
      spawnHelper: this.spawnHelper,
      cgroupParent: this.cgroupParent,
      repair: opts.repair,
    });
  }

  // ---- the thin part that runs things ----------------------------------------------

  private async kill(rec: BoxRecord): Promise<void> {
    const layout = this.layout === null ? null : this.tryLayout();
    const dirs = new Set(rec.cgroupDirs);
    if (layout)
      for (const d of cgroupPlan(rec.spec.limits, layout, { parent: this.cgroupParent, boxId: rec.spec.id })
        .boxDirs)
        dirs.add(d);
    await killBoxTree(rec, [...dirs]);
    fs.rmSync(this.endpoint(rec.spec.id).path, { force: true });
    // the agents' runtime folders go with the box
    removeRuntimeRoot(this.boxDir(rec.spec.id));
  }

  private tryLayout(): CgroupLayout | null {
    try {
      return this.cgroupLayout();
    } catch {
      return null;
    }
  }

  private async launch(rec: BoxRecord): Promise<BoxHandle> {
    const id = rec.spec.id;
    const dir = this.boxDir(id);
    requireLaunchParts(this.bwrap, [
      ["boxd binary", this.boxdBinary],
      ["spawn helper", this.spawnHelper],
      ["in-box client warren-secret", this.warrenSecret],
      ["user namespace launcher", this.userns],
      ["box launcher", path.join(path.dirname(this.spawnHelper), "box-launch")],
    ]);
    const arch = hostSeccompArch();
    if (!arch) throw new WarrenError("box.unavailable", `no seccomp table for ${process.arch}`);

    const plan = cgroupPlan(rec.spec.limits, this.cgroupLayout(), { parent: this.cgroupParent, boxId: id });
    applyPlan(plan);
    // What box root (boxd, host id boxRootId in its user namespace) must own: the agents'
    // cgroups (it makes one per command), the seccomp program, its socket folder.
    const root = this.boxRootId;
    delegateCgroups(plan.delegate, root);
    const { seccompFile, boxdSeccompFile, etcFiles } = this.boxFiles.ensure(arch);
    const users = refreshBoxUsers(dir);
    const { socketDir, callsDir } = socketDirs(dir, root);
    const runtimeDir = runtimeRoot(dir);

    const args = bwrapArgv(rec.spec, {
      systemDirs: systemDirs(),
      etc: etcEntries(),
      etcFiles,
      boxdBinary: this.boxdBinary,
      spawnHelper: this.spawnHelper,
      userns: this.userns,
      boxRootId: root,
      seccompFile,
      socketDir,
      callsDir,
      runtimeDir,
      warrenSecret: this.warrenSecret,
      cgroups: plan.agents,
      cgroupVersion: plan.version,
      passwdFile: users.passwd,
      groupFile: users.group,
      readyFd: 3,
      boxdSeccompFd: 4,
      orphanAfterS: this.orphanAfterS,
    });

    let launched;
    try {
      launched = await this.launcher.launch({
        argv: ["/bin/sh", "-c", JOIN_AND_EXEC, "warren-box", ...plan.joinProcs, "--", this.bwrap, ...args],
        env: bwrapEnv(),
        log: path.join(dir, "box.log"),
        filter: boxdSeccompFile,
      });
    } catch (err) {
      await destroyBoxCgroups(plan.boxDirs);
      throw new WarrenError("box.unavailable", `cannot start bwrap for box ${id}: ${(err as Error).message}`);
    }
    const pid = launched.pid;
    const started: BoxRecord = {
      ...rec,
      state: "running",
      pid,
      pidStart: pidStartTime(pid),
      startedAt: new Date().toISOString(),
      cgroupDirs: plan.boxDirs,
    };
    await this.writeRecord(started);

    try {
      let timer: NodeJS.Timeout | undefined;
      const began = performance.now();
      await Promise.race([
        launched.ready,
        new Promise<never>((_, reject) => {
          timer = setTimeout(
            () => reject(new Error(`boxd did not start within ${this.startTimeoutMs} ms`)),
            this.startTimeoutMs,
          );
        }),
      ]).finally(() => {
        clearTimeout(timer);
        launched.abandon();
      });
      // boxd listens: its first answer may wait for a core on a busy host, within the start's
      // own time (never less than two seconds)
      await this.client(id).ping(Math.max(2000, this.startTimeoutMs - (performance.now() - began)));
    } catch (err) {
      await this.kill(started);
      await this.writeRecord({ ...started, state: "stopped", pid: null, pidStart: null, startedAt: null });
      const log = tail(path.join(dir, "box.log"));
      this.logger.error(`box ${id} failed to start: ${(err as Error).message}`);
      throw new WarrenError(
        "box.unavailable",
        `box ${id} did not start: ${(err as Error).message}${log ? `; log: ${log}` : ""}`,
        undefined,
        {
          cause: err,
        },
      );
    }
    this.logger.info(`box ${id} started (pid ${pid})`);
    return this.handle(started, "running");
  }
}
