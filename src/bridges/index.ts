// Bridges: connections that agents' commands open to a fixed port in their box
// (BOX_BRIDGES), carried by boxd to the server. Each one arrives here with the uid that
// owns the connecting socket as boxd saw it; the agent is the machine's agent in that uid's
// slot, never anything the command sends. A handler is registered per bridge name.
import type { Duplex } from "node:stream";
import type { AgentAtUid } from "../machines/placement.js";
import type { BridgeName } from "../boxes/index.js";
import type { Logger } from "../observability/log.js";
import type { BridgeHandler } from "../runtime/index.js";

/** Who opened a bridged connection. */
export interface BridgeWho {
  machineId: string;
  agentId: string;
  uid: number;
}

/** Takes one bridged connection; it owns the stream from then on (and ends it). */
export type BridgeStreamHandler = (stream: Duplex, who: BridgeWho) => void;

export class Bridges {
  readonly #handlers = new Map<string, BridgeStreamHandler>();

  constructor(
    /** Who runs as a uid of a machine (machines/uids.ts). */
    private readonly agentAt: AgentAtUid,
    private readonly logger: Logger,
  ) {}

  /** The handler of a bridge's connections (one per name; a later one replaces it). */
  register(name: BridgeName, handler: BridgeStreamHandler): void {
    this.#handlers.set(name, handler);
  }

  /** What the runtime calls for each connection accepted on a bridge (the runtime's onBridge). */
  readonly accept: BridgeHandler = (machineId, offer, claim) => {
    void this.#accept(machineId, offer.name, offer.uid, claim);
  };

  async #accept(machineId: string, name: string, uid: number, claim: () => Promise<Duplex>): Promise<void> {
    let stream: Duplex;
    try {
      stream = await claim();
    } catch (err) {
      this.logger.warn({ err, machineId, bridge: name }, "a bridged connection could not be claimed");
      return;
    }
    stream.on("error", () => stream.destroy());
    try {
      const handler = this.#handlers.get(name);
      const agentId = handler ? (await this.agentAt(machineId, uid))?.id : undefined;
      if (!handler || !agentId) {
        // nobody to take it, or not an agent of this machine: closed unanswered
        stream.destroy();
        return;
      }
      handler(stream, { machineId, agentId, uid });
    } catch (err) {
      this.logger.error({ err, machineId, bridge: name }, "a bridged connection failed");
      stream.destroy();
    }
  }
}
