// An agent's sandbox policy: which paths beyond its home it may read and write, which hosts
// its programs may reach (the schema is the contract's), and the file access it gives a command.
import type { SandboxPolicy } from "../contract/policy.js";
import { BOX_PATHS } from "../boxes/paths.js";

export const emptyPolicy = (): SandboxPolicy => ({ files: { read: [], write: [] }, network: { allow: [] } });

/** What every command may read and execute, whatever its policy: the system and the box's shared folders. */
export const SYSTEM_READ: readonly string[] = [
  ...BOX_PATHS.system,
  BOX_PATHS.etc,
  BOX_PATHS.proc,
  BOX_PATHS.data,
  BOX_PATHS.contracts,
  BOX_PATHS.bin,
  BOX_PATHS.harness,
  BOX_PATHS.authority,
];

/**
 * A command's file access from its agent's sandbox policy: the system read-only, its
 * home, /tmp and /dev read-write, the policy's paths on top; a run's /agent and the
 * agent's runtime folder read-only;
 * on a trust: shared machine the other homes read-only (their modes allow it there).
 * Beyond these lists boxd-spawn lets every folder be listed (names, never contents), so
 * `ls /` works; folders closed by their modes (other homes, 0700) stay closed.
 */
export function fileAccessOf(
  policy: SandboxPolicy,
  where: { home: string; shared: boolean; agentDir?: boolean; env?: string; runtime?: string },
): { read: string[]; write: string[] } {
  const read = [...SYSTEM_READ];
  // its own runtime folder (/run/warren/<agent id>: short-lived tokens), never another's
  if (where.runtime) read.push(where.runtime);
  // its own machine's environment layers, never another machine's
  if (where.env) read.push(where.env);
  if (where.shared) read.push(BOX_PATHS.homes);
  if (where.agentDir) read.push(BOX_PATHS.agent);
  const write = [where.home, BOX_PATHS.tmp, BOX_PATHS.dev];
  return {
    read: [...new Set([...read, ...policy.files.read])],
    write: [...new Set([...write, ...policy.files.write])],
  };
}
