// The state tree under STATE_ROOT, spelled once: every part of warren finds its folders here.
import { mkdir } from "node:fs/promises";
import path from "node:path";

export interface StatePaths {
  root: string;
  /** Sockets, the lock, the development master key (0700). */
  run: string;
  /** Machines' folders and agents' homes. */
  workspaces: string;
  /** Read-only data every box sees at /data. */
  data: string;
  /** The contracts every box sees. */
  contracts: string;
  /** The embedded PostgreSQL (PGlite) when no DATABASE_URL is set. */
  pglite: string;
  /** The operator's templates (system.md). */
  templates: string;
  /** Flow instances' shared workspaces (`<instance id>/workspace`), kept after they end. */
  flows: string;
  /** The operator's policy file (workspace classes); WARREN_POLICY overrides it. */
  policy: string;
  /** Machines' environment layers (`<machine id>/<revision>`), every box's /opt/warren/env read-only. */
  environments: string;
}

/** `over`: the configuration's folders that are not under STATE_ROOT (WARREN_CONTRACTS). */
export function statePaths(
  root: string,
  over: {
    WARREN_CONTRACTS?: string | undefined;
    WARREN_POLICY?: string | undefined;
    WARREN_PROVIDER?: string | undefined;
  } = {},
): StatePaths {
  // on kubernetes flow instances' workspaces are on the workspaces claim (STATE_ROOT/workspaces),
  // its sub-path .flows every Pod mounts at /opt/warren/flows (docs/kubernetes.md)
  const flows =
    over.WARREN_PROVIDER === "kubernetes"
      ? path.join(root, "workspaces", ".flows")
      : path.join(root, "flows");
  // on kubernetes on the workspaces claim too, its sub-path .environments (docs/kubernetes.md)
  const environments =
    over.WARREN_PROVIDER === "kubernetes"
      ? path.join(root, "workspaces", ".environments")
      : path.join(root, "environments");
  return {
    root,
    environments,
    run: path.join(root, "run"),
    workspaces: path.join(root, "workspaces"),
    data: path.join(root, "data"),
    contracts: over.WARREN_CONTRACTS ?? path.join(root, "contracts"),
    pglite: path.join(root, "pglite"),
    templates: path.join(root, "templates"),
    flows,
    policy: over.WARREN_POLICY ?? path.join(root, "policy.yaml"),
  };
}

/** Makes the state tree's folders that every start needs, each with its mode. */
export async function makeStateTree(state: StatePaths): Promise<void> {
  const folders: [string, number][] = [
    [state.root, 0o711],
    [state.run, 0o700],
    [state.workspaces, 0o711],
    [state.data, 0o755],
    [state.contracts, 0o755],
    [state.flows, 0o711],
  ];
  for (const [folder, mode] of folders) await mkdir(folder, { recursive: true, mode });
}
