// What the machine and agent services need from the box side, as narrow interfaces.

/** The host-side folders of machines and homes. */
export interface HomeLayout {
  machineDir(machineId: string): string;
  homeDir(machineId: string, agentId: string): string;
  prepareMachine(machineId: string): Promise<void>;
  prepareHome(machineId: string, agentId: string, uid: number, trust: "isolated" | "shared"): Promise<void>;
  removeHome(machineId: string, agentId: string): Promise<void>;
  removeMachine(machineId: string): Promise<void>;
}

/** Box lifecycle as the services see it. */
export interface MachineControl {
  stop(machineId: string, reason: string): Promise<void>;
  /** Stops and forgets the machine's box (machine deleted). */
  remove(machineId: string): Promise<void>;
  /** Tells a running box that its agents changed (users, groups). */
  agentsChanged(machineId: string): Promise<void>;
}
