// What the machine and agent services need of the runtime, as a narrow interface.

import type { HealthNow } from "./health.js";

/** A machine's box as the API shows it. */
export type BoxView = HealthNow & {
  state: "stopped" | "starting" | "running" | "paused";
  events: { at: string; type: string; detail: string; data: Record<string, unknown> }[];
};

/** Box lifecycle as the services see it. */
export interface MachineControl {
  /** The box's state, usage, limit and latest events. */
  box(machineId: string, state: BoxView["state"]): Promise<BoxView>;
  stop(machineId: string, reason: string): Promise<void>;
  /** Freezes the machine's running box in memory; the next command resumes it. */
  pause(machineId: string, reason: string): Promise<void>;
  /** Stops and forgets the machine's box (machine deleted). */
  remove(machineId: string): Promise<void>;
  /** Tells a running box that its agents changed (users, groups). */
  agentsChanged(machineId: string): Promise<void>;
}
