// The one in-process event bus: what happened, told after the fact to whoever listens. Each
// event names its subject (a run, a conversation, a guild, a schedule, an agent, a machine,
// an approval); the events of one subject reach their listeners in the order they were emitted
// (the next waits until every listener of the one before has finished, or ran out of its
// time), those of different subjects independently. A listener cannot throw into the emitter:
// emit returns at once, a listener that throws or rejects is logged while the others still
// run, and one that does not settle within the bus's time limit is logged and let go, so that
// neither the subject's next event nor the other listeners wait on it any longer. A listener
// may hear one subject only (`on(name, fn, subject)`): a stream of one run is not called for
// every other run's events.
import type { RunStatus } from "../contract/types.js";

/** Every event of the bus, by name: what it carries. */
export interface Events {
  /** A run's record is written with its final status (the recorder). */
  "run.ended": { runId: string; status: RunStatus };
  /** An event of a run's trace is stored (the record writer). */
  "run.event_stored": { runId: string };
  /** An event of a conversation's stream is stored (the record writer). */
  "conversation.event_stored": { conversationId: string };
  /** A conversation's turn ended: its run's record is written (conversations). */
  "turn.ended": { conversationId: string; runId: string; status: RunStatus };
  /** A person's decision on a waiting call is stored (approvals). */
  "approval.decided": {
    approvalId: string;
    runId: string;
    decision: "allow" | "deny";
    message: string | null;
    decidedBy: string;
  };
  /** A message was put in a guild's queue (guild dispatch). */
  "guild.message_queued": { guildId: string; messageId: string };
  /** An agent joined a guild: messages waiting for one may go now (guilds). */
  "guild.joined": { guildId: string; agentId: string };
  /** A schedule fired a run (the schedules' firer). */
  "schedule.fired": { scheduleId: string; runId: string };
  /** An agent was deleted: its rows, home and workspace are gone (agents). */
  "agent.deleted": { agentId: string; orgId: string; machineId: string };
  /** A machine's box stopped: idle, asked, or gone (the runtime). */
  "box.stopped": { machineId: string; reason: string };
  /**
   * A machine's box started (not a resume), or a box that outlived the last server was adopted
   * (`adopted`): its agents' runtime folders are there (the runtime).
   */
  "box.started": { machineId: string; adopted?: boolean };
}

export type EventName = keyof Events;
/** Where a failing or hanging listener is told (the server's logger). */
export interface ErrorLog {
  error(obj: object, msg: string): void;
}
export type Listener<N extends EventName> = (event: Events[N]) => unknown;

/** The subject of each event: its events are told in order. */
const SUBJECT: { [N in EventName]: (e: Events[N]) => string } = {
  "run.ended": (e) => e.runId,
  "run.event_stored": (e) => e.runId,
  "conversation.event_stored": (e) => e.conversationId,
  "turn.ended": (e) => e.conversationId,
  "approval.decided": (e) => e.approvalId,
  "guild.message_queued": (e) => e.guildId,
  "guild.joined": (e) => e.guildId,
  "schedule.fired": (e) => e.scheduleId,
  "agent.deleted": (e) => e.agentId,
  "box.stopped": (e) => e.machineId,
  "box.started": (e) => e.machineId,
};

/** How long a listener may take by default before the bus lets it go. */
export const LISTENER_LIMIT_MS = 30_000;

/** The listeners of one event: those of every subject ("" key) and those of one. */
type Listeners = Map<string, Set<(e: never) => unknown>>;

export class EventBus {
  readonly #logger: ErrorLog;
  readonly #limitMs: number;
  readonly #listeners = new Map<EventName, Listeners>();
  /** The last delivery of each subject with one going on. */
  readonly #tails = new Map<string, Promise<void>>();

  /** `limitMs`: how long one listener may take with one event before it is let go. */
  constructor(logger: ErrorLog, o: { limitMs?: number } = {}) {
    this.#logger = logger;
    this.#limitMs = o.limitMs ?? LISTENER_LIMIT_MS;
  }

  /**
   * Listens to one event (of one subject only, when named); answers the function that stops
   * listening.
   */
  on<N extends EventName>(name: N, fn: Listener<N>, subject = ""): () => void {
    let bySubject = this.#listeners.get(name);
    if (!bySubject) this.#listeners.set(name, (bySubject = new Map()));
    let set = bySubject.get(subject);
    if (!set) bySubject.set(subject, (set = new Set()));
    set.add(fn);
    return () => {
      set.delete(fn);
      if (set.size === 0 && bySubject.get(subject) === set) bySubject.delete(subject);
    };
  }

  /** Tells the event to its listeners, after the subject's events before it; never throws. */
  emit<N extends EventName>(name: N, event: Events[N]): void {
    const bySubject = this.#listeners.get(name);
    if (!bySubject) return;
    const subject = SUBJECT[name](event);
    const fns = [...(bySubject.get("") ?? []), ...(bySubject.get(subject) ?? [])] as Listener<N>[];
    if (fns.length === 0) return;
    const key = `${name.split(".")[0]}\n${subject}`;
    const before = this.#tails.get(key) ?? Promise.resolve();
    const tail = before.then(() => this.#deliver(name, event, fns));
    this.#tails.set(key, tail);
    void tail.then(() => {
      if (this.#tails.get(key) === tail) this.#tails.delete(key);
    });
  }

  /** Resolves once every event emitted so far has reached all its listeners. */
  async idle(): Promise<void> {
    while (this.#tails.size > 0) await Promise.all([...this.#tails.values()]);
  }

  async #deliver<N extends EventName>(name: N, event: Events[N], fns: Listener<N>[]): Promise<void> {
    await Promise.all(fns.map((fn) => this.#call(name, event, fn)));
  }

  /** One listener with one event: settled, failed (logged) or let go after the time limit (logged). */
  async #call<N extends EventName>(name: N, event: Events[N], fn: Listener<N>): Promise<void> {
    let out: unknown;
    try {
      out = fn(event);
    } catch (err) {
      return this.#failed(name, err);
    }
    if (!(out instanceof Promise)) return;
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<"late">((resolve) => {
      timer = setTimeout(() => resolve("late"), this.#limitMs);
    });
    const done = out.then(
      () => "done" as const,
      (err: unknown) => this.#failed(name, err),
    );
    try {
      if ((await Promise.race([done, late])) === "late")
        this.#logger.error(
          { event: name, limitMs: this.#limitMs },
          `a listener of ${name} took longer than ${this.#limitMs} ms; the bus went on without it`,
        );
    } finally {
      clearTimeout(timer);
    }
  }

  #failed(name: EventName, err: unknown): void {
    this.#logger.error(
      { err: err instanceof Error ? err : new Error(String(err)), event: name },
      `a listener of ${name} failed`,
    );
  }
}
