// Where a provider keeps things on the host: its roots (STATE_ROOT/run, the workspaces
// root of machines' folders and homes) and one state folder per box under the run root
// (local: run/boxes/<id>, oci: run/oci-boxes/<id>, kubernetes: run/k8s-boxes/<id>), with
// boxd's socket in it. A box id is checked before it becomes a host path.
import fs from "node:fs";
import path from "node:path";
import { WarrenError } from "../../errors.js";
import type { BoxEndpoint, RunFilesDir } from "../types.js";
import { BOX_ID } from "./record.js";

export interface ProviderRoots {
  stateRoot: string;
  /** Default STATE_ROOT/run. */
  runRoot?: string | undefined;
  /** Machines' folders and agents' homes (default STATE_ROOT/workspaces). */
  workspacesRoot?: string | undefined;
}

/** The run root and the workspaces root, absolute. */
export function providerRoots(o: ProviderRoots): { runRoot: string; workspacesRoot: string } {
  const stateRoot = path.resolve(o.stateRoot);
  return {
    runRoot: path.resolve(o.runRoot ?? path.join(stateRoot, "run")),
    workspacesRoot: path.resolve(o.workspacesRoot ?? path.join(stateRoot, "workspaces")),
  };
}

/** The boxes' state folders of one provider: `<root>/<id>`. */
export class BoxDirs {
  constructor(
    readonly root: string,
    /** boxd's socket, relative to the box's folder. */
    private readonly socket = path.join("boxd", "boxd.sock"),
  ) {}

  /** The box's folder; a malformed id is refused (request.invalid). */
  dir(id: string): string {
    if (!BOX_ID.test(id)) throw new WarrenError("request.invalid", `bad box id ${JSON.stringify(id)}`);
    return path.join(this.root, id);
  }

  endpoint(id: string): Extract<BoxEndpoint, { kind: "unix" }> {
    return { kind: "unix", path: path.join(this.dir(id), this.socket) };
  }

  /** The box's boxd folder (bound at /run/boxd, box root's): a run's files go in runs/ there. */
  runFiles(id: string): RunFilesDir {
    return { hostDir: path.join(this.dir(id), "boxd"), boxDir: "/run/boxd" };
  }

  /** The ids of the boxes with a folder here. */
  ids(): string[] {
    try {
      return fs.readdirSync(this.root).filter((d) => BOX_ID.test(d));
    } catch {
      return [];
    }
  }
}
