// The one place a provider is chosen.
import type { Config } from "../config/index.js";
import { WarrenError } from "../errors.js";
import type { BoxExec } from "../machines/exec-port.js";
import type { BoxHandle, BoxProvider } from "./types.js";

export interface ProviderPaths {
  stateRoot: string;
  runRoot: string;
}

export function createProvider(config: Pick<Config, "WARREN_PROVIDER">, _paths: ProviderPaths): BoxProvider {
  const unavailable = async (): Promise<never> => {
    throw new WarrenError("box.unavailable", `the ${config.WARREN_PROVIDER} provider is not available yet`);
  };
  return {
    name: config.WARREN_PROVIDER,
    create: unavailable,
    start: unavailable,
    stop: async () => {},
    inspect: async () => null,
    list: async () => [],
    remove: async () => {},
  };
}

export function connectBoxd(_box: BoxHandle): BoxExec {
  throw new WarrenError("box.unavailable", "boxd is not available yet");
}
