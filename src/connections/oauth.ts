// The OAuth 2.0 client side of a connection, through openid-client: the authorization URL
// (PKCE S256 and a one-use state), the code exchange, the refresh and the revocation. Every
// request to a provider goes through the guarded connector (the address rule applies to it).
import * as oidc from "openid-client";
import type { GuardedFetch } from "../net/connector.js";

interface ProviderEndpoints {
  issuer: string | null;
  authorizationUrl: string;
  tokenUrl: string;
  revocationUrl: string | null;
  clientId: string;
  clientSecret: string | null;
}

export interface Tokens {
  access_token: string;
  refresh_token?: string | undefined;
  /** Seconds since the epoch, when the provider said. */
  expires_at?: number | undefined;
  scope?: string | undefined;
}

/** The client configuration of a provider (no discovery: its endpoints were registered). */
export function configOf(p: ProviderEndpoints, fetch: GuardedFetch): oidc.Configuration {
  const meta: oidc.ServerMetadata = {
    issuer: p.issuer ?? new URL(p.authorizationUrl).origin,
    authorization_endpoint: p.authorizationUrl,
    token_endpoint: p.tokenUrl,
    ...(p.revocationUrl ? { revocation_endpoint: p.revocationUrl } : {}),
  };
  const config = new oidc.Configuration(
    meta,
    p.clientId,
    p.clientSecret ?? undefined,
    p.clientSecret ? oidc.ClientSecretBasic(p.clientSecret) : oidc.None(),
  );
  config[oidc.customFetch] = (url, options) => fetch(url, options);
  if ([p.authorizationUrl, p.tokenUrl].some((u) => u.startsWith("http:"))) oidc.allowInsecureRequests(config);
  return config;
}

export function authorizeUrl(
  config: oidc.Configuration,
  o: { redirectUri: string; scopes: string[]; state: string; challenge: string },
): string {
  const params: Record<string, string> = {
    redirect_uri: o.redirectUri,
    state: o.state,
    code_challenge: o.challenge,
    code_challenge_method: "S256",
    response_type: "code",
  };
  if (o.scopes.length > 0) params.scope = o.scopes.join(" ");
  // a refresh token is asked for where OpenID Connect's offline access is
  if (o.scopes.includes("offline_access")) params.prompt = "consent";
  return oidc.buildAuthorizationUrl(config, params).href;
}

function tokensOf(r: oidc.TokenEndpointResponse & oidc.TokenEndpointResponseHelpers, old?: Tokens): Tokens {
  const expiresIn = r.expiresIn();
  return {
    access_token: r.access_token,
    // a provider that does not rotate the refresh token keeps the old one good
    refresh_token: r.refresh_token ?? old?.refresh_token,
    expires_at: expiresIn !== undefined ? Math.floor(Date.now() / 1000) + expiresIn : undefined,
    scope: r.scope,
  };
}

/** Exchanges the code of the callback URL (state and PKCE checked by the library). */
export async function exchange(
  config: oidc.Configuration,
  callback: URL,
  o: { state: string; verifier: string },
): Promise<Tokens> {
  const r = await oidc.authorizationCodeGrant(config, callback, {
    pkceCodeVerifier: o.verifier,
    expectedState: o.state,
  });
  return tokensOf(r);
}

export async function refresh(config: oidc.Configuration, old: Tokens): Promise<Tokens> {
  if (!old.refresh_token) throw new Error("the provider gave no refresh token");
  return tokensOf(await oidc.refreshTokenGrant(config, old.refresh_token), old);
}

/** Tells the provider the tokens are no longer used, where it has a revocation endpoint. */
export async function revokeAt(config: oidc.Configuration, tokens: Tokens): Promise<void> {
  if (!config.serverMetadata().revocation_endpoint) return;
  for (const t of [tokens.refresh_token, tokens.access_token])
    if (t) await oidc.tokenRevocation(config, t).catch(() => undefined);
}

/** What a provider's refusal says, without any token. */
export function whyOf(err: unknown): string {
  if (err instanceof oidc.ResponseBodyError)
    return `${err.error}${err.error_description ? `: ${err.error_description}` : ""}`;
  if (err instanceof oidc.AuthorizationResponseError)
    return `${err.error}${err.error_description ? `: ${err.error_description}` : ""}`;
  const e = err as { message?: string; cause?: { message?: string } };
  return e.cause?.message ? `${e.message ?? "failed"} (${e.cause.message})` : (e.message ?? String(err));
}

export const pkce = {
  verifier: () => oidc.randomPKCECodeVerifier(),
  challenge: (v: string) => oidc.calculatePKCECodeChallenge(v),
  state: () => oidc.randomState(),
};
