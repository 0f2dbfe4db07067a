// The generation registry: at most one generation per agent, each with its cancellation, and
// the line of runs waiting for one (first come, first served): a run waits while its agent has
// a generation (or an earlier run waiting) or while its organisation runs as many as its cap.
// The line is bounded: at most `perAgent` runs of one agent and `perOrg` of one organisation
// wait at once; past either a run is refused (run.queue_full), never queued. Every count is
// kept as runs come and go, so taking a run in or out of line costs no walk of the line.
import { WarrenError } from "../errors.js";

/** Seconds a run refused by a full queue is asked to wait before it is asked again (Retry-After). */
export const QUEUE_RETRY_AFTER_S = 5;

/** How many runs may wait at once: of one agent, of one organisation. */
export interface QueueBounds {
  perAgent: number;
  perOrg: number;
}

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
  /** How many runs of each agent, and of each organisation, wait in the line. */
  readonly #waitingOfAgent = new Map<string, number>();
  readonly #waitingOfOrg = new Map<string, number>();
  #closed = false;
  /** Agents being deleted: no run of theirs is taken. */
  readonly #closing = new Set<string>();
  /** Agents being moved to another machine: no run of theirs starts or waits meanwhile. */
  readonly #moving = new Set<string>();

  /**
   * `orgMax`: how many generations one organisation may have going on at once; `bounds`: how
   * many runs may wait (WARREN_QUEUE_PER_AGENT, WARREN_QUEUE_PER_ORG).
   */
  constructor(
    private readonly orgMax = Infinity,
    readonly bounds: QueueBounds = { perAgent: Infinity, perOrg: Infinity },
  ) {}

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
    if (this.#closing.has(w.agentId))
      throw new WarrenError("not_found", "agent was not found (it is being deleted)");
    this.refuseWhileMoving(w.agentId, "start the run");
    const busy = this.#blocker(w, this.#waitingOfAgent);
    if (!busy) {
      w.start(this.acquire(w.agentId, w.runId, w.orgId));
      return "started";
    }
    if (!opts.wait) throw this.#refusal(busy, w.agentId, w.orgId);
    const full = this.full(w.agentId, w.orgId);
    if (full)
      throw new WarrenError("run.queue_full", `${full}; wait for runs to end, or cancel some`, {
        retryAfterS: QUEUE_RETRY_AFTER_S,
      });
    this.#line.push({ ...w, since: new Date() });
    this.#count(w, 1);
    return "queued";
  }

  /** Why one more run of the agent could not wait now (its queue or its organisation's is full), or null. */
  full(agentId: string, orgId: string): string | null {
    const agent = this.#waitingOfAgent.get(agentId) ?? 0;
    if (agent >= this.bounds.perAgent)
      return `the agent's queue is full: ${agent} runs wait, its bound (WARREN_QUEUE_PER_AGENT)`;
    const org = this.#waitingOfOrg.get(orgId) ?? 0;
    if (org >= this.bounds.perOrg)
      return `the organisation's queue is full: ${org} runs wait, its bound (WARREN_QUEUE_PER_ORG)`;
    return null;
  }

  /** How many runs wait: of the agent, of the organisation. */
  queued(agentId: string, orgId: string): { agent: number; org: number } {
    return { agent: this.#waitingOfAgent.get(agentId) ?? 0, org: this.#waitingOfOrg.get(orgId) ?? 0 };
  }

  /**
   * Holds the agent while it moves to another machine (its home is copied, then its row
   * switched): refused with generation.busy while a run of it goes on or waits; until the
   * answer is called, every run asked of it is refused the same way (none waits in line, as a
   * waiting run would start on the machine it was asked on).
   */
  holdForMove(agentId: string, orgId: string): () => void {
    if (this.#byAgent.has(agentId) || this.#waitingOfAgent.has(agentId))
      throw this.#refusal("agent_busy", agentId, orgId);
    if (this.#moving.has(agentId))
      throw new WarrenError("generation.busy", `agent ${agentId} is being moved already`);
    this.#moving.add(agentId);
    return () => {
      this.#moving.delete(agentId);
    };
  }

  /**
   * Refuses work on an agent that is moving (409 generation.busy): its home is being copied,
   * and what reached the machine it leaves would be lost when the move switches. Every door to
   * its box (src/workloads `open`) and every write of its home from the API asks here.
   */
  refuseWhileMoving(agentId: string, what = "try"): void {
    if (this.#moving.has(agentId))
      throw new WarrenError(
        "generation.busy",
        `agent ${agentId} is being moved to another machine; ${what} again once it is there`,
      );
  }

  /** Takes a waiting run out of line (cancelled before it started); false when it is not waiting. */
  dequeue(runId: string): boolean {
    const i = this.#line.findIndex((e) => e.runId === runId);
    const e = this.#line[i];
    if (!e) return false;
    this.#line.splice(i, 1);
    this.#count(e, -1);
    this.#pump();
    return true;
  }

  /**
   * Takes every waiting run of the agent out of line at once, and takes no more of it for
   * `ms` (its deletion: by then its row is gone); answers their ids.
   */
  dequeueAgent(agentId: string, ms = 0): string[] {
    if (ms > 0) {
      this.#closing.add(agentId);
      setTimeout(() => this.#closing.delete(agentId), ms).unref();
    }
    if (!this.#waitingOfAgent.has(agentId)) return [];
    const out: string[] = [];
    this.#line = this.#line.filter((e) => {
      if (e.agentId !== agentId) return true;
      out.push(e.runId);
      this.#count(e, -1);
      return false;
    });
    this.#pump();
    return out;
  }

  #count(e: { agentId: string; orgId: string }, d: 1 | -1): void {
    for (const [m, k] of [
      [this.#waitingOfAgent, e.agentId],
      [this.#waitingOfOrg, e.orgId],
    ] as const) {
      const n = (m.get(k) ?? 0) + d;
      if (n > 0) m.set(k, n);
      else m.delete(k);
    }
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
    let agentAhead = 0;
    for (const x of ahead) if (x.agentId === e.agentId) agentAhead++;
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
    this.#waitingOfAgent.clear();
    this.#waitingOfOrg.clear();
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
  #blocker(
    w: { agentId: string; orgId: string },
    held: { has(agentId: string): boolean },
  ): WaitReason | null {
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
    const ready: [Entry, Generation][] = [];
    // one walk: what nothing holds leaves the line (its generation taken at once, so the next
    // of its organisation sees the place gone), then each starts, oldest first
    this.#line = this.#line.filter((e) => {
      if (this.#blocker(e, held)) {
        held.add(e.agentId);
        return true;
      }
      this.#count(e, -1);
      ready.push([e, this.acquire(e.agentId, e.runId, e.orgId)]);
      return false;
    });
    for (const [e, g] of ready) e.start(g);
  }
}

function ordinal(n: number): string {
  const s = n % 100 >= 11 && n % 100 <= 13 ? "th" : (["th", "st", "nd", "rd"][n % 10] ?? "th");
  return `${n}${s}`;
}
