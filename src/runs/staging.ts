// A run's part in its machine's box, on the host beside the box's boxd folder: its private
// files (its input), which boxd binds read-only at /agent for that run only, and its labels
// (parts/<run id>.json: kind, owner, run, agent, machine, flow instance), by which recovery
// finds what a run cut short left behind, never by a name.
import { chmod, chown, mkdir, readdir, readFile, rename, rm, writeFile } from "node:fs/promises";
import path from "node:path";
import { idPattern } from "../ids.js";
import type { RunLabels, RunStaging } from "../workloads/index.js";

/** A labelled run part found on the host. */
export interface FoundPart {
  machineId: string;
  runId: string;
  labels: RunLabels;
}

export class DirRunStaging implements RunStaging {
  /** `where(machineId)`: the host folder and the same folder's path in the box. */
  constructor(private readonly where: (machineId: string) => { hostDir: string; boxDir: string }) {}

  #paths(machineId: string, runId: string) {
    if (!idPattern.test(runId) || !idPattern.test(machineId))
      throw new Error("malformed id in a staging path");
    const w = this.where(machineId);
    return {
      host: path.join(w.hostDir, "runs", runId),
      box: path.posix.join(w.boxDir, "runs", runId),
      labels: path.join(w.hostDir, "parts", `${runId}.json`),
    };
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

  /** Writes the run part's labels (the server's own file, 0600, in a folder no agent reaches). */
  async label(machineId: string, runId: string, labels: RunLabels): Promise<void> {
    const file = this.#paths(machineId, runId).labels;
    await mkdir(path.dirname(file), { recursive: true, mode: 0o700 });
    const tmp = `${file}.${process.pid}.tmp`;
    await writeFile(tmp, `${JSON.stringify(labels, null, 2)}\n`, { mode: 0o600 });
    await rename(tmp, file);
  }

  /** The run's part goes: its files and its labels. */
  async unstage(machineId: string, runId: string): Promise<void> {
    const p = this.#paths(machineId, runId);
    await rm(p.host, { recursive: true, force: true });
    await rm(p.labels, { force: true });
  }

  /** The labelled run parts on the host of these machines' boxes whose labels hold all of `match`. */
  async find(machineIds: readonly string[], match: RunLabels = {}): Promise<FoundPart[]> {
    const out: FoundPart[] = [];
    for (const machineId of machineIds) {
      if (!idPattern.test(machineId)) continue;
      let names: string[];
      let dir: string;
      try {
        dir = path.join(this.where(machineId).hostDir, "parts");
        names = await readdir(dir);
      } catch {
        continue;
      }
      for (const name of names) {
        const runId = name.endsWith(".json") ? name.slice(0, -5) : "";
        if (!idPattern.test(runId)) continue;
        let labels: RunLabels;
        try {
          const v: unknown = JSON.parse(await readFile(path.join(dir, name), "utf8"));
          if (!v || typeof v !== "object") continue;
          labels = v as RunLabels;
        } catch {
          continue;
        }
        if (labels["warren.run"] !== runId) continue;
        if (Object.entries(match).every(([k, v]) => labels[k] === v)) out.push({ machineId, runId, labels });
      }
    }
    return out;
  }
}
