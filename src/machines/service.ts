import { and, asc, count, eq, inArray, sum } from "drizzle-orm";
import type { Access, Identity } from "../access/index.js";
import { WarrenError } from "../errors.js";
import { newId } from "../ids.js";
import type { Db, MachineInsert, MachineRow } from "../store/index.js";
import { memo, schema } from "../store/index.js";
import type { HomeLayout } from "../boxes/index.js";
import type { MachineControl } from "../runtime/index.js";
import type { Machine, MachineUpdateRequest } from "../contract/types.js";
import type { TRUSTS } from "../contract/lists.js";
import { checkCapabilities, defaultHost, type MachineHost } from "./capabilities.js";

type Trust = (typeof TRUSTS)[number];

export interface MachineInput {
  org_id: string;
  name: string;
  max_workspace_mib?: number | undefined;
  memory_mib?: number | undefined;
  cpus?: number | undefined;
  trust?: Trust | undefined;
  runaway_after_s?: number | undefined;
  image?: string | null | undefined;
  gpu?: boolean | undefined;
  nested_engine?: boolean | undefined;
}

export const MACHINE_DEFAULTS = {
  max_workspace_mib: 51200,
  memory_mib: 2048,
  cpus: 1,
  runaway_after_s: 60,
} as const;

/** How many agents live on a machine and how much of its disk cap their own caps reserve. */
export interface MachineLoad {
  agents: number;
  reserved_mib: number;
}

export function machineView(m: MachineRow, load: MachineLoad): Machine {
  const { agents, reserved_mib } = load;
  return {
    id: m.id,
    org_id: m.orgId,
    name: m.name,
    state: m.state,
    state_reason: m.stateReason,
    state_changed_at: m.stateChangedAt.toISOString(),
    max_workspace_mib: m.maxWorkspaceMib,
    workspace_mib: m.workspaceMib,
    memory_mib: m.memoryMib,
    cpus: m.cpus,
    trust: m.trust,
    agents,
    reserved_mib,
    unreserved_mib: Math.max(0, m.maxWorkspaceMib - reserved_mib),
    free_mib: m.workspaceMib === null ? null : Math.max(0, m.maxWorkspaceMib - m.workspaceMib),
    runaway_after_s: m.runawayAfterS,
    image: m.image,
    gpu: m.gpu,
    nested_engine: m.nestedEngine,
    env_revision: m.envRevision,
    box_env_revision: m.boxEnvRevision,
    created_at: m.createdAt.toISOString(),
  };
}

const NO_LOAD: MachineLoad = { agents: 0, reserved_mib: 0 };

export class Machines {
  /** Rows by id (null: none), read again after any change of a machine. */
  readonly #rows;
  /** One machine's load, read again after any change of an agent. */
  readonly #load;

  constructor(
    private readonly db: Db,
    private readonly access: Access,
    private readonly layout: HomeLayout,
    private readonly control: MachineControl,
    private readonly host: MachineHost = defaultHost("local"),
  ) {
    this.#rows = memo<string, Readonly<MachineRow> | null>(db, [schema.machines]);
    this.#load = memo<string, MachineLoad>(db, [schema.agents]);
  }

  async create(who: Identity, input: MachineInput): Promise<Machine> {
    await this.access.require(input.org_id, who, "write", "organisation");
    checkCapabilities(this.host, input);
    const id = newId("mch");
    await this.layout.prepareMachine(id);
    const [row] = await this.db
      .insert(schema.machines)
      .values({
        id,
        orgId: input.org_id,
        name: input.name,
        maxWorkspaceMib: input.max_workspace_mib ?? MACHINE_DEFAULTS.max_workspace_mib,
        memoryMib: input.memory_mib ?? MACHINE_DEFAULTS.memory_mib,
        cpus: input.cpus ?? MACHINE_DEFAULTS.cpus,
        trust: input.trust ?? "isolated",
        runawayAfterS: input.runaway_after_s ?? MACHINE_DEFAULTS.runaway_after_s,
        image: input.image ?? null,
        gpu: input.gpu ?? false,
        nestedEngine: input.nested_engine ?? false,
      })
      .returning();
    if (!row) throw new Error("machine insert returned nothing");
    return machineView(row, NO_LOAD);
  }

  /** The row, after checking the caller may `perm` it; not_found for non-members. */
  async load(who: Identity, id: string, perm: "read" | "write"): Promise<MachineRow> {
    const row = await this.row(id);
    await this.access.require(row.orgId, who, perm, "machine");
    return row;
  }

  /** The row (kept while the table is unchanged), for a caller that checked access to it (its agent's). */
  async row(id: string): Promise<MachineRow> {
    const row = await this.#rows.get(id, async () => {
      const [r] = await this.db.select().from(schema.machines).where(eq(schema.machines.id, id));
      return r ? Object.freeze(r) : null;
    });
    if (!row) throw new WarrenError("not_found", "machine was not found");
    return row;
  }

  async #loads(ids: string[]): Promise<Map<string, MachineLoad>> {
    if (ids.length === 0) return new Map();
    const rows = await this.db
      .select({ machineId: schema.agents.machineId, n: count(), total: sum(schema.agents.maxWorkspaceMib) })
      .from(schema.agents)
      .where(inArray(schema.agents.machineId, ids))
      .groupBy(schema.agents.machineId);
    return new Map(
      rows.map((r) => [r.machineId, { agents: Number(r.n), reserved_mib: Number(r.total ?? 0) }]),
    );
  }

  async get(who: Identity, id: string): Promise<Machine> {
    const row = await this.load(who, id, "read");
    const load = await this.#load.get(id, async () => (await this.#loads([id])).get(id) ?? NO_LOAD);
    return { ...machineView(row, load), box: await this.control.box(id, row.state) };
  }

  async list(who: Identity, orgId?: string): Promise<Machine[]> {
    const orgIds = await this.access.visibleOrgIds(who, orgId);
    if (orgIds.length === 0) return [];
    const rows = await this.db
      .select()
      .from(schema.machines)
      .where(inArray(schema.machines.orgId, orgIds))
      .orderBy(asc(schema.machines.createdAt), asc(schema.machines.id));
    const loads = await this.#loads(rows.map((r) => r.id));
    return rows.map((r) => machineView(r, loads.get(r.id) ?? NO_LOAD));
  }

  async update(who: Identity, id: string, patch: MachineUpdateRequest): Promise<Machine> {
    await this.load(who, id, "write");
    checkCapabilities(this.host, patch);
    const set: Partial<MachineInsert> = {};
    if (patch.name !== undefined) set.name = patch.name;
    if (patch.max_workspace_mib !== undefined) set.maxWorkspaceMib = patch.max_workspace_mib;
    if (patch.memory_mib !== undefined) set.memoryMib = patch.memory_mib;
    if (patch.cpus !== undefined) set.cpus = patch.cpus;
    if (patch.runaway_after_s !== undefined) set.runawayAfterS = patch.runaway_after_s;
    if (patch.image !== undefined) set.image = patch.image;
    if (patch.gpu !== undefined) set.gpu = patch.gpu;
    if (patch.nested_engine !== undefined) set.nestedEngine = patch.nested_engine;
    if (Object.keys(set).length > 0)
      await this.db.update(schema.machines).set(set).where(eq(schema.machines.id, id));
    return this.get(who, id);
  }

  async stop(who: Identity, id: string): Promise<Machine> {
    await this.load(who, id, "write");
    await this.control.stop(id, "stopped by an operator");
    return this.get(who, id);
  }

  /** Freezes the machine's running box in memory; a box that is not running is left as it is. */
  async pause(who: Identity, id: string): Promise<Machine> {
    await this.load(who, id, "write");
    await this.control.pause(id, "paused by an operator");
    return this.get(who, id);
  }

  async delete(who: Identity, id: string): Promise<void> {
    await this.load(who, id, "write");
    const [a] = await this.db
      .select({ id: schema.agents.id })
      .from(schema.agents)
      .where(eq(schema.agents.machineId, id))
      .limit(1);
    if (a) {
      throw new WarrenError("machine.not_empty", "the machine still has agents; delete or move them first");
    }
    await this.control.remove(id);
    await this.db.delete(schema.machines).where(and(eq(schema.machines.id, id)));
    await this.layout.removeMachine(id);
  }
}
