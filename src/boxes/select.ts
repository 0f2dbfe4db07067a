// The one place a provider is chosen: the only module outside src/boxes/local that knows
// the local provider exists.
import type { Config } from "../config/index.js";
import { statePaths } from "../config/paths.js";
import { loadKubeConfig } from "./kubernetes/api.js";
import { KubernetesProvider } from "./kubernetes/provider.js";
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
  config: Pick<Config, "WARREN_PROVIDER"> &
    Partial<
      Pick<
        Config,
        | "WARREN_OCI_SOCKET"
        | "WARREN_OCI_IMAGE"
        | "WARREN_OCI_RUNTIME"
        | "WARREN_K8S_KUBECONFIG"
        | "WARREN_K8S_NAMESPACE"
        | "WARREN_K8S_IMAGE"
        | "WARREN_K8S_STORAGE_CLASS"
        | "WARREN_K8S_SHARED_CLAIM"
        | "WARREN_K8S_WORKSPACES_CLAIM"
        | "WARREN_K8S_BOX_ROOT_ID"
      >
    >,
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
        runtime: config.WARREN_OCI_RUNTIME,
        logger: paths.logger,
        ...(paths.orphanAfterS === undefined ? {} : { orphanAfterS: paths.orphanAfterS }),
      });
    case "kubernetes":
      return new KubernetesProvider({
        kubeConfig: loadKubeConfig(config.WARREN_K8S_KUBECONFIG),
        namespace: config.WARREN_K8S_NAMESPACE ?? "warren-boxes",
        image: config.WARREN_K8S_IMAGE ?? "warren-box:latest",
        storageClass: config.WARREN_K8S_STORAGE_CLASS ?? "standard",
        sharedClaim: config.WARREN_K8S_SHARED_CLAIM ?? "warren-shared",
        workspacesClaim: config.WARREN_K8S_WORKSPACES_CLAIM ?? "warren-workspaces",
        boxRootId: config.WARREN_K8S_BOX_ROOT_ID ?? 0,
        stateRoot: paths.stateRoot,
        runRoot: paths.runRoot,
        workspacesRoot,
        logger: paths.logger,
        ...(paths.orphanAfterS === undefined ? {} : { orphanAfterS: paths.orphanAfterS }),
      });
  }
}
