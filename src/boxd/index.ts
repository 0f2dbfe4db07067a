export { BoxdClient } from "./client.js";
export type { ExecRequest, ExecOptions, ExecOutcome } from "./client.js";
export type { ExecResult, PingResult } from "./protocol.js";
export type { BoxdEndpoint } from "./endpoint.js";
