// Workspaces: the /workspace of an agent's commands, by the class its spec names. The door
// (src/workloads) asks here for each unit of work and binds what it answers at /workspace,
// read-write, for that work's commands only: the agent's own (kept, or fresh for each unit
// of work when its spec says `memory: false`), or the flow instance's it works in.
import { rm } from "node:fs/promises";
import type { AgentSpec } from "../contract/spec.js";
import { WarrenError } from "../errors.js";
import { newId } from "../ids.js";
import { uidOf } from "../machines/placement.js";
import type { Logger } from "../observability/log.js";
import type { AgentRow } from "../store/index.js";
import type { WorkspaceLabels, WorkspaceLayout } from "./layout.js";
import type { Policy, WorkspaceClass } from "./policy.js";

/** A flow instance as the door needs it: its workspace and the group that reaches it. */
export interface InstanceRef {
  id: string;
  flowId: string;
  gid: number;
}

/** What the door binds at /workspace for a unit of work. */
export interface WorkspaceMount {
  /** The folder in the box bound at /workspace. */
  boxDir: string;
  /** Groups the work's commands carry (a flow instance's). */
  groups: number[];
  /** Makes the folder when it is not there yet (before the first command). */
  ensure(): Promise<void>;
  /** The end of the unit of work: a `memory: false` workspace goes. */
  release(): Promise<void>;
}

export interface WorkspacesOptions {
  policy: Policy;
  layout: WorkspaceLayout;
  specOf: (agent: AgentRow) => Promise<{ spec: AgentSpec }>;
  logger: Logger;
}

/** The labels of an agent's workspace. */
export function agentLabels(
  agent: Pick<AgentRow, "id" | "orgId" | "machineId">,
  runId?: string,
): WorkspaceLabels {
  return {
    "warren.kind": "agent",
    "warren.owner": agent.orgId,
    "warren.agent": agent.id,
    "warren.machine": agent.machineId,
    ...(runId !== undefined ? { "warren.run": runId, "warren.reset.eligible": "true" } : {}),
  };
}

/**
 * The labels of a run's part of its machine's box (beside the box's boxd folder): kind `flow`
 * inside a flow instance, else `agent`; the owner (organisation), run, agent, machine, and the
 * flow and instance it works in. Recovery finds what a run cut short left by them.
 */
export function runLabels(
  agent: Pick<AgentRow, "id" | "orgId" | "machineId">,
  runId: string,
  instance?: Pick<InstanceRef, "id" | "flowId">,
): WorkspaceLabels {
  return {
    "warren.kind": instance ? "flow" : "agent",
    "warren.owner": agent.orgId,
    "warren.run": runId,
    "warren.agent": agent.id,
    "warren.machine": agent.machineId,
    ...(instance ? { "warren.flow": instance.flowId, "warren.flow_instance": instance.id } : {}),
    "warren.reset.eligible": "true",
  };
}

export class Workspaces {
  constructor(private readonly o: WorkspacesOptions) {}

  get policy(): Policy {
    return this.o.policy;
  }

  get layout(): WorkspaceLayout {
    return this.o.layout;
  }

  /** The class a spec names, null for none; an undeclared class is request.invalid. */
  checkSpec(spec: Pick<AgentSpec, "workspace_class">): WorkspaceClass | null {
    if (spec.workspace_class === null) return null;
    const c = this.o.policy.classes.get(spec.workspace_class);
    if (!c)
      throw new WarrenError(
        "request.invalid",
        `workspace_class: "${spec.workspace_class}" is not a class of the policy file (${this.#declared()}); declare it under workspace_classes first`,
        { field: "workspace_class" },
      );
    return c;
  }

  #declared(): string {
    const names = [...this.o.policy.classes.keys()];
    return names.length ? `declared: ${names.join(", ")}` : "none is declared";
  }

  /** A registered agent's kept per-agent workspace is made now. */
  async agentSaved(agent: AgentRow, spec: AgentSpec): Promise<void> {
    const c = this.checkSpec(spec);
    if (c?.workspace_scope !== "per-agent") return;
    await this.o.layout.prepareAgent(agent.machineId, agent.id, uidOf(agent.slot), agentLabels(agent));
  }

  /**
   * At boot: the workspaces of units of work that never ended (the server stopped during a
   * `memory: false` run) are found by their labels, never by their names, and removed.
   * Flow instances' workspaces are never eligible. Answers how many went.
   */
  async sweep(machineDirs: string[]): Promise<number> {
    const found = await this.o.layout.find(machineDirs, {
      "warren.kind": "agent",
      "warren.reset.eligible": "true",
    });
    for (const w of found) await rm(w.dir, { recursive: true, force: true });
    return found.length;
  }

  /** The agent's workspaces go with it. */
  async agentDeleted(agent: Pick<AgentRow, "id" | "machineId">): Promise<void> {
    await this.o.layout.removeAgent(agent.machineId, agent.id);
  }

  /**
   * The /workspace of one unit of work of the agent: inside a flow instance, the instance's;
   * else by its class: per-agent, its own (kept, or this work's for `memory: false`);
   * per-flow-instance outside an instance, or no class: none.
   */
  async mount(
    agent: AgentRow,
    opts: { run?: { id: string }; instance?: InstanceRef },
  ): Promise<WorkspaceMount | null> {
    const layout = this.o.layout;
    if (opts.instance) {
      const inst = opts.instance;
      let made = false;
      return {
        boxDir: layout.flowBoxDir(inst.id),
        groups: [inst.gid],
        // made with the instance; made again (once per unit of work) if it went meanwhile
        ensure: async () => {
          if (made) return;
          await layout.prepareFlow(inst.id, inst.gid, flowLabels(agent.orgId, inst));
          made = true;
        },
        release: async () => {},
      };
    }
    const { spec } = await this.o.specOf(agent);
    if (spec.workspace_class === null) return null;
    const c = this.o.policy.classes.get(spec.workspace_class);
    if (!c)
      throw new WarrenError(
        "workspace.class_unknown",
        `the agent's workspace_class "${spec.workspace_class}" is not declared in the policy file (${this.#declared()}); declare it, or change the agent's spec`,
      );
    if (c.workspace_scope === "per-flow-instance") return null;
    const uid = uidOf(agent.slot);
    if (spec.memory) {
      let made = false;
      return {
        boxDir: layout.agentBoxDir(agent.id),
        groups: [],
        ensure: async () => {
          if (made) return;
          await layout.prepareAgent(agent.machineId, agent.id, uid, agentLabels(agent));
          made = true;
        },
        release: async () => {},
      };
    }
    const workId = opts.run?.id ?? newId("wsp");
    let made: Promise<unknown> | undefined;
    return {
      boxDir: layout.ephemeralBoxDir(agent.id, workId),
      groups: [],
      ensure: async () => {
        made ??= layout.prepareAgent(agent.machineId, agent.id, uid, agentLabels(agent, workId), workId);
        await made;
      },
      release: async () => {
        if (!made) return;
        made = undefined;
        await layout
          .removeEphemeral(agent.machineId, agent.id, workId)
          .catch((err: unknown) =>
            this.o.logger.warn({ err, agentId: agent.id }, "a workspace could not be removed"),
          );
      },
    };
  }
}

/** The labels of a flow instance's workspace. */
export function flowLabels(orgId: string, inst: Pick<InstanceRef, "id" | "flowId">): WorkspaceLabels {
  return {
    "warren.kind": "flow",
    "warren.owner": orgId,
    "warren.flow": inst.flowId,
    "warren.flow_instance": inst.id,
    "warren.reset.eligible": "false",
  };
}
