// A real OpenID provider on loopback for the tests (the certified provider library, its
// in-memory adapter, its development login and consent pages), and a small browser that walks
// those pages by HTTP: the tests' OAuth 2.0 provider for Connections and the OpenID provider
// of AUTH_MODE=oidc.
import http from "node:http";
import type { AddressInfo } from "node:net";
import Provider from "oidc-provider";

export interface TestUser {
  email: string;
  verified?: boolean;
}

export interface TestClient {
  client_id: string;
  client_secret: string;
  redirect_uris: string[];
}

export interface TestProvider {
  issuer: string;
  port: number;
  /** The library's provider (AccessToken.find, events). */
  provider: any;
  /** The grant types of every token answer, in order. */
  grants: string[];
  /** Adds the clients (made once the redirect URIs are known) and starts answering. */
  serve(clients: TestClient[]): void;
  close(): Promise<void>;
}

/** Listens at once (the issuer's port is known); answers once serve() has the clients. */
export async function startOidcProvider(o: {
  users: Record<string, TestUser>;
  /** Seconds an access token lives (default 3600). */
  accessTtl?: number;
}): Promise<TestProvider> {
  let handler: http.RequestListener | undefined;
  const srv = http.createServer((req, res) => {
    if (!handler) res.writeHead(503).end("not serving yet");
    else handler(req, res);
  });
  await new Promise<void>((r) => srv.listen(0, "127.0.0.1", r));
  const port = (srv.address() as AddressInfo).port;
  const issuer = `http://127.0.0.1:${port}`;
  const grants: string[] = [];
  const out: TestProvider = {
    issuer,
    port,
    provider: undefined,
    grants,
    serve(clients) {
      const provider = new Provider(issuer, {
        clients: clients.map((c) => ({
          ...c,
          grant_types: ["authorization_code", "refresh_token"],
          response_types: ["code"],
          token_endpoint_auth_method: "client_secret_basic",
        })),
        async findAccount(_ctx: unknown, id: string) {
          const u = o.users[id];
          if (!u) return undefined;
          return {
            accountId: id,
            claims: () => ({ sub: id, email: u.email, email_verified: u.verified ?? true }),
          };
        },
        claims: { openid: ["sub"], email: ["email", "email_verified"] },
        scopes: ["openid", "offline_access", "email", "profile", "api:read"],
        pkce: { required: () => true },
        ttl: { AccessToken: o.accessTtl ?? 3600 },
        issueRefreshToken: async (_ctx: unknown, client: any) => client.grantTypeAllowed("refresh_token"),
        features: { revocation: { enabled: true }, devInteractions: { enabled: true } },
        cookies: { keys: ["test-cookie-key-for-the-provider"] },
      });
      provider.on("grant.success", (ctx: any) => grants.push(String(ctx.oidc.params.grant_type)));
      // the development pages warn once on the console; the tests know
      provider.on("server_error", () => undefined);
      out.provider = provider;
      handler = provider.callback();
    },
    close: () =>
      new Promise<void>((r) => {
        srv.closeAllConnections();
        srv.close(() => r());
      }),
  };
  return out;
}

/**
 * Walks the provider's login and consent pages from `url` (the authorization URL) as a
 * browser would, signing in as `login`; answers the URL the provider sends the browser back
 * to (outside the provider), with its query.
 */
export async function signInAtProvider(url: string, login: string): Promise<URL> {
  const jar = new Map<string, string>();
  const cookie = () => [...jar].map(([k, v]) => `${k}=${v}`).join("; ");
  const keep = (res: Response) => {
    for (const c of res.headers.getSetCookie()) {
      const [pair = ""] = c.split(";");
      const i = pair.indexOf("=");
      jar.set(pair.slice(0, i), pair.slice(i + 1));
    }
  };
  const origin = new URL(url).origin;
  let next = new URL(url);
  for (let hop = 0; hop < 20; hop++) {
    if (next.origin !== origin) return next;
    const res = await fetch(next, { redirect: "manual", headers: { cookie: cookie() } });
    keep(res);
    if (res.status >= 300 && res.status < 400) {
      next = new URL(res.headers.get("location")!, next);
      continue;
    }
    const page = await res.text();
    const prompt = /name="prompt" value="(\w+)"/.exec(page)?.[1];
    if (res.status !== 200 || !prompt)
      throw new Error(`the provider answered ${res.status}: ${page.slice(0, 500)}`);
    const form = new URLSearchParams({ prompt, login, password: "any" });
    const sent = await fetch(next, {
      method: "POST",
      redirect: "manual",
      headers: { cookie: cookie(), "content-type": "application/x-www-form-urlencoded" },
      body: form.toString(),
    });
    keep(sent);
    if (sent.status < 300 || sent.status >= 400)
      throw new Error(`the ${prompt} page answered ${sent.status}`);
    next = new URL(sent.headers.get("location")!, next);
  }
  throw new Error("too many hops at the provider");
}
