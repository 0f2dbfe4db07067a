// The one place a provider is chosen: the only module outside src/boxes/local that knows
// the local provider exists. A registry, not a switch: the three built-in providers
// register here, an extension (docs/extensions.md) registers its own through the host
// src/compose/extensions.ts hands it.
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

type ProviderConfig = Pick<Config, "WARREN_PROVIDER"> &
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
      | "extraEnv"
    >
  >;

/** What a provider is made with. */
export interface ProviderContext {
  config: ProviderConfig;
  /** The server's environment the schema does not know: a provider's own variables. */
  env: Readonly<Record<string, string | undefined>>;
  stateRoot: string;
  runRoot: string;
  workspacesRoot: string;
  logger?: LoggerLike | undefined;
  orphanAfterS?: number | undefined;
  /** Makes another registered provider on the same paths (a provider that wraps one). */
  provider(name: string): BoxProvider;
}

/** A box provider as registered: WARREN_PROVIDER=<name> picks it. */
export interface BoxProviderDefinition {
  /** Lower-case letters, digits and -. */
  name: string;
  /** One line for the docs and for the error naming the known providers. */
  description: string;
  create(ctx: ProviderContext): BoxProvider;
}

const NAME = /^[a-z][a-z0-9-]{0,62}$/;
const providers = new Map<string, BoxProviderDefinition>();

/** Adds a provider; a name already taken is refused (a built-in provider is never replaced). */
export function registerBoxProvider(def: BoxProviderDefinition): void {
  if (!NAME.test(def.name))
    throw new Error(
      `a box provider's name is lower-case letters, digits and - (got ${JSON.stringify(def.name)})`,
    );
  if (typeof def.create !== "function")
    throw new Error(`box provider ${def.name}: create must be a function`);
  const had = providers.get(def.name);
  if (had !== undefined && had !== def) throw new Error(`box provider ${def.name} is already registered`);
  providers.set(def.name, def);
}

/** The registered providers' names, built-in first. */
export function boxProviderNames(): string[] {
  return [...providers.keys()];
}

export class UnknownProviderError extends Error {
  override name = "UnknownProviderError";
}

export function createProvider(config: ProviderConfig, paths: ProviderPaths): BoxProvider {
  const workspacesRoot = paths.workspacesRoot ?? statePaths(paths.stateRoot).workspaces;
  const make = (name: string): BoxProvider => {
    const def = providers.get(name);
    if (def === undefined)
      throw new UnknownProviderError(
        `WARREN_PROVIDER must be one of ${boxProviderNames().join(", ")} (got ${JSON.stringify(name)}; a provider of an extension is known once WARREN_EXTENSIONS names it)`,
      );
    return def.create({
      config,
      env: config.extraEnv ?? {},
      stateRoot: paths.stateRoot,
      runRoot: paths.runRoot,
      workspacesRoot,
      logger: paths.logger,
      orphanAfterS: paths.orphanAfterS,
      provider: make,
    });
  };
  return make(config.WARREN_PROVIDER);
}

const orphan = (ctx: ProviderContext) =>
  ctx.orphanAfterS === undefined ? {} : { orphanAfterS: ctx.orphanAfterS };

registerBoxProvider({
  name: "local",
  description: "boxes on this host with bubblewrap",
  create: (ctx) =>
    new LocalProvider({
      stateRoot: ctx.stateRoot,
      runRoot: ctx.runRoot,
      workspacesRoot: ctx.workspacesRoot,
      logger: ctx.logger,
      ...orphan(ctx),
    }),
});

registerBoxProvider({
  name: "oci",
  description: "boxes as containers of a Podman or Docker engine (WARREN_OCI_SOCKET)",
  create: ({ config, ...ctx }) =>
    new OciProvider({
      stateRoot: ctx.stateRoot,
      runRoot: ctx.runRoot,
      workspacesRoot: ctx.workspacesRoot,
      socket: config.WARREN_OCI_SOCKET ?? "/run/warren-oci/podman.sock",
      image: config.WARREN_OCI_IMAGE ?? "warren-box:latest",
      runtime: config.WARREN_OCI_RUNTIME,
      // the server's image sets it (deploy/image/entrypoint.sh): boxd on the engine's host
      nativeDir: ctx.env.WARREN_OCI_NATIVE_DIR || undefined,
      logger: ctx.logger,
      ...orphan({ ...ctx, config }),
    }),
});

registerBoxProvider({
  name: "kubernetes",
  description: "boxes as Pods of a Kubernetes cluster (WARREN_K8S_*)",
  create: ({ config, ...ctx }) =>
    new KubernetesProvider({
      kubeConfig: loadKubeConfig(config.WARREN_K8S_KUBECONFIG),
      namespace: config.WARREN_K8S_NAMESPACE ?? "warren-boxes",
      image: config.WARREN_K8S_IMAGE ?? "warren-box:latest",
      storageClass: config.WARREN_K8S_STORAGE_CLASS ?? "standard",
      sharedClaim: config.WARREN_K8S_SHARED_CLAIM ?? "warren-shared",
      workspacesClaim: config.WARREN_K8S_WORKSPACES_CLAIM ?? "warren-workspaces",
      boxRootId: config.WARREN_K8S_BOX_ROOT_ID ?? 0,
      stateRoot: ctx.stateRoot,
      runRoot: ctx.runRoot,
      workspacesRoot: ctx.workspacesRoot,
      logger: ctx.logger,
      ...orphan({ ...ctx, config }),
    }),
});
