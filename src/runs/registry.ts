// The generation registry: at most one generation per agent, each with its cancellation.
import { WarrenError } from "../errors.js";

export interface Generation {
  agentId: string;
  runId: string;
  startedAt: Date;
  controller: AbortController;
}

export class GenerationRegistry {
  readonly #byAgent = new Map<string, Generation>();
  readonly #byRun = new Map<string, Generation>();

  /** Claims the agent for a generation, or throws generation.busy. */
  acquire(agentId: string, runId: string): Generation {
    const current = this.#byAgent.get(agentId);
    if (current) {
      throw new WarrenError(
        "generation.busy",
        `agent ${agentId} already has a generation running (${current.runId}); wait for it or cancel it`,
      );
    }
    const g: Generation = { agentId, runId, startedAt: new Date(), controller: new AbortController() };
    this.#byAgent.set(agentId, g);
    this.#byRun.set(runId, g);
    return g;
  }

  release(g: Generation): void {
    if (this.#byAgent.get(g.agentId) === g) this.#byAgent.delete(g.agentId);
    if (this.#byRun.get(g.runId) === g) this.#byRun.delete(g.runId);
  }

  forAgent(agentId: string): Generation | undefined {
    return this.#byAgent.get(agentId);
  }

  forRun(runId: string): Generation | undefined {
    return this.#byRun.get(runId);
  }

  /** Cancels the run's generation; false when it is not running here. */
  cancel(runId: string, reason = "cancelled"): boolean {
    const g = this.#byRun.get(runId);
    if (!g) return false;
    g.controller.abort(new Error(reason));
    return true;
  }

  /** Agents with a generation running, for the idle timer. */
  activeAgents(): string[] {
    return [...this.#byAgent.keys()];
  }

  get size(): number {
    return this.#byAgent.size;
  }
}
