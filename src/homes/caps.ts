// Disk caps, as the agent-home reference sets them: measured after each generation, a stored
// size over its cap measured again at the next generation's start, workspace.full otherwise.
// A flow instance's workspace (outside every machine's folder) is measured after each run in
// it and capped at the host's WORKSPACE_MAX_MIB the same way.
import { eq } from "drizzle-orm";
import { WarrenError } from "../errors.js";
import type { HomeLayout } from "../boxes/index.js";
import type { AgentRow, Db, MachineRow } from "../store/index.js";
import { schema } from "../store/index.js";
import { existsSync } from "node:fs";
import { measure, toMib } from "./measure.js";

/** The agent's effective cap: its own, never above the host's WORKSPACE_MAX_MIB. */
export const effectiveCap = (agentMax: number, hostMax: number): number => Math.min(agentMax, hostMax);

export interface Sizes {
  agentMib: number;
  machineMib: number;
  /** The flow instance's workspace, for a run inside one. */
  instanceMib?: number;
}

/** Why a generation may not start, or null. Pure: the gate's rule in one place. */
export function capProblem(
  a: { name: string; workspaceMib: number | null; cap: number },
  m: { name: string; workspaceMib: number | null; cap: number },
): string | null {
  if (a.workspaceMib !== null && a.workspaceMib > a.cap) {
    return `agent ${a.name}'s home holds ${a.workspaceMib} MiB, above the ${a.cap} MiB limit; free space from the terminal (or exec) or raise the agent's max_workspace_mib`;
  }
  if (m.workspaceMib !== null && m.workspaceMib > m.cap) {
    return `machine ${m.name}'s folder holds ${m.workspaceMib} MiB, above the ${m.cap} MiB limit; free space from the terminal (or exec) or raise the machine's max_workspace_mib`;
  }
  return null;
}

export class DiskCaps {
  constructor(
    private readonly db: Db,
    private readonly layout: HomeLayout,
    private readonly hostMaxMib: number,
    /** The agent's own /workspace folders (its workspace class's), counted with its home. */
    private readonly workspaceDir?: (machineId: string, agentId: string) => string,
    /** A flow instance's workspace folder: measured and capped like a home (at the host's cap). */
    private readonly instanceDir?: (instanceId: string) => string,
  ) {}

  /** Measures a flow instance's workspace and stores its size. */
  async #measureInstance(instanceId: string): Promise<number | undefined> {
    const dir = this.instanceDir?.(instanceId);
    if (dir === undefined || !existsSync(dir)) return undefined;
    const { mib } = await measure(dir);
    await this.db
      .update(schema.flowInstances)
      .set({ workspaceMib: mib })
      .where(eq(schema.flowInstances.id, instanceId));
    return mib;
  }

  /** The gate of a run inside a flow instance: its workspace over the host's cap is workspace.full. */
  async #gateInstance(instanceId: string): Promise<void> {
    const [i] = await this.db
      .select({ mib: schema.flowInstances.workspaceMib })
      .from(schema.flowInstances)
      .where(eq(schema.flowInstances.id, instanceId));
    let mib = i?.mib ?? null;
    // stored above the cap: measured again, so that space freed meanwhile counts at once
    if (mib !== null && mib > this.hostMaxMib) mib = (await this.#measureInstance(instanceId)) ?? null;
    if (mib !== null && mib > this.hostMaxMib)
      throw new WarrenError(
        "workspace.full",
        `flow instance ${instanceId}'s workspace holds ${mib} MiB, above the ${this.hostMaxMib} MiB limit (WORKSPACE_MAX_MIB); free space in it (its host_path) or start a new instance`,
      );
  }

  /**
   * Measures the agent's home (with its per-agent workspaces) and its machine's folder (which
   * holds them too) and stores both sizes.
   */
  async measureAndStore(agent: AgentRow, machine: MachineRow, instanceId?: string): Promise<Sizes> {
    const ws = this.workspaceDir?.(machine.id, agent.id);
    const [home, folder, workspace] = await Promise.all([
      measure(this.layout.homeDir(machine.id, agent.id)),
      measure(this.layout.machineDir(machine.id)),
      ws !== undefined && existsSync(ws) ? measure(ws) : null,
    ]);
    const agentMib = workspace ? toMib(home.bytes + workspace.bytes) : home.mib;
    await this.db.update(schema.agents).set({ workspaceMib: agentMib }).where(eq(schema.agents.id, agent.id));
    await this.db
      .update(schema.machines)
      .set({ workspaceMib: folder.mib })
      .where(eq(schema.machines.id, machine.id));
    const instanceMib = instanceId !== undefined ? await this.#measureInstance(instanceId) : undefined;
    return { agentMib, machineMib: folder.mib, ...(instanceMib !== undefined ? { instanceMib } : {}) };
  }

  /**
   * The gate before a generation. Sizes stored above their caps are measured again first,
   * so that space freed from a terminal counts at once. Returns the sizes it knows.
   */
  async gate(
    agent: AgentRow,
    machine: MachineRow,
    instanceId?: string,
  ): Promise<{ agentMib: number | null; machineMib: number | null }> {
    if (instanceId !== undefined) await this.#gateInstance(instanceId);
    const cap = effectiveCap(agent.maxWorkspaceMib, this.hostMaxMib);
    let a = { name: agent.name, workspaceMib: agent.workspaceMib, cap };
    let m = { name: machine.name, workspaceMib: machine.workspaceMib, cap: machine.maxWorkspaceMib };
    if (capProblem(a, m) !== null) {
      const sizes = await this.measureAndStore(agent, machine);
      a = { ...a, workspaceMib: sizes.agentMib };
      m = { ...m, workspaceMib: sizes.machineMib };
    }
    const problem = capProblem(a, m);
    if (problem) throw new WarrenError("workspace.full", problem);
    return { agentMib: a.workspaceMib, machineMib: m.workspaceMib };
  }
}
