// Where workspaces are on the host and in the box, and their host-side making and removal.
//
// Per-agent: `<machine folder>/.workspaces/<agent id>/` (root's, 0711) holds `labels.json`
// (root's, 0600), `main/` (the agent's, 0700: kept across runs) and `runs/<work id>/` (the
// agent's, 0700: one unit of work of a `memory: false` agent). In the box the machine's
// folder is /home, so the workspace is /home/.workspaces/<agent id>/main; the disk caps and
// measurement of the machine count it like the homes.
// Per-flow-instance: `STATE_ROOT/flows/<instance id>/` (root's, 0711) holds `labels.json` and
// `workspace/` (root and the instance's own group, 2770); every box sees STATE_ROOT/flows at
// /opt/warren/flows, and a command of the instance carries the group.
// Every folder on the way is root's and made one at a time without following links; the
// agents' commands reach none of them but through /workspace (Landlock, modes).
import fs from "node:fs";
import path from "node:path";
import { BOX_PATHS } from "../boxes/paths.js";

/** The folder of per-agent workspaces in a machine's folder: a name no agent id can have. */
export const AGENT_WORKSPACES = ".workspaces";

/** A workspace's labels: how recovery and reset find it, never by its name. */
export type WorkspaceLabels = Record<string, string>;

const NAME = /^[a-z]{3}_[0-9a-z]{16}$/;

function checkId(id: string): string {
  if (!NAME.test(id)) throw new Error(`malformed id in a workspace path: ${JSON.stringify(id)}`);
  return id;
}

/** A folder made (or found) without following a link, then given its owner and mode. */
async function folder(dir: string, uid: number, gid: number, mode: number): Promise<void> {
  try {
    await fs.promises.mkdir(dir, { mode: mode & 0o777 });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
  }
  const st = await fs.promises.lstat(dir);
  if (!st.isDirectory()) throw new Error(`${dir} is not a folder (a link?)`);
  await fs.promises.chown(dir, uid, gid);
  await fs.promises.chmod(dir, mode);
}

async function writeLabels(dir: string, labels: WorkspaceLabels): Promise<void> {
  const file = path.join(dir, "labels.json");
  const tmp = `${file}.${process.pid}.tmp`;
  await fs.promises.writeFile(tmp, `${JSON.stringify(labels, null, 2)}\n`, { mode: 0o600 });
  await fs.promises.rename(tmp, file);
}

async function readLabels(dir: string): Promise<WorkspaceLabels | null> {
  try {
    const v: unknown = JSON.parse(await fs.promises.readFile(path.join(dir, "labels.json"), "utf8"));
    return v && typeof v === "object" ? (v as WorkspaceLabels) : null;
  } catch {
    return null;
  }
}

/** A labelled workspace folder found on the host. */
export interface FoundWorkspace {
  /** The folder that holds the labels (and the workspace or workspaces). */
  dir: string;
  labels: WorkspaceLabels;
}

export class WorkspaceLayout {
  constructor(
    private readonly o: {
      /** A machine's folder on the host (the box's /home). */
      machineDir: (machineId: string) => string;
      /** STATE_ROOT/flows. */
      flowsRoot: string;
    },
  ) {}

  get flowsRoot(): string {
    return this.o.flowsRoot;
  }

  agentRoot(machineId: string, agentId: string): string {
    return path.join(this.o.machineDir(checkId(machineId)), AGENT_WORKSPACES, checkId(agentId));
  }

  /** An agent's workspace in the box: `main` (kept) or one unit of work's. */
  agentBoxDir(agentId: string, workId?: string): string {
    const base = path.posix.join(BOX_PATHS.homes, AGENT_WORKSPACES, checkId(agentId));
    return workId === undefined ? `${base}/main` : `${base}/runs/${checkId(workId)}`;
  }

  agentHostDir(machineId: string, agentId: string, workId?: string): string {
    const root = this.agentRoot(machineId, agentId);
    return workId === undefined ? path.join(root, "main") : path.join(root, "runs", checkId(workId));
  }

  /** Makes the agent's workspace (kept, or one unit of work's) owned by its uid. */
  async prepareAgent(
    machineId: string,
    agentId: string,
    uid: number,
    labels: WorkspaceLabels,
    workId?: string,
  ): Promise<string> {
    const machineDir = this.o.machineDir(checkId(machineId));
    const all = path.join(machineDir, AGENT_WORKSPACES);
    await folder(all, 0, 0, 0o711);
    const root = this.agentRoot(machineId, agentId);
    await folder(root, 0, 0, 0o711);
    if (workId === undefined) {
      await writeLabels(root, labels);
      const main = path.join(root, "main");
      await folder(main, uid, uid, 0o700);
      return main;
    }
    await folder(path.join(root, "runs"), 0, 0, 0o711);
    const dir = path.join(root, "runs", checkId(workId));
    await folder(dir, 0, 0, 0o711);
    await writeLabels(dir, labels);
    // the unit of work's own folder is one level down, so its labels stay root's
    const ws = path.join(dir, "workspace");
    await folder(ws, uid, uid, 0o700);
    return ws;
  }

  /** A `memory: false` unit of work's workspace in the box (see prepareAgent). */
  ephemeralBoxDir(agentId: string, workId: string): string {
    return `${this.agentBoxDir(agentId, workId)}/workspace`;
  }

  async removeEphemeral(machineId: string, agentId: string, workId: string): Promise<void> {
    await fs.promises.rm(this.agentHostDir(machineId, agentId, workId), { recursive: true, force: true });
  }

  /** Removes every workspace of the agent (kept and per unit of work). */
  async removeAgent(machineId: string, agentId: string): Promise<void> {
    await fs.promises.rm(this.agentRoot(machineId, agentId), { recursive: true, force: true });
  }

  flowDir(instanceId: string): string {
    return path.join(this.o.flowsRoot, checkId(instanceId));
  }

  flowHostDir(instanceId: string): string {
    return path.join(this.flowDir(instanceId), "workspace");
  }

  flowBoxDir(instanceId: string): string {
    return path.posix.join(BOX_PATHS.flows, checkId(instanceId), "workspace");
  }

  /** Makes an instance's workspace: root's and the instance's group's, setgid, 2770. */
  async prepareFlow(instanceId: string, gid: number, labels: WorkspaceLabels): Promise<string> {
    await folder(this.o.flowsRoot, 0, 0, 0o711);
    const dir = this.flowDir(instanceId);
    await folder(dir, 0, 0, 0o711);
    await writeLabels(dir, labels);
    const ws = this.flowHostDir(instanceId);
    await folder(ws, 0, gid, 0o2770);
    return ws;
  }

  /**
   * Every labelled workspace under the machines' folders and STATE_ROOT/flows whose labels
   * hold all of `match`: how recovery and reset find them.
   */
  async find(machineDirs: string[], match: WorkspaceLabels): Promise<FoundWorkspace[]> {
    const candidates: string[] = [];
    const list = async (dir: string): Promise<string[]> => {
      try {
        return (await fs.promises.readdir(dir)).map((n) => path.join(dir, n));
      } catch {
        return [];
      }
    };
    candidates.push(...(await list(this.o.flowsRoot)));
    for (const m of machineDirs) {
      for (const agentRoot of await list(path.join(m, AGENT_WORKSPACES))) {
        candidates.push(agentRoot, ...(await list(path.join(agentRoot, "runs"))));
      }
    }
    const out: FoundWorkspace[] = [];
    for (const dir of candidates) {
      const labels = await readLabels(dir);
      if (!labels) continue;
      if (Object.entries(match).every(([k, v]) => labels[k] === v)) out.push({ dir, labels });
    }
    return out;
  }
}
