// What the runtime needs of a running box: boxd's client surface (every provider runs the
// same boxd).
import type { Duplex } from "node:stream";
import type {
  BridgeOffer,
  CallAnswer,
  CallMessage,
  CallsChannel,
  ExecOptions,
  ExecRequest,
  ExecResult,
  PingResult,
  PtyOptions,
  PtySpec,
  PtyStream,
} from "../boxd/index.js";

export type BoxExecRequest = ExecRequest;
export type BoxExecResult = ExecResult;
export type ExecIo = Pick<ExecOptions, "onStdout" | "onStderr" | "signal" | "onStart">;
export type BoxPtyRequest = PtySpec;
export type { PtyOptions, PtyStream };

export interface BoxExec {
  ping(): Promise<PingResult>;
  exec(req: BoxExecRequest, io: ExecIo): Promise<BoxExecResult>;
  forward(port: number): Promise<Duplex>;
  /** A terminal: a shell in a pseudo-terminal as the agent (boxd's pty op). */
  pty(req: BoxPtyRequest, opts: PtyOptions): Promise<PtyStream>;
  /** The standing channel for agents' calls from inside the box (warren-secret). */
  calls(onCall: (call: CallMessage) => Promise<CallAnswer>): Promise<CallsChannel>;
  /** The standing channel for bridged connections (BOX_BRIDGES); claim each with bridge(id). */
  bridges(onBridge: (offer: BridgeOffer) => void): Promise<CallsChannel>;
  bridge(id: number): Promise<Duplex>;
  close(): void;
}
