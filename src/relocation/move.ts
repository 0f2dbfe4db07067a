// Moving an agent to another machine of its organisation: its home (its files, its
// conversations' worktrees and branches) is copied to its place on the target, then one
// transaction gives it the target machine and a slot there (its uid and ports follow the slot),
// then the old copy goes. A durable intent (agent_moves) is written before the copy: a server
// stopped half-way rolls the move back (copying: the agent is still where it was) or finishes it
// (switched: the agent lives on the target) at its next boot, so the agent is whole on one machine.
import { execFile } from "node:child_process";
import { rm } from "node:fs/promises";
import { promisify } from "node:util";
import { and, eq } from "drizzle-orm";
import type { Identity } from "../access/index.js";
import type { Agents } from "../agents/service.js";
import type { HomeLayout } from "../boxes/index.js";
import type { Agent } from "../contract/types.js";
import { WarrenError } from "../errors.js";
import { lowestFreeSlot, uidOf } from "../machines/placement.js";
import type { Machines } from "../machines/service.js";
import type { Logger } from "../observability/log.js";
import type { MachineControl } from "../runtime/index.js";
import type { GenerationRegistry } from "../runs/registry.js";
import { schema, type Db } from "../store/index.js";

const run = promisify(execFile);

export interface MovesOptions {
  db: Db;
  agents: Agents;
  machines: Machines;
  layout: HomeLayout;
  control: MachineControl;
  registry: Pick<GenerationRegistry, "holdForMove">;
  /** The agent's terminals and browser, which would go on in its old box: ended as it moves. */
  terminals?: { endAgent(agentId: string, reason: string): void } | undefined;
  browsers?: { stop(agentId: string, why?: string): Promise<void> } | undefined;
  logger: Logger;
}

export class Moves {
  constructor(private readonly o: MovesOptions) {}

  async move(who: Identity, agentId: string, machineId: string): Promise<Agent> {
    const { agents, machines } = this.o;
    const agent = await agents.load(who, agentId, "write");
    const target = await machines.load(who, machineId, "write");
    if (target.orgId !== agent.orgId) throw new WarrenError("not_found", "machine was not found");
    if (target.id === agent.machineId)
      throw new WarrenError("request.invalid", "machine_id: the agent already lives on this machine");
    // no run of the agent goes on or waits, and none starts until the move is over
    // (and no door to its box opens, no write reaches its home: src/workloads, src/homes)
    const letGo = this.o.registry.holdForMove(agent.id, agent.orgId);
    try {
      // what goes on in its old box without a run: what it typed or wrote there would be lost
      const why = "the agent is being moved to another machine";
      this.o.terminals?.endAgent(agent.id, why);
      await this.o.browsers?.stop(agent.id, why);
      return await this.#move(who, agent, target);
    } finally {
      letGo();
    }
  }

  async #move(
    who: Identity,
    agent: Awaited<ReturnType<Agents["load"]>>,
    target: Awaited<ReturnType<Machines["load"]>>,
  ): Promise<Agent> {
    const { db, agents, layout } = this.o;
    // room first: a slot and the disk its cap reserves
    const others = await db
      .select({ slot: schema.agents.slot, cap: schema.agents.maxWorkspaceMib })
      .from(schema.agents)
      .where(eq(schema.agents.machineId, target.id));
    const slot = lowestFreeSlot(others.map((x) => x.slot));
    if (slot === null)
      throw new WarrenError("request.invalid", "machine_id: the machine has no free slot left");
    const reserved = others.reduce((n, x) => n + x.cap, 0);
    if (reserved + agent.maxWorkspaceMib > target.maxWorkspaceMib)
      throw new WarrenError(
        "request.invalid",
        `machine_id: the machine's other agents reserve ${reserved} of its ${target.maxWorkspaceMib} MiB; this agent's cap of ${agent.maxWorkspaceMib} MiB does not fit`,
      );
    const [intent] = await db
      .insert(schema.agentMoves)
      .values({
        agentId: agent.id,
        fromMachine: agent.machineId,
        fromSlot: agent.slot,
        toMachine: target.id,
        toSlot: slot,
        state: "copying",
      })
      .onConflictDoNothing()
      .returning();
    if (!intent) throw new WarrenError("generation.busy", "the agent is being moved already");
    try {
      const from = layout.homeDir(agent.machineId, agent.id);
      const to = layout.homeDir(target.id, agent.id);
      await rm(to, { recursive: true, force: true });
      await layout.prepareHome(target.id, agent.id, uidOf(slot), target.trust);
      // everything of the home, links and modes as they are; then owned by its new uid
      await run("cp", ["-a", "--reflink=auto", `${from}/.`, `${to}/`]);
      // the old uid's files (and, alone, its group's) become the new uid's
      const [was, now] = [uidOf(agent.slot), uidOf(slot)];
      await run("chown", ["-R", "--no-dereference", `--from=${was}`, `${now}`, to]);
      await run("chown", ["-R", "--no-dereference", `--from=:${was}`, `:${now}`, to]);
      await db.transaction(async (tx) => {
        const moved = await tx
          .update(schema.agents)
          .set({ machineId: target.id, slot })
          .where(and(eq(schema.agents.id, agent.id), eq(schema.agents.machineId, agent.machineId)))
          .returning({ id: schema.agents.id });
        if (moved.length !== 1) throw new Error("the agent changed while it was moved");
        await tx
          .update(schema.agentMoves)
          .set({ state: "switched" })
          .where(eq(schema.agentMoves.agentId, agent.id));
      });
    } catch (err) {
      await this.#rollBack(agent.id, target.id).catch((e: unknown) =>
        this.o.logger.error({ err: e, agentId: agent.id }, "rolling a move back failed"),
      );
      throw err;
    }
    await this.#finish(agent.id, agent.machineId, target.id);
    return agents.get(who, agent.id);
  }

  /** The copy on the target goes; the agent stays where it was. */
  async #rollBack(agentId: string, toMachine: string): Promise<void> {
    await this.o.layout.removeHome(toMachine, agentId);
    await this.o.db.delete(schema.agentMoves).where(eq(schema.agentMoves.agentId, agentId));
  }

  /** The old copy goes; both machines' boxes learn of the change. */
  async #finish(agentId: string, fromMachine: string, toMachine: string): Promise<void> {
    await this.o.layout.removeHome(fromMachine, agentId);
    await this.o.db.delete(schema.agentMoves).where(eq(schema.agentMoves.agentId, agentId));
    await Promise.all([this.o.control.agentsChanged(fromMachine), this.o.control.agentsChanged(toMachine)]);
  }

  /**
   * At boot: each move a stopped server left half-way is finished (the agent's row names the
   * target: the old copy goes) or rolled back (it names the source: the target's copy goes).
   */
  async recover(): Promise<number> {
    const left = await this.o.db.select().from(schema.agentMoves);
    for (const m of left) {
      const [a] = await this.o.db
        .select({ machineId: schema.agents.machineId })
        .from(schema.agents)
        .where(eq(schema.agents.id, m.agentId));
      if (a?.machineId === m.toMachine) await this.#finish(m.agentId, m.fromMachine, m.toMachine);
      else await this.#rollBack(m.agentId, m.toMachine);
      this.o.logger.warn(
        { agentId: m.agentId, from: m.fromMachine, to: m.toMachine, finished: a?.machineId === m.toMachine },
        "a move the last server left half-way was settled",
      );
    }
    return left.length;
  }
}
