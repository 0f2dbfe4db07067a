// The identity mode `oidc` (src/http/identity.ts's registry): a person signed in through the
// OpenID provider (a session cookie) or an API client with a personal token. The server's
// sign-in (OidcSignIn, made with its store in compose) is found by the configuration the mode
// is made with.
import { registerIdentityMode } from "../http/identity.js";
import type { OidcSignIn } from "./oidc.js";

const servers = new WeakMap<object, OidcSignIn>();

/** Binds a server's sign-in to its configuration, before its app is built. */
export function bindSignIn(config: object, signin: OidcSignIn): void {
  servers.set(config, signin);
}

registerIdentityMode({
  name: "oidc",
  description:
    "people sign in with an OpenID provider (WARREN_OIDC_ISSUER, _CLIENT_ID, _CLIENT_SECRET); API clients send a personal token",
  create: ({ config, refuse }) => {
    const signin = servers.get(config);
    if (!signin) throw new Error("AUTH_MODE=oidc: the server's sign-in was not made");
    return { identify: (req) => signin.identify(req, refuse) };
  },
});
