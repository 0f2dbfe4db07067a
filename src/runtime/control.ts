// What the machine and agent services need of the runtime, as a narrow interface.

/** Box lifecycle as the services see it. */
export interface MachineControl {
  stop(machineId: string, reason: string): Promise<void>;
  /** Stops and forgets the machine's box (machine deleted). */
  remove(machineId: string): Promise<void>;
  /** Tells a running box that its agents changed (users, groups). */
  agentsChanged(machineId: string): Promise<void>;
}
