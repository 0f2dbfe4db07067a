// Identity modes (AUTH_MODE): who is asking, from a request. A registry, not a switch: the
// two built-in modes register here, and an extension (docs/extensions.md) registers its own
// through the host src/compose/extensions.ts hands it, with no change to this file.
import type { IncomingHttpHeaders } from "node:http";
import { OPERATOR_EMAIL } from "../access/index.js";
import type { Config } from "../config/index.js";
import { WarrenError } from "../errors.js";
import { inRanges } from "../net/own.js";

/** What a mode sees of a request (the same for /api/, /metrics, /mcp and the WebSockets). */
export interface IdentityRequest {
  method: string;
  /** The path and query. */
  url: string;
  /** Lower-case names, as Node's http module gives them. */
  headers: IncomingHttpHeaders;
  /** The peer's address (the proxy's, behind one). */
  remoteAddress: string | undefined;
}

/** A mode made for one server. */
export interface IdentityMode {
  /**
   * The email of who is asking. To refuse, call `refuse` of the context (401 auth.required
   * with the message); anything else thrown is a 500.
   */
  identify(req: IdentityRequest): string | Promise<string>;
}

/** What a mode is made with. */
export interface IdentityModeContext {
  /** The server's environment: a mode reads its own variables from it (e.g. its shared key). */
  env: Readonly<Record<string, string | undefined>>;
  config: Pick<Config, "TRUSTED_HEADER" | "WARREN_TRUSTED_PROXIES" | "PUBLIC_BASE_URL">;
  /** Refuses the request: 401 `auth.required` with `message` (never put a secret in it). */
  refuse: (message: string) => never;
}

/** An identity mode as registered: AUTH_MODE=<name> picks it. */
export interface IdentityModeDefinition {
  /** Lower-case letters, digits and -. */
  name: string;
  /** One line for the docs and for the error naming the known modes. */
  description: string;
  /** Makes the mode for one server; throwing here refuses the start with the error's message. */
  create(ctx: IdentityModeContext): IdentityMode | Promise<IdentityMode>;
}

const NAME = /^[a-z][a-z0-9-]{0,62}$/;
const modes = new Map<string, IdentityModeDefinition>();

/** Adds a mode; a name already taken is refused (a built-in mode is never replaced). */
export function registerIdentityMode(def: IdentityModeDefinition): void {
  if (!NAME.test(def.name))
    throw new Error(
      `an identity mode's name is lower-case letters, digits and - (got ${JSON.stringify(def.name)})`,
    );
  if (typeof def.create !== "function")
    throw new Error(`identity mode ${def.name}: create must be a function`);
  const had = modes.get(def.name);
  if (had !== undefined && had !== def) throw new Error(`identity mode ${def.name} is already registered`);
  modes.set(def.name, def);
}

/** The registered modes' names, built-in first. */
export function identityModeNames(): string[] {
  return [...modes.keys()];
}

/** The mode AUTH_MODE names, made for this server; an unknown name is an Error naming the known ones. */
export async function makeIdentityMode(
  name: string,
  ctx: Omit<IdentityModeContext, "refuse">,
): Promise<IdentityMode> {
  const def = modes.get(name);
  if (def === undefined)
    throw new UnknownIdentityModeError(
      `AUTH_MODE must be one of ${identityModeNames().join(", ")} (got ${JSON.stringify(name)}; a mode of an extension is known once WARREN_EXTENSIONS names it)`,
    );
  return def.create({ ...ctx, refuse });
}

export class UnknownIdentityModeError extends Error {
  override name = "UnknownIdentityModeError";
}

function refuse(message: string): never {
  throw new WarrenError("auth.required", message);
}

registerIdentityMode({
  name: "compat-cookie",
  description: "whoever reaches the port is the operator (a single-user machine)",
  create: () => ({ identify: () => OPERATOR_EMAIL }),
});

registerIdentityMode({
  name: "trusted-header",
  description: "the email in TRUSTED_HEADER, believed only from WARREN_TRUSTED_PROXIES",
  create: ({ config, refuse }) => ({
    identify(req) {
      // the identity header is believed only from the authenticating proxy's addresses
      if (!inRanges(req.remoteAddress, config.WARREN_TRUSTED_PROXIES))
        refuse(
          `sign in through the proxy: the ${config.TRUSTED_HEADER} header is believed only from WARREN_TRUSTED_PROXIES`,
        );
      const raw = req.headers[config.TRUSTED_HEADER];
      const email = Array.isArray(raw) ? raw[0] : raw;
      return email || refuse(`sign in: the ${config.TRUSTED_HEADER} header is missing`);
    },
  }),
});
