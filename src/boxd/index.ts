export { BoxdClient } from "./client.js";
export type {
  BridgeOffer,
  CallAnswer,
  CallsChannel,
  ExecRequest,
  ExecOptions,
  ExecOutcome,
  PtyOptions,
  PtyStream,
} from "./client.js";
export type { CallMessage, ExecResult, PingResult, PtySignal, PtySpec } from "./protocol.js";
export { parseAgentCall, ProtocolError } from "./protocol.js";
export type { BoxdEndpoint } from "./endpoint.js";
