// Sign-in by OpenID Connect (AUTH_MODE=oidc, WARREN_OIDC_ISSUER / _CLIENT_ID / _CLIENT_SECRET):
// /auth/login sends the browser to the provider (authorization code with PKCE, state and
// nonce, held in a sealed HttpOnly cookie of ten minutes), /auth/callback checks the answer
// and the ID token through openid-client, takes the verified email (from the ID token or the
// userinfo endpoint; an unverified one is refused) and opens a session (sessions.ts).
// API clients send a personal token instead: `Authorization: Bearer wpt_...`.
import * as oidc from "openid-client";
import type { Config } from "../config/index.js";
import { WarrenError } from "../errors.js";
import { cookieOf, Sessions, SESSION_COOKIE } from "./sessions.js";

interface OidcSettings {
  issuer: string;
  clientId: string;
  clientSecret: string | undefined;
}

interface Sealer {
  seal(id: string, v: Buffer): string;
  open(id: string, sealed: string): Buffer;
}

/** What a mode sees of a request. */
interface Asking {
  url: string;
  headers: Record<string, string | string[] | undefined>;
}

const PENDING_COOKIE = "warren_signin";
const PENDING_MS = 10 * 60_000;
const SEAL_ID = "signin.pending";

interface Pending {
  state: string;
  nonce: string;
  verifier: string;
  returnTo: string;
  at: number;
}

/** The settings of the configuration (its schema checked them at start), or an Error naming what is missing. */
export function oidcSettingsOf(
  config: Pick<Config, "WARREN_OIDC_ISSUER" | "WARREN_OIDC_CLIENT_ID" | "WARREN_OIDC_CLIENT_SECRET">,
): OidcSettings {
  const issuer = config.WARREN_OIDC_ISSUER;
  const clientId = config.WARREN_OIDC_CLIENT_ID;
  if (!issuer || !clientId)
    throw new Error(
      "AUTH_MODE=oidc needs WARREN_OIDC_ISSUER and WARREN_OIDC_CLIENT_ID (and WARREN_OIDC_CLIENT_SECRET)",
    );
  return { issuer, clientId, clientSecret: config.WARREN_OIDC_CLIENT_SECRET };
}

/** Only a path of this server is gone back to after sign-in. */
const safeReturn = (r: string | undefined) =>
  r && r.startsWith("/") && !r.startsWith("//") && !r.includes("\\") ? r : "/";

export class OidcSignIn {
  #config: Promise<oidc.Configuration> | undefined;

  constructor(
    readonly settings: OidcSettings,
    readonly sessions: Sessions,
    private readonly sealer: Sealer,
  ) {}

  /** The provider's configuration, discovered at first use (and again after a failure). */
  config(): Promise<oidc.Configuration> {
    if (!this.#config) {
      const s = this.settings;
      const url = new URL(s.issuer);
      this.#config = oidc
        .discovery(url, s.clientId, s.clientSecret, undefined, {
          ...(url.protocol === "http:" ? { execute: [oidc.allowInsecureRequests] } : {}),
        })
        .catch((err: unknown) => {
          this.#config = undefined;
          throw new WarrenError(
            "signin.failed",
            `the OpenID provider cannot be reached: ${(err as Error).message}`,
          );
        });
    }
    return this.#config;
  }

  /** The provider's URL to send the browser to, and the Set-Cookie of the pending sign-in. */
  async start(
    origin: string,
    returnTo: string | undefined,
    secure: boolean,
  ): Promise<{ url: string; cookie: string }> {
    const config = await this.config();
    const p: Pending = {
      state: oidc.randomState(),
      nonce: oidc.randomNonce(),
      verifier: oidc.randomPKCECodeVerifier(),
      returnTo: safeReturn(returnTo),
      at: Date.now(),
    };
    const url = oidc.buildAuthorizationUrl(config, {
      redirect_uri: `${origin}/auth/callback`,
      scope: "openid email profile",
      response_type: "code",
      state: p.state,
      nonce: p.nonce,
      code_challenge: await oidc.calculatePKCECodeChallenge(p.verifier),
      code_challenge_method: "S256",
    });
    const sealed = encodeURIComponent(this.sealer.seal(SEAL_ID, Buffer.from(JSON.stringify(p))));
    return {
      url: url.href,
      cookie: `${PENDING_COOKIE}=${sealed}; Max-Age=${PENDING_MS / 1000}; Path=/auth; HttpOnly; SameSite=Lax${secure ? "; Secure" : ""}`,
    };
  }

  /** The provider's answer: the verified email, and where to go back to. */
  async finish(origin: string, req: Asking): Promise<{ email: string; returnTo: string; clear: string }> {
    const clear = `${PENDING_COOKIE}=; Max-Age=0; Path=/auth; HttpOnly; SameSite=Lax`;
    const raw = cookieOf(headerOf(req, "cookie"), PENDING_COOKIE);
    if (!raw)
      throw new WarrenError("signin.failed", "no sign-in was started in this browser: go to /auth/login");
    let p: Pending;
    try {
      p = JSON.parse(this.sealer.open(SEAL_ID, decodeURIComponent(raw)).toString("utf8")) as Pending;
    } catch {
      throw new WarrenError("signin.failed", "the sign-in cookie does not open: go to /auth/login again");
    }
    if (Date.now() - p.at > PENDING_MS)
      throw new WarrenError("signin.failed", "the sign-in took too long: go to /auth/login again");
    const config = await this.config();
    const back = new URL(req.url, `${origin}/`);
    const current = new URL(`${origin}/auth/callback${back.search}`);
    let email: unknown;
    let verified: unknown;
    try {
      const tokens = await oidc.authorizationCodeGrant(config, current, {
        pkceCodeVerifier: p.verifier,
        expectedState: p.state,
        expectedNonce: p.nonce,
        idTokenExpected: true,
      });
      const claims = tokens.claims()!;
      email = claims.email;
      verified = claims.email_verified;
      if (email === undefined) {
        const info = await oidc.fetchUserInfo(config, tokens.access_token, claims.sub);
        email = info.email;
        verified = info.email_verified;
      }
    } catch (err) {
      const e = err as { error?: string; error_description?: string; message?: string };
      throw new WarrenError(
        "signin.failed",
        `the provider's answer does not hold: ${e.error_description ?? e.error ?? e.message ?? "refused"}`,
      );
    }
    if (typeof email !== "string" || !email)
      throw new WarrenError("signin.failed", "the provider gave no email for this account");
    if (verified !== true)
      throw new WarrenError(
        "signin.failed",
        `the provider has not verified ${email}: an unverified email is no identity`,
      );
    return { email: email.toLowerCase(), returnTo: p.returnTo, clear };
  }

  /** Who is asking: a personal token, else the session cookie; `refuse` says why not. */
  async identify(req: Asking, refuse: (message: string) => never): Promise<string> {
    const auth = headerOf(req, "authorization");
    const bearer = auth?.match(/^Bearer\s+(\S+)$/i)?.[1];
    if (bearer !== undefined) {
      if (!Sessions.isToken(bearer))
        refuse("the bearer is not a personal token (create one: POST /api/auth/tokens)");
      const found = await this.sessions.emailOfToken(bearer);
      return "email" in found ? found.email : refuse(found.why);
    }
    const value = cookieOf(headerOf(req, "cookie"), SESSION_COOKIE);
    const email = value ? await this.sessions.emailOf(value) : undefined;
    return email ?? refuse("sign in: open /auth/login, or send a personal token (Authorization: Bearer)");
  }
}

function headerOf(req: Asking, name: string): string | undefined {
  const v = req.headers[name];
  return Array.isArray(v) ? v[0] : v;
}
