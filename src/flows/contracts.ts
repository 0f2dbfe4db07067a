// Flows made from contract files: the folder read (./contract-files.ts) at boot and on
// POST /api/flows/reload, each contract reconciled with the database: its organisation and
// agents found by name, its agents' specs within their bundles, and its flow made or brought to
// the contract (source "contract", its revision, its agents with their bundles). The API does
// not change such a flow (409 flow.from_contract); the contract does.
import { mkdir } from "node:fs/promises";
import path from "node:path";
import { and, eq, inArray, or } from "drizzle-orm";
import { BOX_PATHS } from "../boxes/paths.js";
import type { Identity } from "../access/index.js";
import type { AgentSpec } from "../contract/spec.js";
import { WarrenError } from "../errors.js";
import { newId } from "../ids.js";
import type { Logger } from "../observability/log.js";
import { schema, type AgentRow, type Db } from "../store/index.js";
import { overText, type Bundles } from "../workspaces/bundles.js";
import type { Policy } from "../workspaces/policy.js";
import {
  problemText,
  readContracts,
  SELF_FOLDER,
  type ContractProblem,
  type LoadedContract,
} from "./contract-files.js";

export interface LoadedFlow {
  id: string;
  org_id: string;
  name: string;
  revision: string;
  file: string;
}

export interface ReloadReport {
  /** The flows made or brought to their contracts, by file. */
  flows: LoadedFlow[];
  /** Contracts that hold but could not be reconciled (an unknown agent...): left as they were. */
  skipped: ContractProblem[];
}

export interface ContractFlowsOptions {
  db: Db;
  /** The contracts folder (WARREN_CONTRACTS, default STATE_ROOT/contracts). */
  dir: string;
  policy: Policy;
  bundles: Pick<Bundles, "over">;
  specOf: (agent: AgentRow) => Promise<{ spec: AgentSpec }>;
  logger: Logger;
}

export class ContractFlows {
  /** The contracts loaded last, by flow id. */
  #byFlow = new Map<string, LoadedContract>();

  constructor(private readonly o: ContractFlowsOptions) {}

  get dir(): string {
    return this.o.dir;
  }

  /** The contract a flow was made from, as last loaded. */
  of(flowId: string): LoadedContract | undefined {
    return this.#byFlow.get(flowId);
  }

  /**
   * Reads the folder and reconciles every contract. A contract that does not hold refuses the
   * whole load (400 contract.invalid, its file, line and reason): nothing changes.
   */
  async load(): Promise<ReloadReport> {
    const { contracts, problems } = readContracts(this.o.dir, this.o.policy);
    const first = problems[0];
    if (first)
      throw new WarrenError("contract.invalid", `a contract does not hold: ${problemText(first)}`, {
        problem: first,
      });
    const flows: LoadedFlow[] = [];
    const skipped: ContractProblem[] = [];
    const byFlow = new Map<string, LoadedContract>();
    for (const c of contracts) {
      const r = await this.#reconcile(c);
      if ("problem" in r) {
        skipped.push(r.problem);
        this.o.logger.warn({ problem: problemText(r.problem) }, "a flow contract was not loaded");
        continue;
      }
      flows.push(r.flow);
      byFlow.set(r.flow.id, c);
    }
    this.#byFlow = byFlow;
    // the mount point of each command's own flow's folder (/opt/warren/contracts/self)
    await mkdir(path.join(this.o.dir, SELF_FOLDER), { recursive: true, mode: 0o755 }).catch((err: unknown) =>
      this.o.logger.warn(
        { err, dir: this.o.dir },
        "the contracts folder has no self folder for agents' own flows",
      ),
    );
    return { flows, skipped };
  }

  /** POST /api/flows/reload: an owner or admin of an organisation reloads; the answer shows the flows it reads. */
  async reload(who: Identity): Promise<ReloadReport> {
    const memberships = await this.o.db
      .select({ orgId: schema.memberships.orgId, role: schema.memberships.role })
      .from(schema.memberships)
      .where(eq(schema.memberships.userId, who.userId));
    if (!memberships.some((m) => m.role === "owner" || m.role === "admin"))
      throw new WarrenError(
        "access.denied",
        "reloading the flow contracts takes an owner or admin of an organisation",
      );
    const report = await this.load();
    const reads = new Set(memberships.filter((m) => m.role !== "guest").map((m) => m.orgId));
    return { flows: report.flows.filter((f) => reads.has(f.org_id)), skipped: report.skipped };
  }

  /**
   * The folder in the box of the agent's own flow: the instance's flow's when the work is in
   * one, else the contract flow it is an agent of (undefined: none).
   */
  async selfOf(agentId: string, instance?: { flowId: string }): Promise<string | undefined> {
    const boxDir = (c: LoadedContract | undefined) =>
      c ? path.posix.join(BOX_PATHS.contracts, c.folder) : undefined;
    if (instance) return boxDir(this.#byFlow.get(instance.flowId));
    if (this.#byFlow.size === 0) return undefined;
    const rows = await this.o.db
      .select({ flowId: schema.flowAgents.flowId })
      .from(schema.flowAgents)
      .where(eq(schema.flowAgents.agentId, agentId));
    for (const r of rows) {
      const c = this.#byFlow.get(r.flowId);
      if (c) return boxDir(c);
    }
    return undefined;
  }

  async #reconcile(c: LoadedContract): Promise<{ flow: LoadedFlow } | { problem: ContractProblem }> {
    const { db } = this.o;
    const k = c.contract;
    const at = (path: (string | number)[], reason: string) => ({
      problem: { file: c.file, line: c.lineOf(path), reason },
    });
    const orgs = await db
      .select({ id: schema.orgs.id })
      .from(schema.orgs)
      .where(or(eq(schema.orgs.name, k.org), eq(schema.orgs.id, k.org)));
    const [org] = orgs;
    if (!org) return at(["org"], `org: no organisation "${k.org}"`);
    if (orgs.length > 1)
      return at(["org"], `org: "${k.org}" names ${orgs.length} organisations; name it by id`);
    const names = k.agents.map((a) => a.name);
    const rows = await db
      .select()
      .from(schema.agents)
      .where(and(eq(schema.agents.orgId, org.id), inArray(schema.agents.name, names)));
    const members: { agent: AgentRow; bundle: string }[] = [];
    for (const [i, a] of k.agents.entries()) {
      const found = rows.filter((r) => r.name === a.name);
      const [agent] = found;
      if (!agent) return at(["agents", i, "name"], `agents.${i}.name: no agent "${a.name}" in "${k.org}"`);
      if (found.length > 1)
        return at(["agents", i, "name"], `agents.${i}.name: "${a.name}" names ${found.length} agents`);
      const { spec } = await this.o.specOf(agent);
      const over = this.o.bundles.over(a.permission_bundle, spec);
      if (over.tools.length + over.hosts.length + over.secrets.length > 0)
        return at(
          ["agents", i, "permission_bundle"],
          `agents.${i}: agent "${a.name}"'s spec asks for more than bundle "${a.permission_bundle}": ${overText(over)}`,
        );
      if (
        a.workspace_class !== null &&
        spec.workspace_class !== null &&
        spec.workspace_class !== a.workspace_class
      )
        return at(
          ["agents", i, "workspace_class"],
          `agents.${i}.workspace_class: agent "${a.name}"'s spec names class "${spec.workspace_class}"`,
        );
      members.push({ agent, bundle: a.permission_bundle });
    }
    const [existing] = await db
      .select()
      .from(schema.flows)
      .where(and(eq(schema.flows.orgId, org.id), eq(schema.flows.name, k.name)));
    if (existing && existing.source !== "contract")
      return at(["name"], `name: flow "${k.name}" of "${k.org}" was made through the API (${existing.id})`);
    const id = existing?.id ?? newId("flw");
    await db.transaction(async (tx) => {
      const values = { source: "contract" as const, revision: c.revision, contractFile: c.file };
      if (existing) await tx.update(schema.flows).set(values).where(eq(schema.flows.id, id));
      else await tx.insert(schema.flows).values({ id, orgId: org.id, name: k.name, ...values });
      await tx.delete(schema.flowAgents).where(eq(schema.flowAgents.flowId, id));
      await tx
        .insert(schema.flowAgents)
        .values(members.map((m) => ({ flowId: id, agentId: m.agent.id, bundle: m.bundle })));
    });
    return { flow: { id, org_id: org.id, name: k.name, revision: c.revision, file: c.file } };
  }
}
