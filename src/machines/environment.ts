// A machine's environment: its base (the host's system folders, or its image) plus a layer of
// packages, in revisions. A new revision is built outside every box (./env-build.ts), one
// build at a time per machine; only a revision that built whole becomes the machine's, so a
// failed build leaves it on its last good one. Proposals (an agent's env_propose, a member
// through the API) name exact packages and versions and are never applied until an owner or
// an admin approves them; the approval builds the next revision over the current one.
import { chmod, mkdir } from "node:fs/promises";
import path from "node:path";
import { and, desc, eq, max } from "drizzle-orm";
import type { Access, Identity } from "../access/index.js";
import { ENV_PROPOSAL_MAX } from "../contract/environments.js";
import type { EnvProposal, EnvRevision, MachineEnvironment } from "../contract/types.js";
import { WarrenError } from "../errors.js";
import { newId } from "../ids.js";
import type { Logger } from "../observability/log.js";
import type { Db } from "../store/index.js";
import { memo, schema } from "../store/index.js";
import {
  buildLayer,
  checkDebian,
  checkNpm,
  EnvBuildFailed,
  resolveDebian,
  resolveNpm,
  type EnvPackage,
} from "./env-build.js";

type RevisionRow = typeof schema.envRevisions.$inferSelect;
type ProposalRow = typeof schema.envProposals.$inferSelect;

export interface EnvironmentsOptions {
  db: Db;
  access: Access;
  logger: Logger;
  /** STATE_ROOT/environments: `<machine id>/<revision>` each revision's layer. */
  root: string;
  /** What the base is called: `host` (local, oci over the host's folders) or the boxes' image. */
  base: string;
  /** Builds a layer (default: ./env-build.ts's, with apt and npm on this host). */
  build?: typeof buildLayer;
}

const iso = (d: Date | null) => (d ? d.toISOString() : null);

function revisionView(r: RevisionRow, withLog = false): EnvRevision {
  return {
    machine_id: r.machineId,
    revision: r.revision,
    status: r.status,
    packages: r.packages,
    npm: r.npm,
    proposal_id: r.proposalId,
    created_by: r.createdBy,
    created_at: r.createdAt.toISOString(),
    finished_at: iso(r.finishedAt),
    ...(withLog ? { log: r.log } : {}),
  };
}

function proposalView(p: ProposalRow): EnvProposal {
  return {
    id: p.id,
    machine_id: p.machineId,
    org_id: p.orgId,
    agent_id: p.agentId,
    proposed_by: p.proposedBy,
    packages: p.packages,
    npm: p.npm,
    why: p.why,
    state: p.state,
    decided_by: p.decidedBy,
    decided_at: iso(p.decidedAt),
    revision: p.revision,
    created_at: p.createdAt.toISOString(),
  };
}

/** `over` with each of `add` put in, by name (a newer version replaces the one there). */
function merged(over: readonly EnvPackage[], add: readonly EnvPackage[]): EnvPackage[] {
  const byName = new Map(over.map((p) => [p.name, p]));
  for (const p of add) byName.set(p.name, p);
  return [...byName.values()].sort((a, b) => a.name.localeCompare(b.name));
}

export class Environments {
  /** Each machine's builds, one after another. */
  readonly #builds = new Map<string, Promise<void>>();
  /** Machines' current revision, read again after any change of a machine. */
  readonly #revision;

  constructor(private readonly o: EnvironmentsOptions) {
    this.#revision = memo<string, number>(o.db, [schema.machines]);
  }

  /** The machine's last good revision (0: the base alone); what a unit of work's PATH leads to. */
  revisionOf(machineId: string): Promise<number> {
    return this.#revision.get(machineId, async () => {
      const [m] = await this.o.db
        .select({ r: schema.machines.envRevision })
        .from(schema.machines)
        .where(eq(schema.machines.id, machineId));
      return m?.r ?? 0;
    });
  }

  async #machine(who: Identity, machineId: string, perm: "read" | "edit" | "manage") {
    const [m] = await this.o.db.select().from(schema.machines).where(eq(schema.machines.id, machineId));
    if (!m) throw new WarrenError("not_found", "machine was not found");
    await this.o.access.require(m.orgId, who, perm, "machine");
    return m;
  }

  async #revisionRow(machineId: string, revision: number): Promise<RevisionRow | undefined> {
    const [r] = await this.o.db
      .select()
      .from(schema.envRevisions)
      .where(and(eq(schema.envRevisions.machineId, machineId), eq(schema.envRevisions.revision, revision)));
    return r;
  }

  async get(who: Identity, machineId: string): Promise<MachineEnvironment> {
    const m = await this.#machine(who, machineId, "read");
    const current = m.envRevision > 0 ? await this.#revisionRow(machineId, m.envRevision) : undefined;
    const [building] = await this.o.db
      .select({ r: schema.envRevisions.revision })
      .from(schema.envRevisions)
      .where(and(eq(schema.envRevisions.machineId, machineId), eq(schema.envRevisions.status, "building")))
      .orderBy(desc(schema.envRevisions.revision))
      .limit(1);
    const pending = await this.o.db
      .select({ id: schema.envProposals.id })
      .from(schema.envProposals)
      .where(and(eq(schema.envProposals.machineId, machineId), eq(schema.envProposals.state, "pending")));
    return {
      machine_id: machineId,
      base: m.image ?? this.o.base,
      revision: m.envRevision,
      packages: current?.packages ?? [],
      npm: current?.npm ?? [],
      box_revision: m.boxEnvRevision,
      building: building?.r ?? null,
      pending_proposals: pending.length,
    };
  }

  async revisions(who: Identity, machineId: string): Promise<EnvRevision[]> {
    await this.#machine(who, machineId, "read");
    const rows = await this.o.db
      .select()
      .from(schema.envRevisions)
      .where(eq(schema.envRevisions.machineId, machineId))
      .orderBy(desc(schema.envRevisions.revision));
    return rows.map((r) => revisionView(r));
  }

  /** One revision with its build's log. */
  async revision(who: Identity, machineId: string, revision: number): Promise<EnvRevision> {
    await this.#machine(who, machineId, "read");
    const r = await this.#revisionRow(machineId, revision);
    if (!r) throw new WarrenError("not_found", "that revision was not found");
    return revisionView(r, true);
  }

  /**
   * An owner or admin sets the machine's packages (`name` at its candidate version now, or
   * `name=version` exactly): a new revision is built; the answer is that revision, building.
   */
  async set(
    who: Identity,
    machineId: string,
    input: { packages: string[]; npm?: { name: string; version?: string | undefined }[] | undefined },
  ): Promise<EnvRevision> {
    await this.#machine(who, machineId, "manage");
    const exact: EnvPackage[] = [];
    const names: string[] = [];
    for (const spec of input.packages) {
      const at = spec.indexOf("=");
      const name = at < 0 ? spec : spec.slice(0, at);
      const version = at < 0 ? undefined : spec.slice(at + 1);
      checkDebian(name, version);
      if (version !== undefined) exact.push({ name, version });
      else names.push(name);
    }
    for (const p of input.npm ?? []) checkNpm(p.name, p.version || undefined);
    const debs = merged(await resolveDebian(names), exact);
    const npm = await resolveNpm(input.npm ?? []);
    return this.#startBuild(machineId, debs, npm, who.email, null);
  }

  /** A proposal, its packages resolved to exact versions now; nothing is built until it is approved. */
  async propose(
    by: { who: Identity } | { agent: { id: string; machineId: string } },
    machineId: string,
    input: {
      packages: string[];
      npm?: { name: string; version?: string | undefined }[] | undefined;
      why: string;
    },
  ): Promise<EnvProposal> {
    let orgId: string;
    if ("who" in by) orgId = (await this.#machine(by.who, machineId, "edit")).orgId;
    else {
      if (by.agent.machineId !== machineId)
        throw new WarrenError("access.denied", "an agent proposes for its own machine");
      const [m] = await this.o.db.select().from(schema.machines).where(eq(schema.machines.id, machineId));
      if (!m) throw new WarrenError("not_found", "machine was not found");
      orgId = m.orgId;
    }
    if (input.packages.length === 0 && (input.npm ?? []).length === 0)
      throw new WarrenError("request.invalid", "packages: name at least one package");
    // the API's bounds, held here too: an agent's env_propose reaches this without the HTTP schema
    if (input.packages.length > ENV_PROPOSAL_MAX.packages)
      throw new WarrenError(
        "request.invalid",
        `packages: at most ${ENV_PROPOSAL_MAX.packages} in one proposal`,
      );
    if ((input.npm ?? []).length > ENV_PROPOSAL_MAX.npm)
      throw new WarrenError("request.invalid", `npm: at most ${ENV_PROPOSAL_MAX.npm} in one proposal`);
    const why = input.why.trim();
    if (why.length === 0 || why.length > ENV_PROPOSAL_MAX.why)
      throw new WarrenError("request.invalid", `why: say why in 1 to ${ENV_PROPOSAL_MAX.why} characters`);
    // every name checked before apt or npm is asked anything
    for (const name of input.packages) checkDebian(name);
    for (const p of input.npm ?? []) checkNpm(p.name, p.version || undefined);
    const packages = await resolveDebian(input.packages);
    const npm = await resolveNpm(input.npm ?? []);
    const [row] = await this.o.db
      .insert(schema.envProposals)
      .values({
        id: newId("env"),
        machineId,
        orgId,
        agentId: "agent" in by ? by.agent.id : null,
        proposedBy: "agent" in by ? by.agent.id : by.who.email,
        packages,
        npm,
        why,
        state: "pending",
      })
      .returning();
    if (!row) throw new Error("proposal insert returned nothing");
    this.o.logger.info({ machineId, proposal: row.id }, "environment proposal made");
    return proposalView(row);
  }

  async proposals(
    who: Identity,
    machineId: string,
    state?: "pending" | "approved" | "refused",
  ): Promise<EnvProposal[]> {
    await this.#machine(who, machineId, "read");
    const rows = await this.o.db
      .select()
      .from(schema.envProposals)
      .where(
        state
          ? and(eq(schema.envProposals.machineId, machineId), eq(schema.envProposals.state, state))
          : eq(schema.envProposals.machineId, machineId),
      )
      .orderBy(desc(schema.envProposals.createdAt));
    return rows.map(proposalView);
  }

  /** An owner or admin approves (a new revision is built over the current one) or refuses. */
  async decide(
    who: Identity,
    machineId: string,
    proposalId: string,
    decision: "approve" | "refuse",
  ): Promise<EnvProposal> {
    const m = await this.#machine(who, machineId, "manage");
    const state = decision === "approve" ? "approved" : "refused";
    const [p] = await this.o.db
      .update(schema.envProposals)
      .set({ state, decidedBy: who.email, decidedAt: new Date() })
      .where(
        and(
          eq(schema.envProposals.id, proposalId),
          eq(schema.envProposals.machineId, machineId),
          eq(schema.envProposals.state, "pending"),
        ),
      )
      .returning();
    if (!p) {
      const [known] = await this.o.db
        .select({ state: schema.envProposals.state })
        .from(schema.envProposals)
        .where(and(eq(schema.envProposals.id, proposalId), eq(schema.envProposals.machineId, machineId)));
      if (!known) throw new WarrenError("not_found", "proposal was not found");
      throw new WarrenError("env.proposal_decided", `the proposal was ${known.state} already`);
    }
    if (decision === "refuse") return proposalView(p);
    const current = m.envRevision > 0 ? await this.#revisionRow(machineId, m.envRevision) : undefined;
    const rev = await this.#startBuild(
      machineId,
      merged(current?.packages ?? [], p.packages),
      merged(current?.npm ?? [], p.npm),
      who.email,
      p.id,
    );
    const [done] = await this.o.db
      .update(schema.envProposals)
      .set({ revision: rev.revision })
      .where(eq(schema.envProposals.id, p.id))
      .returning();
    return proposalView(done ?? p);
  }

  async #startBuild(
    machineId: string,
    debs: EnvPackage[],
    npm: EnvPackage[],
    by: string,
    proposalId: string | null,
  ): Promise<EnvRevision> {
    const row = await this.o.db.transaction(async (tx) => {
      // the machine's row locked: two revisions never take the same number
      await tx
        .select({ id: schema.machines.id })
        .from(schema.machines)
        .where(eq(schema.machines.id, machineId))
        .for("update");
      const [last] = await tx
        .select({ n: max(schema.envRevisions.revision) })
        .from(schema.envRevisions)
        .where(eq(schema.envRevisions.machineId, machineId));
      const [r] = await tx
        .insert(schema.envRevisions)
        .values({
          machineId,
          revision: (last?.n ?? 0) + 1,
          packages: debs,
          npm,
          status: "building",
          proposalId,
          createdBy: by,
        })
        .returning();
      return r;
    });
    if (!row) throw new Error("revision insert returned nothing");
    const before = this.#builds.get(machineId) ?? Promise.resolve();
    const next = before.then(() => this.#build(row));
    this.#builds.set(machineId, next);
    void next.finally(() => {
      if (this.#builds.get(machineId) === next) this.#builds.delete(machineId);
    });
    return revisionView(row);
  }

  async #build(row: RevisionRow): Promise<void> {
    const { machineId, revision } = row;
    const dir = path.join(this.o.root, machineId, String(revision));
    let status: "ready" | "failed" = "ready";
    let log: string;
    try {
      await mkdir(path.dirname(dir), { recursive: true, mode: 0o755 });
      await chmod(path.dirname(dir), 0o755);
      log = await (this.o.build ?? buildLayer)(dir, row.packages, row.npm);
    } catch (err) {
      status = "failed";
      log =
        err instanceof EnvBuildFailed
          ? err.log
          : `build failed: ${err instanceof Error ? err.message : String(err)}`;
      this.o.logger.warn(
        { machineId, revision },
        "an environment build failed; the machine stays on its last good revision",
      );
    }
    await this.o.db.transaction(async (tx) => {
      await tx
        .update(schema.envRevisions)
        .set({ status, log, finishedAt: new Date() })
        .where(and(eq(schema.envRevisions.machineId, machineId), eq(schema.envRevisions.revision, revision)));
      if (status !== "ready") return;
      const [m] = await tx
        .select({ envRevision: schema.machines.envRevision, state: schema.machines.state })
        .from(schema.machines)
        .where(eq(schema.machines.id, machineId))
        .for("update");
      if (!m || m.envRevision > revision) return;
      // a running box's next commands find the new layer (it is bound with every revision's folder)
      const running = m.state === "running" || m.state === "paused";
      await tx
        .update(schema.machines)
        .set({ envRevision: revision, ...(running ? { boxEnvRevision: revision } : {}) })
        .where(eq(schema.machines.id, machineId));
    });
  }
}
