// Definitions: a machine and what lives on it (its environment, limits and trust; its agents
// with their specs, personas and schedules; the organisation's areas; the secrets that reach
// its agents, by name and grant, never by value; the flows made of its agents alone) written as
// YAML, and rebuilt from that text in any organisation on any provider. Ids and times are not
// part of the text, and every list is in a fixed order: export, import, export gives the same text.
import { and, asc, desc, eq, inArray } from "drizzle-orm";
import { parse, stringify } from "yaml";
import type { Identity } from "../access/index.js";
import type { Agents } from "../agents/service.js";
import type { Areas } from "../areas/service.js";
import { MachineDefinition } from "../contract/definitions.js";
import { SandboxPolicy } from "../contract/policy.js";
import type { Agent, Machine } from "../contract/types.js";
import type { Personas } from "../conversations/personas.js";
import { WarrenError } from "../errors.js";
import type { Flows } from "../flows/service.js";
import type { Environments } from "../machines/environment.js";
import type { Machines } from "../machines/service.js";
import type { Schedules } from "../schedules/service.js";
import type { Secrets } from "../secrets/service.js";
import { schema, type Db } from "../store/index.js";
import type { z } from "zod";

export type Definition = z.infer<typeof MachineDefinition>;
type Grant = Definition["secrets"][number]["grants"][number];

export interface DefinitionsOptions {
  db: Db;
  machines: Machines;
  agents: Agents;
  areas: Areas;
  personas: Personas;
  schedules: Schedules;
  secrets: Secrets;
  flows: Flows;
  /** Where the definition's packages are built on the new machine, as an owner's set would. */
  environments: Pick<Environments, "set">;
}

const byName = <T extends { name: string }>(a: T, b: T) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);
const omitNull = <T extends Record<string, unknown>>(o: T) =>
  Object.fromEntries(Object.entries(o).filter(([, v]) => v !== null && v !== undefined));

export interface Imported {
  machine: Machine;
  agents: { id: string; name: string }[];
  missing_secrets: string[];
  environment_pending: string[];
  environment_revision: number | null;
}

export class Definitions {
  constructor(private readonly o: DefinitionsOptions) {}

  /** The machine's definition and its text (YAML). */
  async export(who: Identity, machineId: string): Promise<{ text: string; definition: Definition }> {
    const { db } = this.o;
    const m = await this.o.machines.load(who, machineId, "read");
    const [env] = await db
      .select()
      .from(schema.envRevisions)
      .where(
        and(
          eq(schema.envRevisions.machineId, m.id),
          eq(schema.envRevisions.status, "ready"),
          eq(schema.envRevisions.revision, m.envRevision),
        ),
      )
      .orderBy(desc(schema.envRevisions.revision))
      .limit(1);
    const pkgs = (l: readonly { name: string; version: string }[] | undefined) =>
      (l ?? []).map((p) => ({ name: p.name, version: p.version })).sort(byName);
    const rows = await db
      .select()
      .from(schema.agents)
      .where(eq(schema.agents.machineId, m.id))
      .orderBy(asc(schema.agents.name), asc(schema.agents.createdAt));
    const names = new Map(rows.map((r) => [r.id, r.name]));
    const agents: Definition["agents"] = [];
    for (const row of rows) {
      const { spec } = await this.o.agents.specOf(row);
      const personas = (await this.o.personas.list(who, row.id))
        .map((p) => ({
          name: p.name,
          instructions: p.instructions,
          area: p.area,
          tools: p.tools,
          secrets: p.secrets,
        }))
        .sort(byName);
      const schedules = (await this.o.schedules.list(who, row.id))
        .map((s) => ({
          name: s.name,
          cron: s.cron,
          every_s: s.every_s,
          timezone: s.timezone,
          kind: s.kind,
          command: s.command,
          argv: s.argv,
          input: s.input,
          timeout_s: s.timeout_s,
          overlap: s.overlap,
          catch_up: s.catch_up,
          paused: s.paused,
          start_at: s.start_at,
          end_at: s.end_at,
        }))
        .sort((a, b) => byName(a, b) || JSON.stringify(a).localeCompare(JSON.stringify(b)));
      agents.push({
        name: row.name,
        max_workspace_mib: row.maxWorkspaceMib,
        spec: spec,
        personas,
        schedules,
      });
    }
    const areas = (await this.o.areas.list(who, m.orgId))
      .map((a) => ({ name: a.name, folders: [...a.folders] }))
      .sort(byName);
    const definition: Definition = {
      definition: "warren.machine/1",
      machine: {
        name: m.name,
        trust: m.trust,
        limits: {
          max_workspace_mib: m.maxWorkspaceMib,
          memory_mib: m.memoryMib,
          cpus: m.cpus,
          runaway_after_s: m.runawayAfterS,
        },
        environment: {
          image: m.image,
          gpu: m.gpu,
          nested_engine: m.nestedEngine,
          packages: pkgs(env?.packages),
          npm: pkgs(env?.npm),
        },
      },
      areas,
      secrets: await this.#secrets(m.orgId, names),
      agents,
      flows: await this.#flows(m.orgId, names),
    };
    return { text: stringify(definition, { lineWidth: 0, aliasDuplicateObjects: false }), definition };
  }

  /** The secrets that reach the machine's agents (granted to the organisation or to one of them). */
  async #secrets(orgId: string, names: Map<string, string>): Promise<Definition["secrets"]> {
    const rows = await this.o.db.select().from(schema.secrets).where(eq(schema.secrets.orgId, orgId));
    if (rows.length === 0) return [];
    const grants = await this.o.db
      .select()
      .from(schema.secretGrants)
      .where(
        inArray(
          schema.secretGrants.secretId,
          rows.map((r) => r.id),
        ),
      );
    const out: Definition["secrets"] = [];
    for (const r of rows) {
      const mine: Grant[] = [];
      for (const g of grants.filter((x) => x.secretId === r.id)) {
        if (g.scope === "org") mine.push({ org: true });
        const agent = g.scope === "agent" ? names.get(g.targetId) : undefined;
        if (agent !== undefined) mine.push({ agent });
      }
      if (mine.length === 0) continue;
      mine.sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b)));
      out.push({
        name: r.name,
        use: r.use,
        description: r.description,
        hosts: [...r.hosts].sort(),
        grants: mine,
      });
    }
    return out.sort(byName);
  }

  /** The organisation's flows (made through the API) whose agents all live on the machine. */
  async #flows(orgId: string, names: Map<string, string>): Promise<Definition["flows"]> {
    const flows = await this.o.db
      .select()
      .from(schema.flows)
      .where(and(eq(schema.flows.orgId, orgId), eq(schema.flows.source, "api")));
    if (flows.length === 0) return [];
    const members = await this.o.db
      .select()
      .from(schema.flowAgents)
      .where(
        inArray(
          schema.flowAgents.flowId,
          flows.map((f) => f.id),
        ),
      );
    const out: Definition["flows"] = [];
    for (const f of flows) {
      const ids = members.filter((x) => x.flowId === f.id).map((x) => x.agentId);
      if (ids.length === 0 || !ids.every((id) => names.has(id))) continue;
      out.push({ name: f.name, agents: ids.map((id) => names.get(id)!).sort() });
    }
    return out.sort((a, b) => byName(a, b) || a.agents.join().localeCompare(b.agents.join()));
  }

  /** Rebuilds a definition (YAML or JSON text) as a new machine of the organisation. */
  async import(who: Identity, orgId: string, text: string, name?: string): Promise<Imported> {
    const def = parseDefinition(text);
    const { machines, agents } = this.o;
    const made: Agent[] = [];
    const mdef = def.machine;
    const machine = await machines.create(who, {
      org_id: orgId,
      name: name ?? mdef.name,
      trust: mdef.trust,
      ...mdef.limits,
    });
    try {
      const env = mdef.environment;
      if (env.image !== null || env.gpu || env.nested_engine)
        await this.o.db
          .update(schema.machines)
          .set({ image: env.image, gpu: env.gpu, nestedEngine: env.nested_engine })
          .where(eq(schema.machines.id, machine.id));
      for (const a of def.areas) {
        const have = (await this.o.areas.list(who, orgId)).find((x) => x.name === a.name);
        if (!have || JSON.stringify(have.folders) !== JSON.stringify(a.folders))
          await this.o.areas.put(who, orgId, a.name, a.folders);
      }
      const ids = new Map<string, string>();
      for (const a of def.agents) {
        const agent = await agents.create(who, {
          ...a.spec,
          org_id: orgId,
          machine_id: machine.id,
          name: a.name,
          max_workspace_mib: a.max_workspace_mib,
        });
        made.push(agent);
        // the sandbox policy is set apart from the spec (an agent is made with the empty one)
        const policy = a.spec.sandbox_policy;
        const now = (await agents.specOf(await agents.load(who, agent.id, "read"))).spec.sandbox_policy;
        if (policy !== undefined && JSON.stringify(policy) !== JSON.stringify(now))
          await agents.update(who, agent.id, { sandbox_policy: SandboxPolicy.parse(policy) });
        ids.set(a.name, agent.id);
        for (const p of a.personas) await this.o.personas.create(who, agent.id, omitNull({ ...p }) as never);
        for (const s of a.schedules) await this.o.schedules.create(who, agent.id, omitNull({ ...s }));
      }
      const missing = await this.#grant(who, orgId, def.secrets, ids);
      for (const f of def.flows) {
        const agentIds = f.agents.map((n) => {
          const id = ids.get(n);
          if (!id)
            throw new WarrenError("request.invalid", `flows: flow ${f.name} names agent ${n}, not in agents`);
          return id;
        });
        await this.o.flows.create(who, { org_id: orgId, name: f.name, agent_ids: agentIds });
      }
      // the packages at their exact versions, built over the new machine's base (the build
      // goes on after the answer; a failed one leaves the machine on its base)
      const pending = env.packages.length > 0 || env.npm.length > 0;
      const built = pending
        ? await this.o.environments.set(who, machine.id, {
            packages: env.packages.map((p) => `${p.name}=${p.version}`),
            npm: env.npm.map((p) => ({ name: p.name, version: p.version })),
          })
        : null;
      return {
        machine: await machines.get(who, machine.id),
        agents: made.map((a) => ({ id: a.id, name: a.name })),
        missing_secrets: missing,
        environment_pending: [...env.packages, ...env.npm].map((p) => `${p.name}=${p.version}`),
        environment_revision: built?.revision ?? null,
      };
    } catch (err) {
      // nothing of a refused definition stays
      for (const a of made.reverse()) await agents.delete(who, a.id).catch(() => {});
      await machines.delete(who, machine.id).catch(() => {});
      throw err;
    }
  }

  /** Adds the definition's grants to the organisation's secrets of those names; answers the names it lacks. */
  async #grant(
    who: Identity,
    orgId: string,
    secrets: Definition["secrets"],
    ids: Map<string, string>,
  ): Promise<string[]> {
    const missing: string[] = [];
    for (const s of secrets) {
      const [row] = await this.o.db
        .select({ id: schema.secrets.id })
        .from(schema.secrets)
        .where(and(eq(schema.secrets.orgId, orgId), eq(schema.secrets.name, s.name)));
      if (!row) {
        missing.push(s.name);
        continue;
      }
      const have = (await this.o.secrets.get(who, row.id)).grants;
      const add = s.grants.map((g) =>
        "org" in g
          ? { scope: "org" as const, id: orgId }
          : { scope: "agent" as const, id: ids.get(g.agent) ?? "" },
      );
      const all = [...have];
      for (const g of add) if (g.id && !all.some((h) => h.scope === g.scope && h.id === g.id)) all.push(g);
      if (all.length !== have.length) await this.o.secrets.update(who, row.id, { grants: all });
    }
    return missing;
  }
}

/** A definition's text, checked: bad YAML or a field out of place is request.invalid, naming where. */
export function parseDefinition(text: string): Definition {
  let raw: unknown;
  try {
    raw = parse(text);
  } catch (err) {
    throw new WarrenError(
      "request.invalid",
      `text: not YAML: ${err instanceof Error ? err.message : String(err)}`,
    );
  }
  const r = MachineDefinition.safeParse(raw);
  if (!r.success) {
    const i = r.error.issues[0]!;
    throw new WarrenError("request.invalid", `text: ${i.path.join(".") || "(top)"}: ${i.message}`);
  }
  return r.data;
}
