// The provider seam: everything the rest of warren knows about where boxes run.
// A provider creates, starts, stops, inspects, lists and removes boxes, and lays out the
// host folders they mount (HomeLayout); what runs inside a box is boxd's job (src/boxd),
// reached through BoxHandle.endpoint. Uids, groups, modes and folders of one provider
// stay behind this interface.

import type { BoxdEndpoint } from "../boxd/index.js";
import type { TRUSTS } from "../contract/lists.js";

/** The built-in providers, or one an extension registers (select.ts). */
export type ProviderName = "local" | "oci" | "kubernetes" | (string & {});

/** `paused`: every process of the box stands frozen in memory (resume thaws it). */
export type BoxState = "created" | "running" | "paused" | "stopped";

/** Labels every box carries so that a restarted server adopts or reaps it by label. */
export interface BoxLabels {
  "warren.kind": "machine";
  "warren.org": string;
  "warren.machine": string;
  "warren.provider": ProviderName;
  [key: string]: string;
}

export type BoxMount =
  | { kind: "bind"; source: string; target: string; readOnly: boolean }
  | { kind: "tmpfs"; target: string; sizeMib: number; mode?: number };

export interface BoxLimits {
  memoryMib: number;
  cpus: number;
  pids: number;
  tmpMib: number;
}

export interface BoxSpec {
  /** Stable id of the box; the machine id is used, so a machine never has two boxes. */
  id: string;
  labels: BoxLabels;
  mounts: BoxMount[];
  limits: BoxLimits;
  /** TCP ports in the box whose connections boxd carries to the server (BOX_BRIDGES). */
  bridges?: BoxBridge[];
  /**
   * The machine's own image (oci: the container's, kubernetes: the Pod's), whose system
   * folders the box runs instead of the host's; the walls stay the same. `local` refuses it.
   */
  image?: string | undefined;
  /** Host device files the box sees at the same path (the `gpu` capability's: kit/devices.ts). */
  devices?: string[] | undefined;
}

/** A bridge: its name and its port on the box's loopback. */
export interface BoxBridge {
  name: string;
  port: number;
}

/** How the server reaches boxd inside a box (boxd's own type: src/boxd sits below the seam). */
export type BoxEndpoint = BoxdEndpoint;

export interface BoxHandle {
  id: string;
  labels: BoxLabels;
  state: BoxState;
  endpoint: BoxEndpoint;
  /** Host pid of the box's outermost process, when the provider has one. */
  pid: number | null;
  startedAt: Date | null;
}

/** Whether agents of one machine read each other's homes (`shared`) or not. */
export type Trust = (typeof TRUSTS)[number];

/** Who an agent's commands run as. */
export interface AgentIdentity {
  uid: number;
  gid: number;
  /** Supplementary groups. */
  groups: number[];
}

/** Owner and mode of a file the server writes in an agent's home. */
export interface FileOwner {
  uid: number;
  gid: number;
  mode: number;
}

/** The host-side folders of machines (a box's /home) and agents' homes, and who owns them. */
export interface HomeLayout {
  machineDir(machineId: string): string;
  homeDir(machineId: string, agentId: string): string;
  prepareMachine(machineId: string): Promise<void>;
  prepareHome(machineId: string, agentId: string, uid: number, trust: Trust): Promise<void>;
  removeHome(machineId: string, agentId: string): Promise<void>;
  removeMachine(machineId: string): Promise<void>;
  /** The uid, gid and groups of the agent with this uid on a machine of this trust. */
  identity(uid: number, trust: Trust): AgentIdentity;
  /** Owner and mode of a file the server writes in the home of that agent. */
  fileOwner(uid: number, trust: Trust): FileOwner;
}

/** A host folder that a running box sees at `boxDir`, readable by box root only. */
export interface RunFilesDir {
  hostDir: string;
  boxDir: string;
}

/** What a cgroup used: the box's, the agents', or one command's. */
export interface UsageSample {
  cpuSeconds: number;
  memoryBytes: number;
  memoryPeakBytes: number;
  /** Of memoryBytes, what the kernel cannot reclaim without swap: anonymous memory and tmpfs. */
  unreclaimableBytes: number;
  pids: number;
  /** Processes the OOM killer ended (a count that only grows while the cgroup exists). */
  oomKills: number;
  /** Times the memory limit was hit (a count that only grows). */
  memoryLimitHits: number;
  /** Forks the pids limit refused (a count that only grows). */
  pidsLimitHits: number;
  memoryLimitBytes: number | null;
  pidsLimit: number | null;
}

/** A running box's usage, read by the provider (never from inside the box). */
export interface BoxUsage {
  /** The whole box: boxd and the agents' commands. */
  box: UsageSample;
  /** The agents' commands together, under the machine's limits. */
  agents: UsageSample;
  /** One per command tree boxd made (the `cgroup` of its `started` message), by name. */
  commands: ({ name: string } & UsageSample)[];
}

/** One boot check of what boxes need on this host: `fix` says what to do when it fails. */
export type HostProbe = () => Promise<{ ok: boolean; detail: string; fix: string }>;

export interface BoxProvider {
  readonly name: ProviderName;
  /** Where machines' folders and agents' homes are, and how they are owned. */
  readonly homes: HomeLayout;
  /** Records the box; does not start it. Creating an id that exists replaces its spec. */
  create(spec: BoxSpec): Promise<BoxHandle>;
  /** Starts the box and resolves once boxd answers on the endpoint. */
  start(id: string): Promise<BoxHandle>;
  /** Stops every process of the box; files in its mounts stay. */
  stop(id: string): Promise<void>;
  /** Freezes every process of a running box in memory (a no-op when it is paused already). */
  pause(id: string): Promise<void>;
  /** False when pause is always refused (kubernetes): idle boxes are then stopped, never paused. */
  readonly pauses?: boolean;
  /** Thaws a paused box and resolves once boxd answers; a running box is left as it is. */
  resume(id: string): Promise<BoxHandle>;
  inspect(id: string): Promise<BoxHandle | null>;
  /** Every box this provider knows, optionally filtered by labels (all must match). */
  list(labels?: Partial<BoxLabels>): Promise<BoxHandle[]>;
  /** Stops the box if needed and forgets it. */
  remove(id: string): Promise<void>;
  /** Tells the box that the homes in its /home changed (its users and groups). */
  refreshUsers(id: string): Promise<void>;
  /** Where a run's private files go on the host so that boxd can bind them for that run. */
  runFilesDir(id: string): RunFilesDir;
  /**
   * The host folder a running box sees at /run/warren/<agent id> (BOX_PATHS.runtime), the
   * agent's uid's alone; null where the provider has none (kubernetes).
   */
  runtimeDir(id: string, agentId: string): string | null;
  /** The running box's usage, or null when it is not running or the provider cannot tell. */
  usage(id: string): Promise<BoxUsage | null>;
  /** The checks of what this provider's boxes need of the host, by name (src/boot runs them). */
  hostProbes(opts: { repair: boolean }): Record<string, HostProbe>;
  /** Ends every process of one command tree (by its cgroup name); returns how many were ended. */
  killCommand(id: string, name: string): Promise<number>;
  /**
   * Gives a running warm box (started ahead under an id of its own) to a machine that has
   * no box: its folder, users, labels and limits become the machine's. Providers that
   * cannot do so leave it out, and their machines always start cold.
   */
  claim?(warmId: string, spec: BoxSpec): Promise<BoxHandle>;
  /** Lets go of what the provider holds in this process (boxes go on running). */
  close?(): void;
}
