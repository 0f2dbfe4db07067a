// The provider seam: everything the rest of warren knows about where boxes run.
// A provider only creates, starts, stops, inspects, lists and removes boxes; what runs
// inside a box is boxd's job (src/boxd), reached through BoxHandle.endpoint.

export type ProviderName = "local" | "oci" | "kubernetes";

export type BoxState = "created" | "running" | "stopped";

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
}

/** How the server reaches boxd inside a box. */
export type BoxEndpoint = { kind: "unix"; path: string } | { kind: "tcp"; host: string; port: number };

export interface BoxHandle {
  id: string;
  labels: BoxLabels;
  state: BoxState;
  endpoint: BoxEndpoint;
  /** Host pid of the box's outermost process, when the provider has one. */
  pid: number | null;
  startedAt: Date | null;
}

export interface BoxProvider {
  readonly name: ProviderName;
  /** Records the box; does not start it. Creating an id that exists replaces its spec. */
  create(spec: BoxSpec): Promise<BoxHandle>;
  /** Starts the box and resolves once boxd answers on the endpoint. */
  start(id: string): Promise<BoxHandle>;
  /** Stops every process of the box; files in its mounts stay. */
  stop(id: string): Promise<void>;
  inspect(id: string): Promise<BoxHandle | null>;
  /** Every box this provider knows, optionally filtered by labels (all must match). */
  list(labels?: Partial<BoxLabels>): Promise<BoxHandle[]>;
  /** Stops the box if needed and forgets it. */
  remove(id: string): Promise<void>;
}
