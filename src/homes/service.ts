// An agent's home as the API sees it: its disk use against the caps, and its files read and
// written on the host by the rules of ./files.ts, owned as its machine's provider says.
import { eq, sum } from "drizzle-orm";
import type { Identity } from "../access/index.js";
import type { AgentRow, Agents } from "../agents/service.js";
import { namesOnTheWay, standing, type Fence } from "../areas/fence.js";
import type { Areas } from "../areas/service.js";
import type { HomeLayout } from "../boxes/index.js";
import { WarrenError } from "../errors.js";
import { uidOf } from "../machines/placement.js";
import type { Db } from "../store/index.js";
import { schema } from "../store/index.js";
import { effectiveCap } from "./caps.js";
import { listHomeFolder, readHomeFile, writeHomeFile } from "./files.js";
import { parseHomePath } from "./paths.js";

/** The most the file routes read or write in one request. */
export const FILE_LIMIT_BYTES = 32 * 1024 * 1024;

/** A folder of a home as the folder route answers it. */
export interface FolderListing {
  path: string;
  entries: {
    name: string;
    type: "file" | "folder" | "link" | "other";
    size_bytes: number;
    modified_at: string;
  }[];
  truncated: boolean;
}

/** The answer to a path outside the asker's areas, which says nothing of what is there. */
const outsideAreas = (): WarrenError => new WarrenError("area.refused", "that path is outside your areas");

/** The most entries one folder listing answers. */
const FOLDER_LIMIT = 1000;

export interface HomeUsage {
  workspace_mib: number | null;
  max_workspace_mib: number;
  machine: {
    id: string;
    name: string;
    workspace_mib: number | null;
    max_workspace_mib: number;
    reserved_mib: number;
    others_reserved_mib: number;
    unreserved_mib: number;
    free_mib: number | null;
  };
}

export class Homes {
  constructor(
    private readonly db: Db,
    private readonly agents: Agents,
    private readonly layout: HomeLayout,
    private readonly hostMaxMib: number,
    private readonly areas: Pick<Areas, "fenceOf">,
    /** Agents held while they move (src/runs/registry.ts): their homes take no write meanwhile. */
    private readonly moving?: { refuseWhileMoving(agentId: string): void },
  ) {}

  /**
   * Checks a path of the home against the asker's areas: inside them, or (for a folder
   * listing) on the way to one; else area.refused, which says nothing of what is there.
   */
  async #fence(a: AgentRow, who: Identity, components: readonly string[], listing: boolean): Promise<Fence> {
    const fence = await this.areas.fenceOf(a.orgId, who);
    const where = standing(components, fence);
    if (where === "inside" || (listing && where === "above")) return fence;
    throw outsideAreas();
  }

  async #machine(id: string) {
    const [m] = await this.db.select().from(schema.machines).where(eq(schema.machines.id, id));
    if (!m) throw new WarrenError("not_found", "machine was not found");
    return m;
  }

  /** The agent's home and its machine's folder, against their caps, as last measured. */
  async usage(who: Identity, agentId: string): Promise<HomeUsage> {
    const a = await this.agents.load(who, agentId, "read");
    const m = await this.#machine(a.machineId);
    const [r] = await this.db
      .select({ total: sum(schema.agents.maxWorkspaceMib) })
      .from(schema.agents)
      .where(eq(schema.agents.machineId, m.id));
    const reserved = Number(r?.total ?? 0);
    const others = Math.max(0, reserved - a.maxWorkspaceMib);
    return {
      workspace_mib: a.workspaceMib,
      max_workspace_mib: effectiveCap(a.maxWorkspaceMib, this.hostMaxMib),
      machine: {
        id: m.id,
        name: m.name,
        workspace_mib: m.workspaceMib,
        max_workspace_mib: m.maxWorkspaceMib,
        reserved_mib: reserved,
        others_reserved_mib: others,
        unreserved_mib: Math.max(0, m.maxWorkspaceMib - others),
        free_mib: m.workspaceMib === null ? null : Math.max(0, m.maxWorkspaceMib - m.workspaceMib),
      },
    };
  }

  /** A file of the agent's home; `rawPath` is the path below the home, as the URL gave it. */
  async readFile(who: Identity, agentId: string, rawPath: string): Promise<Buffer> {
    const a = await this.agents.load(who, agentId, "inspect");
    const components = parseHomePath(a.id, rawPath);
    const fence = await this.#fence(a, who, components, false);
    // a link is judged where it leads: a fenced member never reads through one out of their areas
    return readHomeFile(this.layout.homeDir(a.machineId, a.id), components, {
      maxBytes: FILE_LIMIT_BYTES,
      ...(fence === null
        ? {}
        : {
            fence: {
              allows: (c: readonly string[]) => standing(c, fence) === "inside",
              refusal: outsideAreas,
            },
          }),
    });
  }

  /** A folder of the agent's home ("" or "/" for the home itself), links listed, never followed. */
  async listFolder(who: Identity, agentId: string, rawPath: string): Promise<FolderListing> {
    const a = await this.agents.load(who, agentId, "inspect");
    const trimmed = rawPath.replace(/^\/+|\/+$/g, "");
    const home = `/home/${a.id}`;
    const components = trimmed === "" || `/${trimmed}` === home ? [] : parseHomePath(a.id, rawPath);
    const fence = await this.#fence(a, who, components, true);
    const listed = await listHomeFolder(this.layout.homeDir(a.machineId, a.id), components, FOLDER_LIMIT);
    // a folder on the way to held folders shows only that way
    const onTheWay =
      standing(components, fence) === "above" && fence ? namesOnTheWay(components, fence) : null;
    const shown = onTheWay
      ? listed.entries.filter((e) => e.type === "folder" && onTheWay.has(e.name))
      : listed.entries;
    const entries = shown.map((e) => ({
      name: e.name,
      type: e.type,
      size_bytes: e.size,
      modified_at: e.modifiedAt.toISOString(),
    }));
    // folders first, each part by name
    entries.sort((x, y) => Number(y.type === "folder") - Number(x.type === "folder"));
    return { path: components.join("/"), entries, truncated: listed.truncated };
  }

  /** Creates or replaces a file of the agent's home, owned by the agent. */
  async writeFile(who: Identity, agentId: string, rawPath: string, data: Buffer): Promise<void> {
    const a = await this.agents.load(who, agentId, "edit");
    const components = parseHomePath(a.id, rawPath);
    await this.#fence(a, who, components, false);
    const m = await this.#machine(a.machineId);
    // a moving agent's home is being copied: a file written to the old copy would be lost
    this.moving?.refuseWhileMoving(a.id);
    await writeHomeFile(this.layout.homeDir(a.machineId, a.id), components, data, {
      maxBytes: FILE_LIMIT_BYTES,
      ...this.layout.fileOwner(uidOf(a.slot), m.trust),
    });
  }
}
