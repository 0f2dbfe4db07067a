// The standing channels a running box keeps to the server: agents' calls and bridges.
import type net from "node:net";
import { unavailable, type Connect } from "./connection.js";
import {
  FrameDecoder,
  FrameKind,
  PROTOCOL_VERSION,
  ProtocolError,
  encodeControl,
  type BridgeMessage,
  type CallMessage,
  type CallReply,
  type ServerMessage,
} from "./protocol.js";
import { parseServerMessage } from "./validate.js";

/**
 * The standing channel for agents' calls: `onCall` answers each request an agent's
 * command makes on boxd's calls socket (its uid is who calls). Resolves once boxd has
 * attached the channel; `closed` settles when it ends (the box stopped, or close()).
 */
export function openCalls(
  connect: Connect,
  onCall: (call: CallMessage) => Promise<CallAnswer>,
  timeoutMs = 5000,
): Promise<CallsChannel> {
  return standing(connect, "calls", "call", timeoutMs, (m, sock) => {
    const send = (answer: CallAnswer): void => {
      if (sock.destroyed) return;
      let frame: Buffer;
      try {
        frame = encodeControl({ type: "reply", id: m.id, ...answer });
      } catch {
        frame = encodeControl({
          type: "reply",
          id: m.id,
          exit: 69,
          stderr: "warren-secret: internal: the answer is larger than a frame\n",
        });
      }
      sock.write(frame);
    };
    void onCall(m).then(send, () =>
      send({ exit: 69, stderr: "warren-secret: internal: the server could not answer; try again\n" }),
    );
  });
}

/**
 * The standing channel for bridges: `onBridge` hears of each connection accepted on a
 * bridge's port in the box (claim it with bridge(id)). Resolves once boxd has attached
 * the channel; `closed` settles when it ends.
 */
export function openBridges(
  connect: Connect,
  onBridge: (offer: BridgeOffer) => void,
  timeoutMs = 5000,
): Promise<CallsChannel> {
  return standing(connect, "bridges", "bridge", timeoutMs, (m) =>
    onBridge({ id: m.id, name: m.name, uid: m.uid }),
  );
}

/**
 * A standing channel of control frames: opened with `op`, ready when boxd answers with a
 * message of the same type, then each message of type `each` goes to `onMessage`; any
 * other message, or a bad frame, ends it.
 */
async function standing<T extends "call" | "bridge">(
  connect: Connect,
  op: "calls" | "bridges",
  each: T,
  timeoutMs: number,
  onMessage: (m: Extract<ServerMessage, { type: T }>, sock: net.Socket) => void,
): Promise<CallsChannel> {
  const sock = await connect({ v: PROTOCOL_VERSION, op });
  let ended: () => void = () => {};
  const closed = new Promise<void>((resolve) => (ended = resolve));
  sock.on("close", () => ended());
  sock.on("error", () => sock.destroy());
  const channel: CallsChannel = { close: () => sock.destroy(), closed };
  return new Promise((resolve, reject) => {
    const decoder = new FrameDecoder();
    let ready = false;
    const timer = setTimeout(() => {
      sock.destroy();
      reject(unavailable(`boxd did not open the ${op} channel within ${timeoutMs} ms`));
    }, timeoutMs);
    sock.on("close", () => {
      clearTimeout(timer);
      if (!ready) reject(unavailable(`boxd closed the ${op} channel as it opened`));
    });
    sock.on("data", (chunk: Buffer) => {
      let messages: ServerMessage[];
      try {
        messages = decoder.push(chunk).map((f) => {
          if (f.kind !== FrameKind.control) throw new ProtocolError(`a ${op} channel carries control frames`);
          return parseServerMessage(f.payload);
        });
      } catch (err) {
        sock.destroy();
        if (!ready) reject(unavailable(`boxd sent a bad frame: ${(err as Error).message}`, err));
        return;
      }
      for (const m of messages) {
        if (m.type === op && !ready) {
          ready = true;
          clearTimeout(timer);
          resolve(channel);
        } else if (m.type === each && ready) {
          onMessage(m as Extract<ServerMessage, { type: T }>, sock);
        } else {
          sock.destroy();
          if (!ready) reject(unavailable(`boxd answered the ${op} channel with ${m.type}`));
          return;
        }
      }
    });
  });
}

/** The server's answer to one call (see CallReply). */
export type BridgeOffer = Omit<BridgeMessage, "type">;

export type CallAnswer = Omit<CallReply, "type" | "id">;

export interface CallsChannel {
  close(): void;
  /** Settles when the channel ends. */
  closed: Promise<void>;
}
