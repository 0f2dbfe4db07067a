// The one place a provider is chosen, and the one place the server gets a boxd client.
import path from "node:path";
import { BoxdClient } from "../boxd/client.js";
import type { Config } from "../config/index.js";
import { WarrenError } from "../errors.js";
import type { BoxExec } from "../machines/exec-port.js";
import { LocalProvider, refreshBoxUsers, type LoggerLike } from "./local/provider.js";
import type { BoxHandle, BoxProvider } from "./types.js";

export interface ProviderPaths {
  stateRoot: string;
  runRoot: string;
  logger?: LoggerLike;
}

export function createProvider(config: Pick<Config, "WARREN_PROVIDER">, paths: ProviderPaths): BoxProvider {
  switch (config.WARREN_PROVIDER) {
    case "local":
      return new LocalProvider({ stateRoot: paths.stateRoot, runRoot: paths.runRoot, logger: paths.logger });
    case "oci":
    case "kubernetes": {
      const unavailable = async (): Promise<never> => {
        throw new WarrenError(
          "box.unavailable",
          `the ${config.WARREN_PROVIDER} provider is not available yet; use WARREN_PROVIDER=local`,
        );
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
  }
}

/** boxd of a running box, in the runtime's terms (src/machines/exec-port.ts). */
export function connectBoxd(box: BoxHandle): BoxExec {
  const client = new BoxdClient(box.endpoint);
  const endpoint = box.endpoint;
  return {
    ping: () => client.ping(),
    exec: (req, io) => client.exec(req, io),
    forward: (port) => client.forward(port),
    // Local boxes: the socket is STATE_ROOT/run/boxes/<id>/boxd/boxd.sock; users files beside.
    refreshUsers:
      endpoint.kind === "unix"
        ? async () => {
            refreshBoxUsers(path.dirname(path.dirname(endpoint.path)));
          }
        : undefined,
    close: () => {},
  };
}
