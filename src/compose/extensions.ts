// Extensions (docs/extensions.md): modules named in WARREN_EXTENSIONS, loaded at boot before
// the identity mode and the box provider are chosen. Each exports `register(host)` and adds
// identity modes and box providers through the host: core has no switch to edit.
import { pathToFileURL } from "node:url";
import { boxProviderNames, registerBoxProvider, type BoxProviderDefinition } from "../boxes/index.js";
import type { Config } from "../config/index.js";
import { identityModeNames, registerIdentityMode, type IdentityModeDefinition } from "../http/identity.js";
// the built-in mode oidc (sign-in by an OpenID provider) registers itself
import "../signin/mode.js";

/** What an extension's `register` is given. */
export interface ExtensionHost {
  /** Adds an identity mode: AUTH_MODE=<its name> picks it. */
  identityMode(def: IdentityModeDefinition): void;
  /** Adds a box provider: WARREN_PROVIDER=<its name> picks it. */
  boxProvider(def: BoxProviderDefinition): void;
}

/** An extension module's shape. */
export interface Extension {
  register(host: ExtensionHost): void | Promise<void>;
}

export class ExtensionError extends Error {
  override name = "ExtensionError";
}

// an extension registers once per process, however many servers it starts (tests)
const loaded = new Map<string, Promise<void>>();

async function loadOne(spec: string): Promise<void> {
  let mod: Partial<Extension> & { default?: Partial<Extension> };
  try {
    mod = (await import(spec.startsWith("/") ? pathToFileURL(spec).href : spec)) as typeof mod;
  } catch (err) {
    throw new ExtensionError(`WARREN_EXTENSIONS: cannot load ${spec}: ${(err as Error).message}`);
  }
  const register = mod.register ?? mod.default?.register;
  if (typeof register !== "function")
    throw new ExtensionError(`WARREN_EXTENSIONS: ${spec} exports no register(host) function`);
  try {
    await register({
      identityMode: (def) => registerIdentityMode(def),
      boxProvider: (def) => registerBoxProvider(def),
    });
  } catch (err) {
    throw new ExtensionError(`WARREN_EXTENSIONS: ${spec} failed to register: ${(err as Error).message}`);
  }
}

/**
 * Loads WARREN_EXTENSIONS in order, then checks that AUTH_MODE and WARREN_PROVIDER name a
 * registered mode and provider; throws ExtensionError with the fix otherwise.
 */
export async function loadExtensions(
  config: Pick<Config, "WARREN_EXTENSIONS" | "AUTH_MODE" | "WARREN_PROVIDER">,
): Promise<void> {
  for (const spec of config.WARREN_EXTENSIONS) {
    let p = loaded.get(spec);
    if (p === undefined) {
      p = loadOne(spec);
      loaded.set(spec, p);
      p.catch(() => loaded.delete(spec));
    }
    await p;
  }
  if (!identityModeNames().includes(config.AUTH_MODE))
    throw new ExtensionError(
      `AUTH_MODE must be one of ${identityModeNames().join(", ")} (got ${JSON.stringify(config.AUTH_MODE)}; an extension's mode is known once WARREN_EXTENSIONS names the extension)`,
    );
  if (!boxProviderNames().includes(config.WARREN_PROVIDER))
    throw new ExtensionError(
      `WARREN_PROVIDER must be one of ${boxProviderNames().join(", ")} (got ${JSON.stringify(config.WARREN_PROVIDER)}; an extension's provider is known once WARREN_EXTENSIONS names the extension)`,
    );
}
