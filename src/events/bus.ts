// The one in-process event bus: what happened, told after the fact to whoever listens. Each
// event names its subject (a run, a guild, a schedule, a machine); the events of one subject
// reach their listeners in the order they were emitted (the next waits until every listener
// of the one before has finished), those of different subjects independently. A listener cannot throw into the emitter: emit returns at once, and
// a listener that throws or rejects is logged while the others still run.
import type { RunStatus } from "../contract/types.js";

/** Every event of the bus, by name: what it carries. */
export interface Events {
  /** A run's record is written with its final status (the recorder). */
  "run.ended": { runId: string; status: RunStatus };
  /** A message was put in a guild's queue (guild dispatch). */
  "guild.message_queued": { guildId: string; messageId: string };
  /** An agent joined a guild: messages waiting for one may go now (guilds). */
  "guild.joined": { guildId: string; agentId: string };
  /** A schedule fired a run (the schedules' firer). */
  "schedule.fired": { scheduleId: string; runId: string };
  /** A machine's box stopped: idle, asked, or gone (the runtime). */
  "box.stopped": { machineId: string; reason: string };
}

export type EventName = keyof Events;
/** Where a failing listener is told (the server's logger). */
export interface ErrorLog {
  error(obj: object, msg: string): void;
}
export type Listener<N extends EventName> = (event: Events[N]) => unknown;

/** The subject of each event: its events are told in order. */
const SUBJECT: { [N in EventName]: (e: Events[N]) => string } = {
  "run.ended": (e) => e.runId,
  "guild.message_queued": (e) => e.guildId,
  "guild.joined": (e) => e.guildId,
  "schedule.fired": (e) => e.scheduleId,
  "box.stopped": (e) => e.machineId,
};

export class EventBus {
  readonly #logger: ErrorLog;
  readonly #listeners = new Map<EventName, Set<(e: never) => unknown>>();
  /** The last delivery of each subject with one going on. */
  readonly #tails = new Map<string, Promise<void>>();

  constructor(logger: ErrorLog) {
    this.#logger = logger;
  }

  /** Listens to one event; answers the function that stops listening. */
  on<N extends EventName>(name: N, fn: Listener<N>): () => void {
    let set = this.#listeners.get(name);
    if (!set) this.#listeners.set(name, (set = new Set()));
    set.add(fn);
    return () => set.delete(fn);
  }

  /** Tells the event to its listeners, after the subject's events before it; never throws. */
  emit<N extends EventName>(name: N, event: Events[N]): void {
    const fns = [...(this.#listeners.get(name) ?? [])] as Listener<N>[];
    if (fns.length === 0) return;
    const key = `${name.split(".")[0]}\n${SUBJECT[name](event)}`;
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
    const calls = fns.map((fn) => {
      try {
        return Promise.resolve(fn(event));
      } catch (err) {
        return Promise.reject(err instanceof Error ? err : new Error(String(err)));
      }
    });
    const results = await Promise.allSettled(calls);
    for (const r of results)
      if (r.status === "rejected")
        this.#logger.error({ err: r.reason, event: name }, `a listener of ${name} failed`);
  }
}
