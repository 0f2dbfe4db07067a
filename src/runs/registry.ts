// The generation registry: at most one generation per agent, each with its cancellation, and
// the line of runs waiting for one (first come, first served): a run waits while its agent has
// a generation (or an earlier run waiting) or while its organisation runs as many as its cap.
import { WarrenError } from "../errors.js";

export interface Generation {
  agentId: string;
  orgId: string;
  runId: string;
  startedAt: Date;
  controller: AbortController;
}

/** Why a run waits: its agent is busy, or its organisation is at its cap of runs going on. */
export type WaitReason = "agent_busy" | "org_limit";

export interface Waiting {
  reason: WaitReason;
  since: Date;
  /** 1 for the next to start in the line it waits in (its agent's, or its organisation's). */
  position: number;
  /** The same, said as a sentence. */
  detail: string;
}

export interface Waiter {
  agentId: string;
  orgId: string;
  runId: string;
  /** Called once, when the run gets its generation. */
  start(g: Generation): void;
}

interface Entry extends Waiter {
  since: Date;
}

export class GenerationRegistry {
  readonly #byAgent = new Map<string, Generation>();
  readonly #byRun = new Map<string, Generation>();
  readonly #byOrg = new Map<string, number>();
  /** Waiting runs, oldest first. */
  #line: Entry[] = [];
  #closed = false;

  /** `orgMax`: how many generations one organisation may have going on at once. */
  constructor(private readonly orgMax = Infinity) {}

  /** Claims the agent for a generation now, or throws generation.busy (or run.org_limit). */
  acquire(agentId: string, runId: string, orgId = ""): Generation {
    const busy = this.#blocker({ agentId, orgId }, new Set());
    if (busy) throw this.#refusal(busy, agentId, orgId);
    const g: Generation = {
      agentId,
      orgId,
      runId,
      startedAt: new Date(),
      controller: new AbortController(),
    };
    this.#byAgent.set(agentId, g);
    this.#byRun.set(runId, g);
    this.#byOrg.set(orgId, (this.#byOrg.get(orgId) ?? 0) + 1);
    return g;
  }

  /**
   * Puts a run in line: it starts now when nothing holds it, else when its turn comes.
   * With `wait: false` a run that cannot start now is refused instead (generation.busy, or
   * run.org_limit). Answers whether it started.
   */
  enqueue(w: Waiter, opts: { wait: boolean }): "started" | "queued" {
    if (this.#closed) throw new WarrenError("box.unavailable", "the server is stopping; start the run again");
    const held = new Set(this.#line.map((e) => e.agentId));
    const busy = this.#blocker(w, held);
    if (!busy) {
      w.start(this.acquire(w.agentId, w.runId, w.orgId));
      return "started";
    }
    if (!opts.wait) throw this.#refusal(busy, w.agentId, w.orgId);
    this.#line.push({ ...w, since: new Date() });
    return "queued";
  }

  /** Takes a waiting run out of line (cancelled before it started); false when it is not waiting. */
  dequeue(runId: string): boolean {
    const i = this.#line.findIndex((e) => e.runId === runId);
    if (i < 0) return false;
    this.#line.splice(i, 1);
    this.#pump();
    return true;
  }

  /** The waiting runs of an agent, oldest first (or of every agent). */
  waiters(agentId?: string): string[] {
    return this.#line.filter((e) => agentId === undefined || e.agentId === agentId).map((e) => e.runId);
  }

  /** Why a run waits, or null when it is not waiting. */
  waiting(runId: string): Waiting | null {
    const i = this.#line.findIndex((e) => e.runId === runId);
    const e = this.#line[i];
    if (!e) return null;
    const ahead = this.#line.slice(0, i);
    const agentAhead = ahead.filter((x) => x.agentId === e.agentId).length;
    const running = this.#byAgent.get(e.agentId);
    if (running || agentAhead > 0) {
      const position = agentAhead + 1;
      return {
        reason: "agent_busy",
        since: e.since,
        position,
        detail: `waits for its agent: ${running ? `${running.runId} is going on` : "an earlier run waits"}; ${ordinal(position)} in the agent's line`,
      };
    }
    // runs of the organisation ahead of it that will start before it when a place frees
    const held = new Set<string>();
    let orgAhead = 0;
    for (const x of ahead) {
      if (x.orgId === e.orgId && !held.has(x.agentId) && !this.#byAgent.has(x.agentId)) orgAhead++;
      held.add(x.agentId);
    }
    const position = orgAhead + 1;
    return {
      reason: "org_limit",
      since: e.since,
      position,
      detail: `waits for a place: its organisation has ${this.#byOrg.get(e.orgId) ?? 0} runs going on, its cap of ${this.orgMax}; ${ordinal(position)} in the organisation's line`,
    };
  }

  release(g: Generation): void {
    if (this.#byRun.get(g.runId) !== g) return;
    this.#byRun.delete(g.runId);
    if (this.#byAgent.get(g.agentId) === g) this.#byAgent.delete(g.agentId);
    const n = (this.#byOrg.get(g.orgId) ?? 1) - 1;
    if (n > 0) this.#byOrg.set(g.orgId, n);
    else this.#byOrg.delete(g.orgId);
    this.#pump();
  }

  /** No run starts from now on; answers the runs that were waiting, taken out of line. */
  close(): string[] {
    this.#closed = true;
    const left = this.#line.map((e) => e.runId);
    this.#line = [];
    return left;
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

  /** What holds a run back now: its agent (`held`: agents with an earlier waiter), its organisation, or nothing. */
  #blocker(w: { agentId: string; orgId: string }, held: Set<string>): WaitReason | null {
    if (this.#byAgent.has(w.agentId) || held.has(w.agentId)) return "agent_busy";
    if ((this.#byOrg.get(w.orgId) ?? 0) >= this.orgMax) return "org_limit";
    return null;
  }

  #refusal(reason: WaitReason, agentId: string, orgId: string): WarrenError {
    if (reason === "org_limit")
      return new WarrenError(
        "run.org_limit",
        `the organisation already has ${this.#byOrg.get(orgId) ?? 0} runs going on, its cap of ${this.orgMax}; wait for one to end, or start the run with wait: true to queue it`,
      );
    const current = this.#byAgent.get(agentId);
    const waiting = this.waiters(agentId);
    const parts = [
      ...(current ? [`a generation running (${current.runId})`] : []),
      ...(waiting.length
        ? [`${waiting.length} run${waiting.length === 1 ? "" : "s"} waiting (${waiting.join(", ")})`]
        : []),
    ];
    return new WarrenError(
      "generation.busy",
      `agent ${agentId} already has ${parts.join(" and ")}; wait for them or cancel them`,
    );
  }

  /** Starts every waiting run that nothing holds any more, oldest first. */
  #pump(): void {
    if (this.#closed) return;
    const held = new Set<string>();
    for (const e of [...this.#line]) {
      if (this.#blocker(e, held)) {
        held.add(e.agentId);
        continue;
      }
      this.#line.splice(this.#line.indexOf(e), 1);
      e.start(this.acquire(e.agentId, e.runId, e.orgId));
    }
  }
}

function ordinal(n: number): string {
  const s = n % 100 >= 11 && n % 100 <= 13 ? "th" : (["th", "st", "nd", "rd"][n % 10] ?? "th");
  return `${n}${s}`;
}
