// A server's sign-in parts: its sessions and personal tokens (every mode has the routes), and
// in AUTH_MODE=oidc the OpenID client, bound to the configuration the identity mode is made with.
import type { Config } from "../config/index.js";
import type { Db } from "../store/index.js";
import { bindSignIn } from "./mode.js";
import { OidcSignIn, oidcSettingsOf } from "./oidc.js";
import { Sessions } from "./sessions.js";

export function signInOf(
  config: Pick<
    Config,
    "AUTH_MODE" | "extraEnv" | "WARREN_OIDC_ISSUER" | "WARREN_OIDC_CLIENT_ID" | "WARREN_OIDC_CLIENT_SECRET"
  >,
  db: Db,
  sealer: ConstructorParameters<typeof OidcSignIn>[2],
): { sessions: Sessions; signin: OidcSignIn | undefined } {
  const rotate = Number(config.extraEnv?.WARREN_SESSION_ROTATE_S);
  const sessions = new Sessions(db, Number.isFinite(rotate) && rotate > 0 ? rotate * 1000 : undefined);
  if (config.AUTH_MODE !== "oidc") return { sessions, signin: undefined };
  const signin = new OidcSignIn(oidcSettingsOf(config), sessions, sealer);
  bindSignIn(config, signin);
  return { sessions, signin };
}
