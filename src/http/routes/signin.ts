// Sign-in (AUTH_MODE=oidc): /auth/login, /auth/callback and /auth/logout, outside /api (a
// browser reaches them before it has a session); who one is, and personal API tokens.
import { z } from "zod";
import type { Access } from "../../access/index.js";
import { idParams } from "../../contract/common.js";
import {
  Me,
  PersonalTokenCreated,
  PersonalTokenCreateRequest,
  PersonalTokenList,
} from "../../contract/connections.js";
import { WarrenError } from "../../errors.js";
import type { OidcSignIn } from "../../signin/oidc.js";
import { cookieOf, SESSION_COOKIE, sessionCookie, type Sessions } from "../../signin/sessions.js";
import { route, type AnyRoute } from "../route.js";
import { originOf } from "./connections.js";

export interface SignInRoutesOptions {
  access: Access;
  sessions: Sessions;
  /** Present in AUTH_MODE=oidc only. */
  signin: OidcSignIn | undefined;
  authMode: string;
  publicBaseUrl: string | undefined;
}

export function signInRoutes(o: SignInRoutesOptions): AnyRoute[] {
  const needOidc = () => {
    if (!o.signin)
      throw new WarrenError(
        "signin.failed",
        `sign-in by OpenID is off (AUTH_MODE is ${o.authMode}, not oidc)`,
      );
    return o.signin;
  };
  return [
    route({
      method: "GET",
      url: "/auth/login",
      id: "auth.login",
      tag: "auth",
      summary:
        "AUTH_MODE=oidc: 302 to the OpenID provider's login (PKCE, state, nonce); back at /auth/callback",
      query: z.object({ return_to: z.string().max(2000).optional() }).strict(),
      public: true,
      status: 302,
      errors: ["signin.failed"],
      handler: async ({ query, req, reply }) => {
        const origin = originOf(req, o.publicBaseUrl);
        const s = await needOidc().start(origin, query.return_to, origin.startsWith("https:"));
        return reply.code(302).header("set-cookie", s.cookie).header("location", s.url).send();
      },
    }),
    route({
      method: "GET",
      url: "/auth/callback",
      id: "auth.callback",
      tag: "auth",
      summary:
        "Where the provider sends the browser back: the answer and the ID token are checked, the verified email signs in (a session cookie: HttpOnly, SameSite=Lax), 303 to where sign-in began",
      public: true,
      status: 303,
      errors: ["signin.failed"],
      handler: async ({ req, reply }) => {
        const origin = originOf(req, o.publicBaseUrl);
        const done = await needOidc().finish(origin, req);
        const who = await o.access.identify(done.email);
        const value = await o.sessions.open(who);
        return reply
          .code(303)
          .header("set-cookie", [done.clear, sessionCookie(value, origin.startsWith("https:"))])
          .header("location", done.returnTo)
          .send();
      },
    }),
    route({
      method: "POST",
      url: "/auth/logout",
      id: "auth.logout",
      tag: "auth",
      summary: "Sign out: the session ends and its cookie is cleared",
      public: true,
      status: 204,
      handler: async ({ req, reply }) => {
        const value = cookieOf(req.headers.cookie, SESSION_COOKIE);
        if (value) await o.sessions.close(value);
        const secure = originOf(req, o.publicBaseUrl).startsWith("https:");
        return reply.code(204).header("set-cookie", sessionCookie("", secure)).send();
      },
    }),
    route({
      method: "GET",
      url: "/api/auth/me",
      id: "auth.me",
      tag: "auth",
      summary:
        "Who the caller is and the identity mode; in AUTH_MODE=oidc a session cookie older than fifteen minutes is rotated here (a new value, the old one ends)",
      response: Me,
      handler: async ({ who, req, reply }) => {
        const value = o.signin ? cookieOf(req.headers.cookie, SESSION_COOKIE) : undefined;
        const next = value ? await o.sessions.rotate(value) : undefined;
        if (next)
          reply.header(
            "set-cookie",
            sessionCookie(next, originOf(req, o.publicBaseUrl).startsWith("https:")),
          );
        return { email: who.email, auth_mode: o.authMode };
      },
    }),
    route({
      method: "POST",
      url: "/api/auth/tokens",
      id: "auth.tokens.create",
      tag: "auth",
      summary:
        "Create a personal API token of the caller (shown once): `Authorization: Bearer <token>` in AUTH_MODE=oidc",
      body: PersonalTokenCreateRequest,
      status: 201,
      response: PersonalTokenCreated,
      handler: ({ who, body }) => o.sessions.createToken(who, body.name),
    }),
    route({
      method: "GET",
      url: "/api/auth/tokens",
      id: "auth.tokens.list",
      tag: "auth",
      summary: "The caller's personal tokens (never their values)",
      response: PersonalTokenList,
      handler: async ({ who }) => ({ items: await o.sessions.listTokens(who) }),
    }),
    route({
      method: "DELETE",
      url: "/api/auth/tokens/:id",
      id: "auth.tokens.revoke",
      tag: "auth",
      summary: "Revoke one of the caller's personal tokens: it stops working at once",
      params: idParams("ptk"),
      status: 204,
      handler: ({ who, params }) => o.sessions.revokeToken(who, params.id),
    }),
  ];
}
