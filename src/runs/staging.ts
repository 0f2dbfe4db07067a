// A run's private files (its input): written on the host into a folder the box sees under
// boxd's root-only runtime folder; boxd binds it read-only at /agent for that run only.
import { chmod, chown, mkdir, rm, writeFile } from "node:fs/promises";
import path from "node:path";
import { idPattern } from "../ids.js";
import type { RunStaging } from "../workloads/index.js";

export class DirRunStaging implements RunStaging {
  /** `where(machineId)`: the host folder and the same folder's path in the box. */
  constructor(private readonly where: (machineId: string) => { hostDir: string; boxDir: string }) {}

  #paths(machineId: string, runId: string) {
    if (!idPattern.test(runId) || !idPattern.test(machineId))
      throw new Error("malformed id in a staging path");
    const w = this.where(machineId);
    return { host: path.join(w.hostDir, "runs", runId), box: path.posix.join(w.boxDir, "runs", runId) };
  }

  async stage(
    machineId: string,
    runId: string,
    files: Record<string, Buffer>,
    uid: number,
  ): Promise<{ boxPath: string }> {
    const p = this.#paths(machineId, runId);
    // 0711: box root (an unprivileged host id) passes through to bind the run's folder;
    // nobody lists it, and agents cannot reach it (its parent is box root's, 0700)
    await mkdir(path.dirname(p.host), { recursive: true, mode: 0o711 });
    await chmod(path.dirname(p.host), 0o711);
    await mkdir(p.host, { mode: 0o500 });
    for (const [name, data] of Object.entries(files)) {
      if (!/^[a-z][a-z0-9_.-]*$/.test(name)) throw new Error(`bad staged file name ${name}`);
      const f = path.join(p.host, name);
      await writeFile(f, data, { mode: 0o400, flag: "wx" });
      await chown(f, uid, uid);
    }
    await chown(p.host, uid, uid);
    return { boxPath: p.box };
  }

  async unstage(machineId: string, runId: string): Promise<void> {
    await rm(this.#paths(machineId, runId).host, { recursive: true, force: true });
  }
}
