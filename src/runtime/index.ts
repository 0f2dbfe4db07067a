// The runtime: starts, adopts, idles and reaches machines' boxes. Services and routes use
// this surface; the provider and boxd stay behind it.
export { MachineRuntime } from "./runtime.js";
export { connectBoxd } from "./connect.js";
export type { MachineControl } from "./control.js";
export type { BoxExecRequest, BoxExecResult, ExecIo } from "./exec-port.js";
