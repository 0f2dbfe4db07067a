// The provider seam's public surface: the interface, where things are in a box, and the
// factory. What one provider does on the host (uids, modes, folders) stays behind it.
export {
  boxProviderNames,
  createProvider,
  registerBoxProvider,
  type BoxProviderDefinition,
} from "./select.js";
export { ociRuntimeReport } from "./oci/report.js";
export { BOX_BRIDGES, BOX_PATHS, type BridgeName } from "./paths.js";
export { gpuDevices } from "./kit/devices.js";
export { appendOwned, writeOwned } from "./owned-files.js";
export type * from "./types.js";
