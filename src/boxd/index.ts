export { BoxdClient } from "./client.js";
export type { ExecRequest, ExecOptions, ExecOutcome, BoxdClientOptions } from "./client.js";
export type { ExecResult, ExecUsage, ExecLimits, PingResult } from "./protocol.js";
export type { BoxdEndpoint } from "./endpoint.js";
