// The runtime: starts, adopts, idles and reaches machines' boxes. Services and routes use
// this surface; the provider and boxd stay behind it.
export { MachineRuntime } from "./runtime.js";
export { connectBoxd } from "./connect.js";
export { gpuDevices } from "../boxes/index.js";
export type { MachineControl } from "./control.js";
export type { BridgeHandler } from "./runtime.js";
export type { DiskFull } from "./health.js";
export type { BoxExecRequest, BoxExecResult, ExecIo, PtyStream } from "./exec-port.js";
export type { PtySignal } from "../boxd/index.js";
// agents' calls from inside a box: the runtime keeps the channel, services answer
export { parseAgentCall, ProtocolError } from "../boxd/index.js";
export type { CallAnswer, CallMessage } from "../boxd/index.js";
