// The one place a provider is chosen: the only module outside src/boxes/local that knows
// the local provider exists.
import type { Config } from "../config/index.js";
import { statePaths } from "../config/paths.js";
import { WarrenError } from "../errors.js";
import { FsHomeLayout } from "./local/layout.js";
import { LocalProvider, type LoggerLike } from "./local/provider.js";
import { OciProvider } from "./oci/provider.js";
import type { BoxProvider } from "./types.js";

export interface ProviderPaths {
  stateRoot: string;
  runRoot: string;
  /** Machines' folders and agents' homes (default STATE_ROOT/workspaces). */
  workspacesRoot?: string;
  logger?: LoggerLike;
  /** boxd stops its box after this many seconds without the server (0: never). */
  orphanAfterS?: number;
}

export function createProvider(
  config: Pick<Config, "WARREN_PROVIDER"> & Partial<Pick<Config, "WARREN_OCI_SOCKET" | "WARREN_OCI_IMAGE">>,
  paths: ProviderPaths,
): BoxProvider {
  const workspacesRoot = paths.workspacesRoot ?? statePaths(paths.stateRoot).workspaces;
  switch (config.WARREN_PROVIDER) {
    case "local":
      return new LocalProvider({
        stateRoot: paths.stateRoot,
        runRoot: paths.runRoot,
        workspacesRoot,
        logger: paths.logger,
        ...(paths.orphanAfterS === undefined ? {} : { orphanAfterS: paths.orphanAfterS }),
      });
    case "oci":
      return new OciProvider({
        stateRoot: paths.stateRoot,
        runRoot: paths.runRoot,
        workspacesRoot,
        socket: config.WARREN_OCI_SOCKET ?? "/run/warren-oci/podman.sock",
        image: config.WARREN_OCI_IMAGE ?? "warren-box:latest",
        logger: paths.logger,
        ...(paths.orphanAfterS === undefined ? {} : { orphanAfterS: paths.orphanAfterS }),
      });
    case "kubernetes": {
      const unavailable = (): never => {
        throw new WarrenError(
          "box.unavailable",
          `the ${config.WARREN_PROVIDER} provider is not available yet; use WARREN_PROVIDER=local or oci`,
        );
      };
      return {
        name: config.WARREN_PROVIDER,
        // homes stay in this host's tree until these providers exist
        homes: new FsHomeLayout(workspacesRoot),
        create: async () => unavailable(),
        start: async () => unavailable(),
        stop: async () => {},
        pause: async () => unavailable(),
        resume: async () => unavailable(),
        inspect: async () => null,
        list: async () => [],
        remove: async () => {},
        refreshUsers: async () => {},
        runFilesDir: unavailable,
        usage: async () => null,
        killCommand: async () => 0,
        hostProbes: () => ({}),
      };
    }
  }
}
