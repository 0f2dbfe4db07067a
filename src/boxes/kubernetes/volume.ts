// What the kubernetes provider writes for a box on the workspaces claim, which the server
// mounts at its workspaces root and each Pod by sub-path (manifests.ts, workspaceSubPaths):
// the box's private folder for runs' files (box root's, 0700) and its passwd and group,
// written from the homes in the machine's folder as the local provider writes its own.
// The homes themselves are the server's (HomeLayout, the same folder).
import fs from "node:fs/promises";
import path from "node:path";
import { WarrenError } from "../../errors.js";
import { usersText } from "../kit/users.js";
import { BOX_PATHS } from "../paths.js";
import type { BoxSpec } from "../types.js";
import { workspaceSubPaths } from "./manifests.js";

export class BoxVolume {
  constructor(
    readonly root: string,
    /** The id box root's folders carry on the claim (docs/kubernetes.md, "File owners"). */
    private readonly boxRootId: number,
  ) {}

  /** The box's sub-paths as folders and files under the server's mount of the claim. */
  paths(id: string): { home: string; private: string; passwd: string; group: string } {
    const sub = workspaceSubPaths(id);
    return {
      home: path.join(this.root, sub.home),
      private: path.join(this.root, sub.private),
      passwd: path.join(this.root, sub.passwd),
      group: path.join(this.root, sub.group),
    };
  }

  /** The Pod mounts the claim's `<id>` at /home: a spec whose /home is another folder is refused. */
  checkHome(spec: BoxSpec): void {
    const home = spec.mounts.find((m) => path.posix.normalize(m.target) === BOX_PATHS.homes);
    if (!home) return;
    const want = this.paths(spec.id).home;
    if (home.kind !== "bind" || path.resolve(home.source) !== want)
      throw new WarrenError(
        "request.invalid",
        `box ${spec.id}: /home must be the machine's folder on the workspaces claim (${want})`,
      );
  }

  /** Before the Pod: its private folder (box root's, 0700) and its users, from the homes there now. */
  async prepare(spec: BoxSpec): Promise<void> {
    const p = this.paths(spec.id);
    const parent = path.dirname(p.private);
    await fs.mkdir(parent, { recursive: true, mode: 0o711 });
    await fs.chmod(parent, 0o711);
    await fs.mkdir(p.private, { recursive: true, mode: 0o700 });
    await fs.chown(p.private, this.boxRootId, this.boxRootId);
    await fs.chmod(p.private, 0o700);
    await this.writeUsers(spec);
  }

  /**
   * passwd and group from the homes in the machine's folder (each home owned by an agent
   * uid is a user). In place (same inode): a running Pod has each file mounted by sub-path.
   */
  async writeUsers(spec: BoxSpec): Promise<void> {
    const p = this.paths(spec.id);
    await fs.mkdir(path.dirname(p.passwd), { recursive: true, mode: 0o755 });
    const text = usersText(spec);
    await fs.writeFile(p.passwd, text.passwd, { mode: 0o644 });
    await fs.writeFile(p.group, text.group, { mode: 0o644 });
  }

  /** What the provider wrote for the box; the machine's folder is the server's to remove. */
  async remove(id: string): Promise<void> {
    const p = this.paths(id);
    await fs.rm(p.private, { recursive: true, force: true, maxRetries: 3 });
    await fs.rm(path.dirname(p.passwd), { recursive: true, force: true, maxRetries: 3 });
  }
}
