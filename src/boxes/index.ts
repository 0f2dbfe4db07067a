// The provider seam's public surface: the interface, where things are in a box, and the
// factory. What one provider does on the host (uids, modes, folders) stays behind it.
export { createProvider } from "./select.js";
export { BOX_PATHS } from "./paths.js";
export type * from "./types.js";
