// The host-side tree of machines and homes under STATE_ROOT/workspaces.
import { chmod, chown, lstat, mkdir, rm } from "node:fs/promises";
import path from "node:path";
import { idPattern } from "../ids.js";
import { SHARED_GID } from "./placement.js";
import type { HomeLayout } from "./ports.js";

export class FsHomeLayout implements HomeLayout {
  readonly root: string;

  constructor(workspacesRoot: string) {
    this.root = workspacesRoot;
  }

  #checked(id: string): string {
    if (!idPattern.test(id)) throw new Error(`refusing a malformed id in a host path: ${JSON.stringify(id)}`);
    return id;
  }

  machineDir(machineId: string): string {
    return path.join(this.root, this.#checked(machineId));
  }

  homeDir(machineId: string, agentId: string): string {
    return path.join(this.machineDir(machineId), this.#checked(agentId));
  }

  async prepareMachine(machineId: string): Promise<void> {
    await mkdir(this.root, { recursive: true, mode: 0o711 });
    const dir = this.machineDir(machineId);
    await mkdir(dir, { recursive: true, mode: 0o711 });
    // root-owned, traversable, not listable: an agent finds its own home, not the others'
    await chown(dir, 0, 0);
    await chmod(dir, 0o711);
  }

  async prepareHome(
    machineId: string,
    agentId: string,
    uid: number,
    trust: "isolated" | "shared",
  ): Promise<void> {
    await this.prepareMachine(machineId);
    const home = this.homeDir(machineId, agentId);
    await mkdir(home, { mode: 0o700 }).catch((e: NodeJS.ErrnoException) => {
      if (e.code !== "EEXIST") throw e;
    });
    const st = await lstat(home);
    if (!st.isDirectory()) throw new Error(`home ${home} exists and is not a folder`);
    const gid = trust === "shared" ? SHARED_GID : uid;
    await chown(home, uid, gid);
    await chmod(home, trust === "shared" ? 0o2750 : 0o700);
  }

  async removeHome(machineId: string, agentId: string): Promise<void> {
    await rm(this.homeDir(machineId, agentId), { recursive: true, force: true, maxRetries: 3 });
  }

  async removeMachine(machineId: string): Promise<void> {
    await rm(this.machineDir(machineId), { recursive: true, force: true, maxRetries: 3 });
  }
}
