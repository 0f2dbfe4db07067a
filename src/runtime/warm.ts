// Warm boxes: a pool of started, unassigned boxes on this host (BOX_WARM_POOL, default 0)
// that a machine's first start claims (its folder, users, labels and limits then become
// the machine's: the provider's claim) instead of a cold start. Refilled in the background
// after each claim, once the claimed box's first command had the CPUs to itself (a cold
// start beside it made the claim slower on a small host); a restarted server reaps the
// pool's boxes by their label and fills anew.
import type { BoxHandle, BoxProvider, BoxSpec } from "../boxes/index.js";
import { newId } from "../ids.js";
import type { Logger } from "../observability/log.js";

/** The label of a warm box (it belongs to no machine yet). */
export const WARM_LABEL = "warren.warm";

export interface WarmOptions {
  provider: BoxProvider;
  logger: Logger;
  size: number;
  /** The spec of a warm box of this id (a machine's spec with the pool's defaults). */
  specFor: (id: string) => BoxSpec;
}

/** A claim's box answers its first command in a few ms; the refill's cold start waits past it. */
const REFILL_DELAY_MS = 250;

export class WarmPool {
  readonly #ready: string[] = [];
  #filling: Promise<void> | null = null;
  #closed = false;
  #refill: NodeJS.Timeout | undefined;

  constructor(private readonly o: WarmOptions) {}

  /** How many warm boxes are ready now. */
  get ready(): number {
    return this.#ready.length;
  }

  /** Starts boxes until the pool is full; settles when it is (errors are logged). */
  fill(): Promise<void> {
    if (this.o.size <= 0 || !this.o.provider.claim || this.#closed) return Promise.resolve();
    this.#filling ??= (async () => {
      try {
        while (!this.#closed && this.#ready.length < this.o.size) {
          const id = newId("mch");
          await this.o.provider.homes.prepareMachine(id);
          await this.o.provider.create(this.o.specFor(id));
          await this.o.provider.start(id);
          if (this.#closed) await this.#discard(id);
          else this.#ready.push(id);
        }
      } catch (err) {
        this.o.logger.error({ err }, "a warm box could not be started");
      } finally {
        this.#filling = null;
      }
    })();
    return this.#filling;
  }

  /** A ready warm box given to the machine of `spec`, or null (then it starts cold). */
  async claim(spec: BoxSpec): Promise<BoxHandle | null> {
    const provider = this.o.provider;
    const id = this.#ready.shift();
    if (id === undefined || !provider.claim) return null;
    try {
      return await provider.claim(id, spec);
    } catch (err) {
      this.o.logger.warn({ err, machineId: spec.id }, "a warm box could not be claimed; starting cold");
      await this.#discard(id);
      return null;
    } finally {
      this.#refillLater();
    }
  }

  #refillLater(): void {
    if (this.#refill || this.#closed) return;
    this.#refill = setTimeout(() => {
      this.#refill = undefined;
      void this.fill();
    }, REFILL_DELAY_MS);
    this.#refill.unref();
  }

  /** Stops filling and removes the ready boxes. */
  async close(): Promise<void> {
    this.#closed = true;
    clearTimeout(this.#refill);
    await this.#filling;
    for (const id of this.#ready.splice(0)) await this.#discard(id);
  }

  async #discard(id: string): Promise<void> {
    await this.o.provider.remove(id).catch(() => undefined);
    await this.o.provider.homes.removeMachine(id).catch(() => undefined);
  }
}
