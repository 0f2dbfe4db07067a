// The wire shapes of warren's HTTP API, snake_case as the server sends and accepts them.

/** Every list answer: `{items: [...]}`. */
export interface List<T> {
  items: T[];
}

export type Role = "owner" | "admin" | "editor" | "viewer" | "auditor";

// Organisations

export interface Org {
  id: string;
  name: string;
  /** The caller's role in the organisation. */
  role: Role;
}

export interface OrgCreateRequest {
  name: string;
}

export interface OrgUpdateRequest {
  name: string;
}

export interface Member {
  user_id: string;
  email: string;
  role: Role;
}

export interface MemberSetRequest {
  email: string;
  role: Role;
}

// Machines

export type MachineState = "stopped" | "starting" | "running";
export type MachineTrust = "isolated" | "shared";

export interface Machine {
  id: string;
  org_id: string;
  name: string;
  state: MachineState;
  state_reason: string;
  state_changed_at: string;
  max_workspace_mib: number;
  /** `null` before the first measurement. */
  workspace_mib: number | null;
  memory_mib: number;
  cpus: number;
  trust: MachineTrust;
  /** How many agents live on the machine. */
  agents: number;
  created_at: string;
}

export interface MachineCreateRequest {
  org_id: string;
  name: string;
  max_workspace_mib?: number;
  memory_mib?: number;
  cpus?: number;
  trust?: MachineTrust;
}

export interface MachineUpdateRequest {
  name?: string;
  max_workspace_mib?: number;
  memory_mib?: number;
  cpus?: number;
}

export interface MachineListQuery {
  org_id?: string;
}

// Agents

/** Which paths beyond its home an agent may read and write, which hosts it may reach. */
export interface SandboxPolicy {
  files: { read: string[]; write: string[] };
  network: { allow: string[] };
}

/** A policy as sent: absent parts mean "nothing beyond the home". */
export interface SandboxPolicyInput {
  files?: { read?: string[]; write?: string[] };
  network?: { allow?: string[] };
}

export interface Agent {
  id: string;
  org_id: string;
  machine_id: string;
  name: string;
  slot: number;
  uid: number;
  /** `/home/<agent id>` */
  home: string;
  ports: { first: number; last: number };
  max_workspace_mib: number;
  /** `null` before the first measurement. */
  workspace_mib: number | null;
  sandbox_policy: SandboxPolicy;
  created_at: string;
  warnings?: string[];
}

export interface AgentCreateRequest {
  org_id: string;
  machine_id: string;
  name: string;
  max_workspace_mib?: number;
}

export interface AgentUpdateRequest {
  name?: string;
  max_workspace_mib?: number;
  sandbox_policy?: SandboxPolicyInput;
}

export interface AgentListQuery {
  org_id?: string;
  machine_id?: string;
}

// Guilds

export interface Guild {
  id: string;
  org_id: string;
  name: string;
  agent_ids: string[];
}

export interface GuildCreateRequest {
  org_id: string;
  name: string;
}

export interface GuildListQuery {
  org_id?: string;
}

// Commands in the box

export interface ExecRequest {
  /** The program and its arguments; give this or `command`. */
  argv?: string[];
  /** Shell text run by `/bin/bash -c`; give this or `argv`. */
  command?: string;
  /** Default: the agent's home. */
  cwd?: string;
  env?: Record<string, string>;
  stdin?: string;
  /** Default 60000. */
  timeout_ms?: number;
  /** The command's own limits, tighter than its machine's. */
  limits?: CommandLimits;
}

/** A command's own limits: memory of its whole tree (at least 16 MiB) and its processes. */
export interface CommandLimits {
  memory_mib?: number;
  pids?: number;
}

export interface ExecResult {
  exit_code: number | null;
  signal: string | null;
  stdout: string;
  stderr: string;
  duration_ms: number;
  timed_out: boolean;
  stdout_truncated: boolean;
  stderr_truncated: boolean;
}

/** A piece of output of a streamed exec, as it arrives. */
export interface ExecOutputEvent {
  stream: "stdout" | "stderr";
  data: string;
}

/** The last line of a streamed exec. */
export interface ExecExitEvent {
  exit_code: number | null;
  signal: string | null;
  duration_ms: number;
  timed_out: boolean;
}

export type ExecStreamEvent = ExecOutputEvent | ExecExitEvent;

// Homes

export interface Usage {
  workspace_mib: number | null;
  max_workspace_mib: number;
  machine: { id: string; name: string; workspace_mib: number | null; max_workspace_mib: number };
}

// Runs

export type RunStatus = "queued" | "running" | "succeeded" | "failed" | "timed_out" | "cancelled" | "lost";

/** What a run did and used, written when it ends. */
export interface RunReceipt {
  run_id: string;
  kind: string;
  argv: string[];
  agent_id: string;
  agent_name: string;
  machine_id: string;
  uid: number;
  /** The file access it ran under: folders to read and execute, and to write too. */
  files?: { read: string[]; write: string[] };
  server_version: string;
  started_at: string;
  ended_at: string;
  duration_ms: number;
  exit_code: number | null;
  signal: string | null;
  cpu_seconds: number | null;
  peak_memory_bytes: number | null;
  /** stdout and stderr bytes together. */
  bytes_out: number;
  stdout_bytes: number;
  stderr_bytes: number;
  input_bytes: number;
  limits: CommandLimits | null;
  disk_before_mib: number | null;
  disk_after_mib: number | null;
  machine_disk_before_mib: number | null;
  machine_disk_after_mib: number | null;
}

export interface Run {
  id: string;
  agent_id: string;
  machine_id: string;
  kind: string;
  status: RunStatus;
  /** Why the run is in its status, when there is more to say (e.g. why it failed to start). */
  status_reason: string | null;
  argv: string[];
  exit_code: number | null;
  signal: string | null;
  /** What the run printed on stdout, redacted. */
  output: string;
  output_truncated: boolean;
  timeout_s: number;
  created_at: string;
  started_at: string | null;
  ended_at: string | null;
  /** What the run did and used, once it ended (null before). */
  receipt: RunReceipt | null;
  /** True when the caller's role (auditor) may not see workloads: output is then empty. */
  output_withheld?: boolean;
}

export interface RunCreateRequest {
  /** Only `"command"` so far; the SDK sends it when left out. */
  kind?: "command";
  /** The program and its arguments; give this or `command`. */
  argv?: string[];
  /** Shell text; give this or `argv`. */
  command?: string;
  env?: Record<string, string>;
  /** Becomes the file `/agent/input` in the run; at most 256 KiB. */
  input?: string;
  timeout_s?: number;
  /** The run's own limits, tighter than its machine's. */
  limits?: CommandLimits;
}

export interface RunListQuery {
  /** 1-500, default 50; newest first. */
  limit?: number;
  /** Runs older than this run id (the next page). */
  before?: string;
}

export interface RunEvent {
  id: number;
  type: string;
  at: string;
  data: unknown;
}

export interface RunEventsQuery {
  /** Only events after this event id. */
  after?: number;
}

export interface Health {
  ok: boolean;
}
