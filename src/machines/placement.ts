// Placement: an agent takes the lowest free slot on its machine; the slot gives its uid,
// its port block and (with its id) its home.
import { BOX_PATHS } from "../boxes/index.js";

/** Slots stop where a port block would pass 65535. */
export const MAX_SLOTS = 400;
export const UID_BASE = 10000;
export const PORT_BASE = 20000;
export const PORTS_PER_AGENT = 100;

export function lowestFreeSlot(taken: Iterable<number>): number | null {
  const used = new Set(taken);
  for (let s = 0; s < MAX_SLOTS; s++) if (!used.has(s)) return s;
  return null;
}

export const uidOf = (slot: number): number => UID_BASE + slot;

/** Who runs as a uid of a machine. */
export interface AgentAt {
  id: string;
  orgId: string;
}

/** Finds the agent of a machine that runs as a uid (uids.ts, the one place a uid names an agent). */
export type AgentAtUid = (machineId: string, uid: number) => Promise<AgentAt | null>;

export function portsOf(slot: number): { first: number; last: number } {
  const first = PORT_BASE + PORTS_PER_AGENT * slot;
  return { first, last: first + PORTS_PER_AGENT - 1 };
}

export const homeOf = (agentId: string): string => `${BOX_PATHS.homes}/${agentId}`;

/** The agent's runtime folder in its box (its uid's alone): short-lived tokens. */
export const runtimeDirOf = (agentId: string): string => `${BOX_PATHS.runtime}/${agentId}`;

/** A machine's environment layers in its box (each revision a folder of it). */
export const envDirOf = (machineId: string): string => `${BOX_PATHS.env}/${machineId}`;

/**
 * What a command's PATH and loader path gain from its machine's environment at `revision`
 * (0, the base alone: nothing): the layer's bin folders before the system's, its lib folders.
 */
export function envVariables(machineId: string, revision: number): { path: string[]; libs: string[] } {
  if (revision <= 0) return { path: [], libs: [] };
  const root = `${envDirOf(machineId)}/${revision}`;
  return {
    path: ["/usr/local/bin", "/usr/bin", "/bin", "/usr/sbin", "/sbin"].map((d) => root + d),
    libs: ["/usr/local/lib", "/usr/lib/x86_64-linux-gnu", "/lib/x86_64-linux-gnu", "/usr/lib"].map(
      (d) => root + d,
    ),
  };
}
