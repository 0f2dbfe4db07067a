// The in-process event bus: typed topics, synchronous delivery, listener errors isolated.
export interface WarrenEvents {
  "machine.state": { machineId: string; state: "stopped" | "starting" | "running"; reason: string };
  "run.event": { runId: string; agentId: string; type: string; data: unknown };
  "run.ended": { runId: string; agentId: string; status: string };
  "agent.activity": { agentId: string; machineId: string; kind: "exec" | "terminal" | "generation" };
}

type Listener<T> = (payload: T) => void;

export class EventBus {
  readonly #listeners = new Map<keyof WarrenEvents, Set<Listener<never>>>();
  readonly #onListenerError: (err: unknown, topic: string) => void;

  constructor(onListenerError: (err: unknown, topic: string) => void = () => {}) {
    this.#onListenerError = onListenerError;
  }

  on<K extends keyof WarrenEvents>(topic: K, fn: Listener<WarrenEvents[K]>): () => void {
    let set = this.#listeners.get(topic);
    if (!set) this.#listeners.set(topic, (set = new Set()));
    set.add(fn);
    return () => set.delete(fn);
  }

  emit<K extends keyof WarrenEvents>(topic: K, payload: WarrenEvents[K]): void {
    const set = this.#listeners.get(topic);
    if (!set) return;
    for (const fn of [...set]) {
      try {
        (fn as Listener<WarrenEvents[K]>)(payload);
      } catch (err) {
        this.#onListenerError(err, topic);
      }
    }
  }
}
