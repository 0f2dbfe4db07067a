// The standing channels each running box keeps to the server: agents' calls (warren-secret)
// and the bridges' connections, opened with the box and opened again when they end.
import type { Duplex } from "node:stream";
import type { BridgeOffer, CallAnswer, CallMessage, CallsChannel } from "../boxd/index.js";
import type { Logger } from "../observability/log.js";
import type { Live, LiveBoxes } from "./live.js";

/** Answers an agent's call from inside its machine's box. */
export type CallHandler = (machineId: string, call: CallMessage) => Promise<CallAnswer>;

/**
 * Takes a connection accepted on a bridge's port in a machine's box: `claim` opens it as a
 * byte stream. A connection not claimed within 10 s is closed by boxd.
 */
export type BridgeHandler = (machineId: string, offer: BridgeOffer, claim: () => Promise<Duplex>) => void;

type Standing = "calls" | "bridges";

/** How long to wait before opening a machine's standing channel again after it ended. */
const CALLS_RETRY_MS = 1000;

export class StandingChannels {
  constructor(
    private readonly o: {
      live: LiveBoxes;
      logger: Logger;
      onCall?: CallHandler | undefined;
      onBridge?: BridgeHandler | undefined;
    },
  ) {}

  /** Opens the box's standing channels and keeps them open; settles after the first attempts. */
  async open(machineId: string, live: Live): Promise<void> {
    await Promise.all([this.#keep(machineId, live, "calls"), this.#keep(machineId, live, "bridges")]);
  }

  #opener(machineId: string, live: Live, kind: Standing): (() => Promise<CallsChannel>) | undefined {
    if (kind === "calls") {
      const onCall = this.o.onCall;
      return onCall && (() => live.boxd.calls((call) => onCall(machineId, call)));
    }
    const onBridge = this.o.onBridge;
    return (
      onBridge &&
      (() =>
        live.boxd.bridges((offer) => {
          live.lastActivity = Date.now();
          onBridge(machineId, offer, () => live.boxd.bridge(offer.id));
        }))
    );
  }

  /**
   * Keeps one of the box's standing channels open while the box is live: opened now,
   * opened again when it ends (boxd restarted, a dropped connection) until the box stops.
   */
  #keep(machineId: string, live: Live, kind: Standing): Promise<void> {
    const openChannel = this.#opener(machineId, live, kind);
    if (!openChannel) return Promise.resolve();
    const current = () => this.o.live.get(machineId) === live;
    let opened: () => void = () => {};
    // settles after the first attempt, so that a command started next finds the channel
    const first = new Promise<void>((resolve) => (opened = resolve));
    const open = async (): Promise<void> => {
      while (current()) {
        try {
          const ch = await openChannel();
          if (!current()) {
            ch.close();
            break;
          }
          live[kind] = ch;
          opened();
          await ch.closed;
        } catch (err) {
          if (current()) this.o.logger.warn({ err, machineId }, `the box's ${kind} channel did not open`);
        }
        opened();
        if (current()) await new Promise((r) => setTimeout(r, CALLS_RETRY_MS).unref());
      }
      opened();
    };
    live[kind] = { close: () => {}, closed: Promise.resolve() };
    void open();
    return first;
  }
}
