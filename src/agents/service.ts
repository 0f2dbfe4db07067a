import { and, asc, eq, inArray, ne, or, sum } from "drizzle-orm";
import type { Access, Identity } from "../access/index.js";
import type { Config } from "../config/index.js";
import { WarrenError } from "../errors.js";
import { newId } from "../ids.js";
import type { HomeLayout } from "../boxes/index.js";
import type { MachineControl } from "../runtime/index.js";
import { homeOf, lowestFreeSlot, portsOf, uidOf } from "../machines/placement.js";
import type { Machines } from "../machines/service.js";
import type { AgentInsert, AgentRow, Db, MachineRow } from "../store/index.js";
import { isForeignKeyViolation, isUniqueViolation, memo, schema } from "../store/index.js";
import { parseNetworkEntry, SandboxPolicy } from "../contract/policy.js";
import type { AddressRule } from "../net/rule.js";
import { AgentSpec } from "../contract/spec.js";
import { checkToolHeaders, toolHeaderWarnings } from "../secrets/tool-headers.js";
import { emptyPolicy } from "./policy.js";
import { appendVersion } from "./versions.js";
import type { EvalGates } from "./gate.js";
import type { Agent } from "../contract/types.js";
import type { Workspaces } from "../workspaces/service.js";
import type { Bundles } from "../workspaces/bundles.js";
import type { EventBus } from "../events/index.js";

export type { AgentRow };

/** The spec of an agent that was never given one: kind command, no model, no tools. */
export const DEFAULT_SPEC: AgentSpec = AgentSpec.parse({});

/** The spec fields a create or an update may carry. */
export type SpecPatch = Partial<{ [K in keyof AgentSpec]: unknown }>;
const SPEC_KEYS = [
  "kind",
  "model",
  "instructions",
  "tools",
  "tool_policy",
  "limits",
  "sandbox_policy",
  "workspace_class",
  "memory",
] as const;

/** What is wrong with a tool policy's text (Cedar's words), or null when it holds. */
export type PolicyCheck = (text: string) => Promise<string | null>;

/**
 * The spec a patch makes of the current one, checked whole by the one schema, the tool policy
 * by `check` (Cedar); null when the patch holds no spec field. Throws request.invalid naming the field.
 */
export async function nextSpec(
  current: AgentSpec,
  patch: SpecPatch,
  check: PolicyCheck,
): Promise<AgentSpec | null> {
  const given = SPEC_KEYS.filter((k) => patch[k] !== undefined);
  if (given.length === 0) return null;
  const merged: Record<string, unknown> = { ...current };
  for (const k of given) merged[k] = patch[k];
  const r = AgentSpec.safeParse(merged);
  if (!r.success) {
    const msgs = r.error.issues
      .slice(0, 3)
      .map((i) => `${i.path.map(String).join(".") || "spec"}: ${i.message}`);
    throw new WarrenError("request.invalid", msgs.join("; "), { field: msgs[0] });
  }
  const problem = await check(r.data.tool_policy);
  if (problem !== null)
    throw new WarrenError("request.invalid", `tool_policy: ${problem}`, { field: "tool_policy" });
  return r.data;
}

const parseStored = (spec: unknown): AgentSpec => {
  const r = AgentSpec.safeParse(spec);
  return r.success ? r.data : DEFAULT_SPEC;
};

export const policyOf = (row: Pick<AgentRow, "sandboxPolicy">): SandboxPolicy => {
  const r = SandboxPolicy.safeParse(row.sandboxPolicy ?? {});
  return r.success ? r.data : emptyPolicy();
};

/**
 * Throws egress.forbidden when the policy holds an entry no policy may hold: one the address
 * rule refuses whatever it says (the server's own endpoints, link-local and metadata,
 * unspecified, multicast, a range wider than the rule's shortest prefix), or loopback, private
 * or this host's own addresses outside the operator's bound. Each entry is checked whole, so no
 * union of entries holds more than the bound.
 */
export function checkNetworkPolicy(policy: SandboxPolicy, rule: Pick<AddressRule, "entryProblem">): void {
  for (const [i, text] of policy.network.allow.entries()) {
    const entry = parseNetworkEntry(text);
    const problem = typeof entry === "string" ? entry : rule.entryProblem(entry);
    if (problem !== null)
      throw new WarrenError("egress.forbidden", `sandbox_policy.network.allow: "${text}" ${problem}`, {
        field: `sandbox_policy.network.allow.${i}`,
      });
  }
}

export function agentView(a: AgentRow, spec: AgentSpec = DEFAULT_SPEC): Agent {
  return {
    id: a.id,
    org_id: a.orgId,
    machine_id: a.machineId,
    name: a.name,
    slot: a.slot,
    uid: uidOf(a.slot),
    home: homeOf(a.id),
    ports: portsOf(a.slot),
    max_workspace_mib: a.maxWorkspaceMib,
    workspace_mib: a.workspaceMib,
    sandbox_policy: policyOf(a),
    kind: spec.kind,
    model: spec.model,
    instructions: spec.instructions,
    tools: spec.tools,
    tool_policy: spec.tool_policy,
    limits: spec.limits,
    workspace_class: spec.workspace_class,
    memory: spec.memory,
    spec_version: a.specVersion,
    created_at: a.createdAt.toISOString(),
  };
}

/** The agents' specs by version, read again after any change of a spec (Agents' and the door's). */
export class AgentSpecs {
  readonly #db: Db;
  readonly #byVersion;

  constructor(db: Db) {
    this.#db = db;
    this.#byVersion = memo<string, AgentSpec | null>(db, [schema.agentSpecs]);
  }

  /** The agent's current spec and its version (null: never given one). */
  async of(agent: AgentRow): Promise<{ spec: AgentSpec; version: number | null }> {
    const version = agent.specVersion;
    // the agent's row keeps its current version's sandbox policy (and an agent never given a
    // spec has its policy there alone)
    if (version === null)
      return { spec: { ...DEFAULT_SPEC, sandbox_policy: policyOf(agent) }, version: null };
    const spec = (await this.at(agent.id, version)) ?? DEFAULT_SPEC;
    return { spec: { ...spec, sandbox_policy: policyOf(agent) }, version };
  }

  /** One version of an agent's spec, or null when it has none of that number. */
  at(agentId: string, version: number): Promise<AgentSpec | null> {
    return this.#byVersion.get(`${agentId}\n${version}`, async () => {
      const [r] = await this.#db
        .select()
        .from(schema.agentSpecs)
        .where(and(eq(schema.agentSpecs.agentId, agentId), eq(schema.agentSpecs.version, version)));
      return r ? parseStored(r.spec) : null;
    });
  }
}

export interface AgentsOptions {
  db: Db;
  access: Access;
  machines: Machines;
  layout: HomeLayout;
  control: MachineControl;
  config: Pick<Config, "WORKSPACE_MAX_MIB">;
  /** Checks a tool policy when a spec is saved (the tools' Cedar check). */
  checkToolPolicy: PolicyCheck;
  /**
   * The work going on (the run recorder, built before): the agent's generation and its line
   * are stopped before it is deleted.
   */
  work?: AgentWork;
  /** The address rule: a sandbox policy is checked against it when saved. */
  addressRule?: Pick<AddressRule, "entryProblem">;
  /** The evaluation gates: with one on, a change goes through a version (src/versions). */
  gates?: Pick<EvalGates, "set" | "check">;
  /** The specs by version (one reader shared with the door's workspaces); else its own. */
  specs?: AgentSpecs;
  /** Workspace classes: a spec's class is checked when saved, its per-agent workspace made. */
  workspaces?: Pick<Workspaces, "checkSpec" | "agentSaved" | "agentDeleted">;
  /** Permission bundles: a spec of an agent of a contract flow stays within its bundle. */
  bundles?: Pick<Bundles, "check">;
  /** Where a deletion is told once the agent is gone (agent.deleted). */
  events?: Pick<EventBus, "emit">;
}

/** What stops an agent's work before it is deleted (the run recorder). */
export interface AgentWork {
  /** Cancels the agent's generation and its queued runs, and waits until their records are written. */
  stopAgent(agentId: string, reason: string): Promise<void>;
}

/** How many agents of a machine one read of an agent brings along. */
const AGENTS_READ_TOGETHER = 256;

export class Agents {
  private readonly db: Db;
  private readonly access: Access;
  private readonly machines: Machines;
  private readonly layout: HomeLayout;
  private readonly control: MachineControl;
  private readonly config: Pick<Config, "WORKSPACE_MAX_MIB">;
  private readonly checkToolPolicy: PolicyCheck;
  readonly #work: AgentWork | undefined;
  private readonly addressRule: Pick<AddressRule, "entryProblem"> | undefined;
  readonly #gates: AgentsOptions["gates"];
  private readonly workspaces: AgentsOptions["workspaces"];
  readonly #bundles: AgentsOptions["bundles"];
  readonly #events: AgentsOptions["events"];
  /** Rows by id (null: none), read again after any change of an agent. */
  readonly #rows;
  /** Specs by agent and version. */
  readonly #specs: AgentSpecs;

  constructor(o: AgentsOptions) {
    this.db = o.db;
    this.access = o.access;
    this.machines = o.machines;
    this.layout = o.layout;
    this.control = o.control;
    this.config = o.config;
    this.checkToolPolicy = o.checkToolPolicy;
    this.#work = o.work;
    this.addressRule = o.addressRule;
    this.#gates = o.gates;
    this.workspaces = o.workspaces;
    this.#bundles = o.bundles;
    this.#events = o.events;
    this.#rows = memo<string, Readonly<AgentRow> | null>(o.db, [schema.agents]);
    this.#specs = o.specs ?? new AgentSpecs(o.db);
  }

  async create(
    who: Identity,
    input: {
      org_id: string;
      machine_id: string;
      name: string;
      max_workspace_mib?: number | undefined;
    } & SpecPatch,
  ): Promise<Agent> {
    await this.access.require(input.org_id, who, "write", "organisation");
    const spec = await nextSpec(DEFAULT_SPEC, input, this.checkToolPolicy);
    if (spec) await checkToolHeaders(this.db, input.org_id, spec, null);
    if (spec) this.workspaces?.checkSpec(spec);
    const machine = await this.machines.load(who, input.machine_id, "write");
    if (machine.orgId !== input.org_id) throw new WarrenError("not_found", "machine was not found");
    const host = this.config.WORKSPACE_MAX_MIB;
    const cap = Math.min(input.max_workspace_mib ?? 10240, host);
    const id = newId("agt");
    let row: AgentRow | undefined;
    for (let attempt = 0; attempt < 8 && !row; attempt++) {
      const taken = await this.db
        .select({ slot: schema.agents.slot })
        .from(schema.agents)
        .where(eq(schema.agents.machineId, machine.id));
      const slot = lowestFreeSlot(taken.map((t) => t.slot));
      if (slot === null)
        throw new WarrenError("request.invalid", "machine_id: the machine has no free slot left");
      try {
        [row] = await this.db
          .insert(schema.agents)
          .values({
            id,
            orgId: input.org_id,
            machineId: machine.id,
            name: input.name,
            slot,
            maxWorkspaceMib: cap,
            specVersion: spec ? 1 : null,
          })
          .returning();
      } catch (e) {
        if (isForeignKeyViolation(e)) throw new WarrenError("not_found", "machine was not found");
        if (!isUniqueViolation(e)) throw e;
        // another agent took the slot at the same moment: look again
      }
    }
    if (!row) throw new Error("could not place the agent after several attempts");
    if (spec) {
      await this.db.insert(schema.agentSpecs).values({ agentId: id, version: 1, spec });
      await this.db
        .insert(schema.agentVersionAuthors)
        .values({ agentId: id, version: 1, createdBy: who.email });
    }
    try {
      await this.layout.prepareHome(machine.id, id, uidOf(row.slot), machine.trust);
      if (spec) await this.workspaces?.agentSaved(row, spec);
    } catch (e) {
      await this.db.delete(schema.agents).where(eq(schema.agents.id, id));
      throw e;
    }
    await this.control.agentsChanged(machine.id);
    const view = agentView(row, spec ?? DEFAULT_SPEC);
    const warnings = [
      this.#hostCapWarning(input.max_workspace_mib),
      await this.reservationWarning(machine.id, id, cap),
      ...(await toolHeaderWarnings(this.db, row.orgId, spec ?? DEFAULT_SPEC)),
    ];
    if (warnings.some((w) => w !== null)) view.warnings = warnings.filter((w): w is string => w !== null);
    return view;
  }

  /** A cap asked above the host's WORKSPACE_MAX_MIB is saved as the host's; this says so. */
  #hostCapWarning(asked: number | undefined): string | null {
    const host = this.config.WORKSPACE_MAX_MIB;
    if (asked === undefined || asked <= host) return null;
    return `max_workspace_mib ${asked} is above this host's cap of ${host} MiB (WORKSPACE_MAX_MIB); the agent's cap is ${host} MiB`;
  }

  /** Says how much of the machine's cap the other agents' caps leave, when this cap passes it. */
  async reservationWarning(machineId: string, agentId: string, cap: number): Promise<string | null> {
    const [m] = await this.db.select().from(schema.machines).where(eq(schema.machines.id, machineId));
    if (!m) return null;
    const [r] = await this.db
      .select({ total: sum(schema.agents.maxWorkspaceMib) })
      .from(schema.agents)
      .where(and(eq(schema.agents.machineId, machineId), ne(schema.agents.id, agentId)));
    const reserved = Number(r?.total ?? 0);
    const room = Math.max(0, m.maxWorkspaceMib - reserved);
    if (cap <= room) return null;
    if (room === 0) {
      return `the other agents' caps reserve all ${m.maxWorkspaceMib} MiB of machine ${m.name}; pick another machine or raise this machine's disk cap`;
    }
    return `the other agents' caps leave ${room} MiB of machine ${m.name}'s ${m.maxWorkspaceMib} MiB unreserved; the machine's disk may fill before this agent reaches its ${cap} MiB cap; lower max_workspace_mib to ${room} or pick another machine`;
  }

  async load(
    who: Identity,
    id: string,
    perm: "read" | "inspect" | "write" | "edit" | "converse",
  ): Promise<AgentRow> {
    // one read brings the agents of its machine too: they tend to be asked for together
    // (a box started, a machine's agents driven at once)
    const row = await this.#rows.getAmong(
      id,
      async () => {
        const sameMachine = this.db
          .select({ machineId: schema.agents.machineId })
          .from(schema.agents)
          .where(eq(schema.agents.id, id));
        const rows = await this.db
          .select()
          .from(schema.agents)
          .where(inArray(schema.agents.machineId, sameMachine))
          .limit(AGENTS_READ_TOGETHER);
        const byId = new Map<string, Readonly<AgentRow> | null>(rows.map((r) => [r.id, Object.freeze(r)]));
        if (!byId.has(id)) {
          // more agents on the machine than one read brings: this one alone
          const [r] = await this.db.select().from(schema.agents).where(eq(schema.agents.id, id));
          if (r) byId.set(id, Object.freeze(r));
        }
        return byId;
      },
      null,
    );
    if (!row) throw new WarrenError("not_found", "agent was not found");
    await this.access.require(row.orgId, who, perm, "agent");
    return row;
  }

  /** The machine of an agent its caller has loaded (and so checked access to). */
  machineOf(agent: AgentRow): Promise<MachineRow> {
    return this.machines.row(agent.machineId);
  }

  /** The agent's current spec and its version (null: never given one). */
  specOf(agent: AgentRow): Promise<{ spec: AgentSpec; version: number | null }> {
    return this.#specs.of(agent);
  }

  /** One version of an agent's spec, or null when it has none of that number. */
  specAt(agentId: string, version: number): Promise<AgentSpec | null> {
    return this.#specs.at(agentId, version);
  }

  async #specsOf(rows: AgentRow[]): Promise<Map<string, AgentSpec>> {
    const out = new Map<string, AgentSpec>();
    const wanted = rows.filter((r) => r.specVersion !== null);
    if (wanted.length === 0) return out;
    const found = await this.db
      .select()
      .from(schema.agentSpecs)
      .where(
        or(
          ...wanted.map((r) =>
            and(eq(schema.agentSpecs.agentId, r.id), eq(schema.agentSpecs.version, r.specVersion!)),
          ),
        ),
      );
    for (const f of found) out.set(f.agentId, parseStored(f.spec));
    return out;
  }

  async get(who: Identity, id: string): Promise<Agent> {
    const row = await this.load(who, id, "read");
    const { spec } = await this.specOf(row);
    const view = agentView(row, spec);
    const warnings = await toolHeaderWarnings(this.db, row.orgId, spec);
    if (warnings.length > 0) view.warnings = warnings;
    return view;
  }

  async list(
    who: Identity,
    filter: { org_id?: string | undefined; machine_id?: string | undefined },
  ): Promise<Agent[]> {
    const orgIds = await this.access.visibleOrgIds(who, filter.org_id);
    if (orgIds.length === 0) return [];
    const where = [inArray(schema.agents.orgId, orgIds)];
    if (filter.machine_id !== undefined) where.push(eq(schema.agents.machineId, filter.machine_id));
    const rows = await this.db
      .select()
      .from(schema.agents)
      .where(and(...where))
      .orderBy(asc(schema.agents.createdAt), asc(schema.agents.id));
    const specs = await this.#specsOf(rows);
    return rows.map((r) => agentView(r, specs.get(r.id)));
  }

  async update(
    who: Identity,
    id: string,
    patch: {
      name?: string | undefined;
      max_workspace_mib?: number | undefined;
      sandbox_policy?: SandboxPolicy | undefined;
      eval_gate?: string | null | undefined;
    } & SpecPatch,
  ): Promise<Agent> {
    const row = await this.load(who, id, "write");
    if (patch.eval_gate !== undefined) await this.#gates?.set(row, who, patch.eval_gate);
    if (patch.sandbox_policy !== undefined && this.addressRule)
      checkNetworkPolicy(patch.sandbox_policy, this.addressRule);
    const current = await this.specOf(row);
    const spec = await nextSpec(current.spec, patch, this.checkToolPolicy);
    if (spec) await checkToolHeaders(this.db, row.orgId, spec, current.spec);
    if (spec && patch.workspace_class !== undefined) this.workspaces?.checkSpec(spec);
    if (spec) await this.#bundles?.check(id, spec);
    const set: Partial<AgentInsert> = {};
    if (patch.name !== undefined) set.name = patch.name;
    const cap =
      patch.max_workspace_mib === undefined
        ? undefined
        : Math.min(patch.max_workspace_mib, this.config.WORKSPACE_MAX_MIB);
    if (cap !== undefined) set.maxWorkspaceMib = cap;
    let updated = row;
    // a changed spec (its sandbox policy included) is a new version; the agent points at it
    // (older versions stay as they were)
    const changed = spec !== null && JSON.stringify(spec) !== JSON.stringify(current.spec);
    if (changed) {
      await this.#gates?.check(id, null);
      updated = (await appendVersion(this.db, id, spec, who.email, { current: true, set })).row;
    } else if (Object.keys(set).length > 0) {
      const [u] = await this.db.update(schema.agents).set(set).where(eq(schema.agents.id, id)).returning();
      if (!u) throw new WarrenError("not_found", "agent was not found");
      updated = u;
    }
    if (changed && spec.workspace_class !== current.spec.workspace_class)
      await this.workspaces?.agentSaved(updated, spec);
    const view = agentView(updated, changed ? spec : current.spec);
    const warnings = [
      this.#hostCapWarning(patch.max_workspace_mib),
      cap !== undefined && cap > row.maxWorkspaceMib
        ? await this.reservationWarning(row.machineId, id, cap)
        : null,
      ...(await toolHeaderWarnings(this.db, row.orgId, changed ? spec : current.spec)),
    ].filter((w): w is string => w !== null);
    if (warnings.length > 0) view.warnings = warnings;
    return view;
  }

  /** Deletes the agent and its home; its runs' records stay. */
  async delete(who: Identity, id: string): Promise<void> {
    const row = await this.load(who, id, "write");
    await this.#work?.stopAgent(id, "the agent is being deleted");
    await this.db.transaction(async (tx) => {
      // grants have no foreign key (they name an org, a guild or an agent): the agent's go with it
      await tx
        .delete(schema.secretGrants)
        .where(and(eq(schema.secretGrants.scope, "agent"), eq(schema.secretGrants.targetId, id)));
      await tx.delete(schema.agents).where(eq(schema.agents.id, id));
    });
    await this.layout.removeHome(row.machineId, id);
    await this.workspaces?.agentDeleted(row);
    await this.control.agentsChanged(row.machineId);
    this.#events?.emit("agent.deleted", { agentId: id, orgId: row.orgId, machineId: row.machineId });
  }
}
