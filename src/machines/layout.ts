// The host-side tree of machines and homes under STATE_ROOT/workspaces.
import { mkdir, rm } from "node:fs/promises";
import path from "node:path";
import { prepareHome, prepareMachineDir } from "../boxes/index.js";
import { idPattern } from "../ids.js";
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
    await prepareMachineDir(this.machineDir(machineId));
  }

  async prepareHome(
    machineId: string,
    agentId: string,
    uid: number,
    trust: "isolated" | "shared",
  ): Promise<void> {
    await this.prepareMachine(machineId);
    await prepareHome(this.machineDir(machineId), this.#checked(agentId), uid, trust);
  }

  async removeHome(machineId: string, agentId: string): Promise<void> {
    await rm(this.homeDir(machineId, agentId), { recursive: true, force: true, maxRetries: 3 });
  }

  async removeMachine(machineId: string): Promise<void> {
    await rm(this.machineDir(machineId), { recursive: true, force: true, maxRetries: 3 });
  }
}
