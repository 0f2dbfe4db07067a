export { LocalProvider, boxSpecSchema } from "./local/provider.js";
export { BOX_PATHS } from "./paths.js";
export { prepareMachineDir, prepareHome, agentGroups } from "./local/homes.js";
export { SHARED_GID } from "./local/users.js";
export type { LocalProviderOptions, LoggerLike } from "./local/provider.js";
export type { Trust } from "./local/homes.js";
export type { BoxUser } from "./local/users.js";
export type * from "./types.js";
