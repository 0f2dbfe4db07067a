// Runs: a generation with an input, an output and a record (status, exit, output, a trace
// of events and a receipt). At most one generation per agent at a time. This service checks
// access and what is asked, builds the run's request (request.ts: its version, limits and
// runner) and hands it to the run recorder (recorder.ts).
import { and, asc, desc, eq, gt, lt } from "drizzle-orm";
import type { Access, Identity, Role } from "../access/index.js";
import type { Agents } from "../agents/service.js";
import { WarrenError } from "../errors.js";
import type { Run } from "../contract/types.js";
import type { ModelGateway } from "../models/types.js";
import type { Db } from "../store/index.js";
import { schema } from "../store/index.js";
import { argvOf, type CommandLimits } from "../workloads/index.js";
import type { InstanceRef } from "../workspaces/service.js";
import type { AgentRunContext, AgentRunners } from "./kinds.js";
import type { RunRecorder } from "./recorder.js";
import { runRequest, type AgentWork, type VersionForRun } from "./request.js";
import { runView, terminal, viewFor, withSchedules, type RunRow } from "./view.js";

export const MAX_INPUT_BYTES = 256 * 1024;

export type RunInput = CommandRunInput | AgentRunInput;

/** Runs the agent by its kind (src/runs/model-run.ts). */
export interface AgentRunInput {
  kind: "agent";
  input: string;
  timeout_s?: number | undefined;
  /** false: refuse the run when it cannot start now, instead of queueing it. */
  wait?: boolean | undefined;
  version?: number | undefined;
  routing_key?: string | undefined;
}

export interface CommandRunInput {
  kind: "command";
  argv?: string[] | undefined;
  command?: string | undefined;
  input?: string | undefined;
  timeout_s?: number | undefined;
  env?: Record<string, string> | undefined;
  /** The run's own limits, tighter than its machine's. */
  limits?: CommandLimits | undefined;
  /** false: refuse the run when it cannot start now, instead of queueing it. */
  wait?: boolean | undefined;
  version?: number | undefined;
  routing_key?: string | undefined;
}

export interface RunsOptions {
  db: Db;
  access: Access;
  agents: Pick<Agents, "load" | "specOf" | "specAt" | "machineOf">;
  /** Every run's lifecycle: queue, start, trace, timeout, cancel, measurement, receipt, end. */
  recorder: RunRecorder;
  /** Agent runs: the model gateway and the runners of agent kinds. */
  gateway: ModelGateway;
  runners: AgentRunners;
  /** Picks each run's version (src/versions); default the agent's current one. */
  versionFor?: VersionForRun;
  /**
   * Throws version.gate unless the agent's evaluation gate lets `version` take runs: a run that
   * names its version passes the gate as a canary does (an evaluation's own runs excepted).
   */
  gate?: (agentId: string, version: number) => Promise<void>;
  /** Why a `waiting` run waits: a tool call's approval (src/approvals/service.ts). */
  approvalWaiting?: (runId: string) => Run["waiting"];
  /** Keeps where an assistant run stood when the server stops while it waits (resume.ts). */
  suspend?: AgentRunContext["suspend"];
}

export class Runs {
  readonly #o: RunsOptions;

  constructor(o: RunsOptions) {
    this.#o = o;
  }

  /**
   * Starts a run; `opts.id` is its id when its caller wrote about it first (a schedule's fire);
   * `opts.evaluation`: a case of an evaluation, which runs a version the gate has not yet passed.
   */
  async start(
    who: Identity,
    agentId: string,
    input: RunInput,
    opts: {
      id?: string;
      instance?: InstanceRef | undefined;
      evaluation?: boolean;
      /** The run's own runner, made from its plan and the agent kind's runner (request.ts). */
      runner?: AgentWork["runner"];
    } = {},
  ): Promise<Run> {
    const o = this.#o;
    const agent = await o.agents.load(who, agentId, "write");
    const inputBytes = Buffer.from(input.input ?? "", "utf8");
    if (inputBytes.length > MAX_INPUT_BYTES) {
      throw new WarrenError(
        "run.input_too_large",
        `the input is ${inputBytes.length} bytes, above the ${MAX_INPUT_BYTES}-byte limit; pass large data as a file in the home`,
      );
    }
    if (input.version !== undefined && opts.evaluation !== true) await o.gate?.(agent.id, input.version);
    const command =
      input.kind === "command" ? { argv: argvOf(input), env: input.env, limits: input.limits } : undefined;
    const req = await runRequest(o, {
      agent,
      input: input.input ?? "",
      version: { ask: { version: input.version, routing_key: input.routing_key } },
      timeoutS: input.timeout_s,
      command,
      runner: opts.runner,
      rest: { wait: input.wait ?? true, id: opts.id, instance: opts.instance },
    });
    return o.recorder.start(req);
  }

  async #load(who: Identity, id: string, perm: "read" | "inspect" | "write"): Promise<RunRow> {
    return (await this.#loadWithRole(who, id, perm)).row;
  }

  async #loadWithRole(
    who: Identity,
    id: string,
    perm: "read" | "inspect" | "write",
  ): Promise<{ row: RunRow; role: Role }> {
    const [r] = await this.#o.db.select().from(schema.runs).where(eq(schema.runs.id, id));
    if (!r) throw new WarrenError("not_found", "run was not found");
    // runs outlive their agents: access follows the run's organisation
    const role = await this.#o.access.require(r.orgId, who, perm, "run");
    return { row: r, role };
  }

  async get(who: Identity, id: string): Promise<Run> {
    const { row, role } = await this.#loadWithRole(who, id, "read");
    const [view] = await withSchedules(this.#o.db, [this.#o.recorder.withWaiting(viewFor(role, row))]);
    if (row.status === "waiting") {
      const waiting = this.#o.approvalWaiting?.(id);
      return { ...view!, ...this.#o.recorder.live(id), ...(waiting ? { waiting } : {}) };
    }
    return row.status === "running" ? { ...view!, ...this.#o.recorder.live(id) } : view!;
  }

  async events(
    who: Identity,
    id: string,
    after?: number,
  ): Promise<{ id: number; type: string; at: string; data: unknown }[]> {
    await this.#load(who, id, "inspect");
    const where =
      after === undefined
        ? eq(schema.runEvents.runId, id)
        : and(eq(schema.runEvents.runId, id), gt(schema.runEvents.id, after));
    const rows = await this.#o.db
      .select()
      .from(schema.runEvents)
      .where(where)
      .orderBy(asc(schema.runEvents.id))
      .limit(5000);
    return rows.map((e) => ({ id: e.id, type: e.type, at: e.at.toISOString(), data: e.data }));
  }

  async list(
    who: Identity,
    agentId: string,
    opts: { limit: number; before?: string | undefined },
  ): Promise<Run[]> {
    const agent = await this.#o.agents.load(who, agentId, "read");
    const role = await this.#o.access.roleIn(agent.orgId, who);
    const where = [eq(schema.runs.agentId, agent.id)];
    if (opts.before) {
      const [b] = await this.#o.db
        .select({ createdAt: schema.runs.createdAt })
        .from(schema.runs)
        .where(eq(schema.runs.id, opts.before));
      if (b) where.push(lt(schema.runs.createdAt, b.createdAt));
    }
    const rows = await this.#o.db
      .select()
      .from(schema.runs)
      .where(and(...where))
      .orderBy(desc(schema.runs.createdAt), desc(schema.runs.id))
      .limit(opts.limit);
    return withSchedules(
      this.#o.db,
      rows.map((r) => this.#o.recorder.withWaiting(viewFor(role, r))),
    );
  }

  async cancel(who: Identity, id: string): Promise<Run> {
    const r = await this.#load(who, id, "write");
    if (terminal.includes(r.status)) {
      throw new WarrenError("run.not_cancellable", `the run already ended as ${r.status}`);
    }
    if (await this.#o.recorder.cancel(id, "cancelled by an operator"))
      return this.#load(who, id, "write").then(runView);
    return runView(r);
  }
}
