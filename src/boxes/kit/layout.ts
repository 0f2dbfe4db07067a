// The local provider's host tree of machines and homes, under STATE_ROOT/workspaces:
// machine folders root-owned 0755, homes owned by the agent's uid (see ./homes.ts).
import { mkdir, rm } from "node:fs/promises";
import path from "node:path";
import { idPattern } from "../../ids.js";
import type { AgentIdentity, FileOwner, HomeLayout, Trust } from "../types.js";
import { agentGroups, prepareHome, prepareMachineDir } from "./homes.js";
import { SHARED_GID } from "./users.js";

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

  async prepareHome(machineId: string, agentId: string, uid: number, trust: Trust): Promise<void> {
    await this.prepareMachine(machineId);
    await prepareHome(this.machineDir(machineId), this.#checked(agentId), uid, trust);
  }

  async removeHome(machineId: string, agentId: string): Promise<void> {
    await rm(this.homeDir(machineId, agentId), { recursive: true, force: true, maxRetries: 3 });
  }

  async removeMachine(machineId: string): Promise<void> {
    await rm(this.machineDir(machineId), { recursive: true, force: true, maxRetries: 3 });
  }

  identity(uid: number, trust: Trust): AgentIdentity {
    return { uid, ...agentGroups(uid, trust) };
  }

  /** Isolated: the agent's alone (0600). Shared: the machine's agents read it (group SHARED_GID, 0640). */
  fileOwner(uid: number, trust: Trust): FileOwner {
    return trust === "shared" ? { uid, gid: SHARED_GID, mode: 0o640 } : { uid, gid: uid, mode: 0o600 };
  }
}
