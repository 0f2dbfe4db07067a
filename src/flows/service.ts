// Flows: a named set of an organisation's agents; an instance is one working of a flow, with
// its own /workspace shared by the flow's agents in that instance only (through a group of
// the instance's own that their commands carry there). Runs are made inside an instance by
// the run recorder like every run; ending an instance keeps its workspace and says where.
import { and, asc, desc, eq, inArray } from "drizzle-orm";
import type { Access, Identity } from "../access/index.js";
import type { Conversation, Run } from "../contract/types.js";
import type { Conversations } from "../conversations/index.js";
import { WarrenError } from "../errors.js";
import { newId } from "../ids.js";
import type { RunInput, Runs } from "../runs/service.js";
import { isUniqueViolation, schema, type Db } from "../store/index.js";
import type { WorkspaceLayout } from "../workspaces/layout.js";
import { flowLabels, type InstanceRef } from "../workspaces/service.js";
import { instanceEnded as ended } from "../workspaces/instances.js";
import type { ContractFlows, ReloadReport } from "./contracts.js";

/** The groups of instances' workspaces: above agents' uids and the shared group, below nobody. */
export const INSTANCE_GID_FIRST = 50_000;
export const INSTANCE_GID_LAST = 64_999;

type FlowRow = typeof schema.flows.$inferSelect;
type InstanceRow = typeof schema.flowInstances.$inferSelect;

export interface FlowView {
  id: string;
  org_id: string;
  name: string;
  agent_ids: string[];
  /** `contract`: made from a contract file (the API does not change it); `api`: through the API. */
  source: "api" | "contract";
  /** A contract flow's revision as last loaded (the hash of its contract and files); null for api. */
  revision: string | null;
  created_at: string;
}

export interface InstanceView {
  id: string;
  flow_id: string;
  org_id: string;
  name: string | null;
  status: "running" | "ended";
  /** The flow's revision when the instance started (it keeps it); null for an api flow. */
  revision: string | null;
  input: Record<string, unknown>;
  agent_ids: string[];
  /** `mib`: its size when last measured (after each run in it), null before. */
  workspace: { path: "/workspace"; host_path: string; labels: Record<string, string>; mib: number | null };
  run_ids: string[];
  conversation_ids: string[];
  created_at: string;
  ended_at: string | null;
}

export interface FlowsOptions {
  db: Db;
  access: Access;
  runs: Pick<Runs, "start">;
  conversations: Pick<Conversations, "create">;
  layout: WorkspaceLayout;
  /** The contracts flows were made from (an instance's input is checked against its contract's). */
  contracts?: Pick<ContractFlows, "of" | "reload">;
}

/** flow.from_contract: a contract flow changes through its file, never through the API. */
const fromContract = (what: string) =>
  new WarrenError(
    "flow.from_contract",
    `${what} was made from a contract file; change the contract and reload (POST /api/flows/reload)`,
  );

export class Flows {
  constructor(private readonly o: FlowsOptions) {}

  async create(
    who: Identity,
    input: { org_id: string; name: string; agent_ids: string[] },
  ): Promise<FlowView> {
    const { db, access } = this.o;
    await access.require(input.org_id, who, "write", "organisation");
    const [twin] = await db
      .select({ id: schema.flows.id })
      .from(schema.flows)
      .where(
        and(
          eq(schema.flows.orgId, input.org_id),
          eq(schema.flows.name, input.name),
          eq(schema.flows.source, "contract"),
        ),
      );
    if (twin) throw fromContract(`flow "${input.name}" (${twin.id})`);
    const ids = await this.#checkAgents(input.org_id, input.agent_ids);
    const id = newId("flw");
    const row = await db.transaction(async (tx) => {
      const [f] = await tx
        .insert(schema.flows)
        .values({ id, orgId: input.org_id, name: input.name })
        .returning();
      await tx.insert(schema.flowAgents).values(ids.map((agentId) => ({ flowId: id, agentId })));
      return f;
    });
    if (!row) throw new Error("flow insert returned nothing");
    return flowView(row, ids);
  }

  /** Reads the contracts folder again (owner or admin): new instances take the new revisions. */
  async reload(who: Identity): Promise<ReloadReport> {
    if (!this.o.contracts) throw new WarrenError("not_found", "this server loads no flow contracts");
    return this.o.contracts.reload(who);
  }

  /** Changes an api flow's name or agents; a contract flow is refused (409 flow.from_contract). */
  async update(
    who: Identity,
    id: string,
    patch: { name?: string | undefined; agent_ids?: string[] | undefined },
  ) {
    const f = await this.#loadFlow(who, id, "write");
    if (f.source === "contract") throw fromContract(`flow "${f.name}"`);
    const ids = patch.agent_ids ? await this.#checkAgents(f.orgId, patch.agent_ids) : undefined;
    const row = await this.o.db.transaction(async (tx) => {
      const [u] = patch.name
        ? await tx.update(schema.flows).set({ name: patch.name }).where(eq(schema.flows.id, f.id)).returning()
        : [f];
      if (ids) {
        await tx.delete(schema.flowAgents).where(eq(schema.flowAgents.flowId, f.id));
        await tx.insert(schema.flowAgents).values(ids.map((agentId) => ({ flowId: f.id, agentId })));
      }
      return u ?? f;
    });
    return flowView(row, await this.#agentsOf(f.id));
  }

  /** The agents named, each an agent of the organisation (else request.invalid). */
  async #checkAgents(orgId: string, agentIds: string[]): Promise<string[]> {
    const { db } = this.o;
    const ids = [...new Set(agentIds)];
    const found = await db
      .select({ id: schema.agents.id })
      .from(schema.agents)
      .where(and(inArray(schema.agents.id, ids), eq(schema.agents.orgId, orgId)));
    const known = new Set(found.map((a) => a.id));
    const missing = ids.filter((id) => !known.has(id));
    if (missing.length > 0)
      throw new WarrenError(
        "request.invalid",
        `agent_ids: no agent ${missing.join(", ")} in the organisation`,
        {
          field: "agent_ids",
        },
      );
    return ids;
  }

  async #loadFlow(who: Identity, id: string, perm: "read" | "write"): Promise<FlowRow> {
    const [f] = await this.o.db.select().from(schema.flows).where(eq(schema.flows.id, id));
    if (!f) throw new WarrenError("not_found", "flow was not found");
    await this.o.access.require(f.orgId, who, perm, "flow");
    return f;
  }

  async #agentsOf(flowId: string): Promise<string[]> {
    const rows = await this.o.db
      .select({ agentId: schema.flowAgents.agentId })
      .from(schema.flowAgents)
      .where(eq(schema.flowAgents.flowId, flowId))
      .orderBy(asc(schema.flowAgents.agentId));
    return rows.map((r) => r.agentId);
  }

  async get(who: Identity, id: string): Promise<FlowView> {
    const f = await this.#loadFlow(who, id, "read");
    return flowView(f, await this.#agentsOf(f.id));
  }

  async list(who: Identity, orgId: string): Promise<FlowView[]> {
    await this.o.access.require(orgId, who, "read", "organisation");
    const rows = await this.o.db
      .select()
      .from(schema.flows)
      .where(eq(schema.flows.orgId, orgId))
      .orderBy(desc(schema.flows.createdAt));
    return Promise.all(rows.map(async (f) => flowView(f, await this.#agentsOf(f.id))));
  }

  /** A new instance of the flow: its row with a group of its own, then its workspace. */
  async start(
    who: Identity,
    flowId: string,
    input: { name?: string | undefined; input?: Record<string, unknown> | undefined },
  ): Promise<InstanceView> {
    const f = await this.#loadFlow(who, flowId, "write");
    const given = input.input ?? {};
    const declared = this.o.contracts?.of(f.id)?.contract.input;
    if (declared) checkInput(declared, given);
    const id = newId("fli");
    let row: InstanceRow | undefined;
    for (let attempt = 0; attempt < 16 && !row; attempt++) {
      const gid = await this.#freeGid(attempt);
      try {
        [row] = await this.o.db
          .insert(schema.flowInstances)
          .values({
            id,
            flowId: f.id,
            orgId: f.orgId,
            name: input.name ?? null,
            status: "running",
            gid,
            revision: f.revision,
            input: given,
          })
          .returning();
      } catch (e) {
        if (!isUniqueViolation(e)) throw e;
        // another instance took the group at the same moment: look again
      }
    }
    if (!row) throw new Error("could not give the instance a group after several attempts");
    try {
      await this.o.layout.prepareFlow(row.id, row.gid, flowLabels(row.orgId, row));
    } catch (e) {
      await this.o.db.delete(schema.flowInstances).where(eq(schema.flowInstances.id, row.id));
      throw e;
    }
    return this.#view(row);
  }

  /** The lowest group no instance holds (from a random place after a collision). */
  async #freeGid(attempt: number): Promise<number> {
    const taken = new Set(
      (await this.o.db.select({ gid: schema.flowInstances.gid }).from(schema.flowInstances)).map(
        (r) => r.gid,
      ),
    );
    const span = INSTANCE_GID_LAST - INSTANCE_GID_FIRST + 1;
    const from = attempt === 0 ? 0 : Math.floor(Math.random() * span);
    for (let i = 0; i < span; i++) {
      const gid = INSTANCE_GID_FIRST + ((from + i) % span);
      if (!taken.has(gid)) return gid;
    }
    throw new WarrenError("request.invalid", `every instance group (${span}) is taken; remove old instances`);
  }

  async #loadInstance(who: Identity, id: string, perm: "read" | "write"): Promise<InstanceRow> {
    const [i] = await this.o.db.select().from(schema.flowInstances).where(eq(schema.flowInstances.id, id));
    if (!i) throw new WarrenError("not_found", "flow instance was not found");
    await this.o.access.require(i.orgId, who, perm, "flow instance");
    return i;
  }

  async #view(i: InstanceRow): Promise<InstanceView> {
    const runs = await this.o.db
      .select({ runId: schema.flowInstanceRuns.runId })
      .from(schema.flowInstanceRuns)
      .where(eq(schema.flowInstanceRuns.instanceId, i.id))
      .orderBy(asc(schema.flowInstanceRuns.createdAt));
    return {
      id: i.id,
      flow_id: i.flowId,
      org_id: i.orgId,
      name: i.name,
      status: i.status,
      revision: i.revision,
      input: i.input ?? {},
      agent_ids: await this.#agentsOf(i.flowId),
      workspace: {
        path: "/workspace",
        host_path: this.o.layout.flowHostDir(i.id),
        labels: flowLabels(i.orgId, i),
        mib: i.workspaceMib,
      },
      run_ids: runs.map((r) => r.runId),
      conversation_ids: (
        await this.o.db
          .select({ id: schema.flowInstanceConversations.conversationId })
          .from(schema.flowInstanceConversations)
          .where(eq(schema.flowInstanceConversations.instanceId, i.id))
          .orderBy(asc(schema.flowInstanceConversations.createdAt))
      ).map((r) => r.id),
      created_at: i.createdAt.toISOString(),
      ended_at: i.endedAt ? i.endedAt.toISOString() : null,
    };
  }

  async getInstance(who: Identity, id: string): Promise<InstanceView> {
    return this.#view(await this.#loadInstance(who, id, "read"));
  }

  async instances(who: Identity, flowId: string): Promise<InstanceView[]> {
    const f = await this.#loadFlow(who, flowId, "read");
    const rows = await this.o.db
      .select()
      .from(schema.flowInstances)
      .where(eq(schema.flowInstances.flowId, f.id))
      .orderBy(desc(schema.flowInstances.createdAt));
    return Promise.all(rows.map((r) => this.#view(r)));
  }

  /** The running instance, and the agent's place in its flow, for new work in it. */
  async #forWork(who: Identity, instanceId: string, agentId: string): Promise<InstanceRef> {
    const i = await this.#loadInstance(who, instanceId, "write");
    if (i.status !== "running") throw ended();
    const members = await this.#agentsOf(i.flowId);
    if (!members.includes(agentId))
      throw new WarrenError("request.invalid", `agent_id: ${agentId} is not one of the flow's agents`, {
        field: "agent_id",
      });
    return { id: i.id, flowId: i.flowId, gid: i.gid };
  }

  /** A conversation with one of the flow's agents inside the instance: its turns' /workspace is the instance's. */
  async conversation(
    who: Identity,
    instanceId: string,
    input: { agent_id: string; title?: string | undefined; persona_id?: string | undefined },
  ): Promise<Conversation> {
    const { agent_id, ...body } = input;
    const instance = await this.#forWork(who, instanceId, agent_id);
    const c = await this.o.conversations.create(who, agent_id, body);
    await this.o.db
      .insert(schema.flowInstanceConversations)
      .values({ conversationId: c.id, instanceId: instance.id });
    return c;
  }

  /** A run of one of the flow's agents inside the instance: its /workspace is the instance's. */
  async run(who: Identity, instanceId: string, input: RunInput & { agent_id: string }): Promise<Run> {
    const { agent_id, ...run } = input;
    const instance = await this.#forWork(who, instanceId, agent_id);
    const started = await this.o.runs.start(who, agent_id, run, { instance });
    await this.o.db
      .insert(schema.flowInstanceRuns)
      .values({ runId: started.id, instanceId: instance.id, agentId: agent_id });
    return started;
  }

  /** Ends the instance: no run starts in it any more; its workspace is kept where it says. */
  async end(who: Identity, instanceId: string): Promise<InstanceView> {
    const i = await this.#loadInstance(who, instanceId, "write");
    if (i.status === "ended") return this.#view(i);
    const [u] = await this.o.db
      .update(schema.flowInstances)
      .set({ status: "ended", endedAt: new Date() })
      .where(eq(schema.flowInstances.id, i.id))
      .returning();
    return this.#view(u ?? i);
  }
}

function flowView(f: FlowRow, agentIds: string[]): FlowView {
  return {
    id: f.id,
    org_id: f.orgId,
    name: f.name,
    agent_ids: agentIds,
    source: f.source,
    revision: f.revision,
    created_at: f.createdAt.toISOString(),
  };
}

/** An instance's input against its contract's `input`: the required there, of their types, nothing else. */
function checkInput(
  declared: Record<string, { type: string; required: boolean }>,
  given: Record<string, unknown>,
): void {
  const bad = (msg: string) => new WarrenError("request.invalid", `input: ${msg}`, { field: "input" });
  for (const [k, v] of Object.entries(given)) {
    const d = declared[k];
    if (!d)
      throw bad(
        `"${k}" is not an input of the flow's contract (${Object.keys(declared).join(", ") || "none"})`,
      );
    const type = Array.isArray(v) ? "array" : v === null ? "null" : typeof v;
    if (type !== d.type) throw bad(`"${k}" must be of type ${d.type}`);
  }
  for (const [k, d] of Object.entries(declared))
    if (d.required && !(k in given)) throw bad(`"${k}" is required by the flow's contract`);
}
