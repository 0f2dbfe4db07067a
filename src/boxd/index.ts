export { BoxdClient } from "./client.js";
export type { ExecRequest, ExecOptions, ExecOutcome } from "./client.js";
export type { BridgeOffer, CallAnswer, CallsChannel } from "./channels.js";
export type { PtyOptions, PtyStream } from "./pty.js";
export type { CallMessage, ExecResult, ExecTrace, PingResult, PtySignal, PtySpec } from "./protocol.js";
export { ProtocolError } from "./protocol.js";
export { parseAgentCall } from "./validate.js";
export type { BoxdEndpoint } from "./endpoint.js";
