// What the runtime needs of boxd, in the runtime's own words. boxd's client implements it.
import type { Duplex } from "node:stream";

export interface BoxExecRequest {
  argv: string[];
  env: Record<string, string>;
  cwd: string;
  uid: number;
  gid: number;
  groups: number[];
  stdin?: Buffer | undefined;
  timeoutMs: number;
  /** In-box folder bound read-only at /agent for this command only. */
  agentDir?: string | undefined;
  /** Started by a generation: what it leaves running keeps the machine from being idle. */
  generation?: boolean | undefined;
  /** This command's own limits, tighter than the box's. */
  limits?: { memoryMib?: number; pids?: number } | undefined;
}

export interface BoxExecResult {
  exitCode: number | null;
  signal: string | null;
  timedOut: boolean;
  cancelled: boolean;
  durationMs: number;
  usage?: { cpuSeconds?: number | undefined; peakMemoryBytes?: number | undefined } | undefined;
}

export interface ExecIo {
  onStdout?: (chunk: Buffer) => void;
  onStderr?: (chunk: Buffer) => void;
  signal?: AbortSignal;
}

export interface BoxExec {
  ping(): Promise<{ generationProcesses?: number }>;
  exec(req: BoxExecRequest, io: ExecIo): Promise<BoxExecResult>;
  forward(port: number): Promise<Duplex>;
  refreshUsers?(): Promise<void>;
  close(): void;
}
