// Connections: providers (owners and admins), accounts members connect through OAuth 2.0, and
// their grants. The provider sends the member's browser back to /api/connections/callback.
import type { FastifyRequest } from "fastify";
import type { Connections } from "../../connections/service.js";
import { idParams, orgIdQuery } from "../../contract/common.js";
import {
  Connection,
  ConnectionCallbackQuery,
  ConnectionCreateRequest,
  ConnectionGrantsRequest,
  ConnectionList,
  ConnectionProvider,
  ConnectionProviderCreateRequest,
  ConnectionProviderList,
  ConnectionStarted,
} from "../../contract/connections.js";
import { route, type AnyRoute } from "../route.js";

/** This server's origin as the member's browser sees it: PUBLIC_BASE_URL, else the request's host. */
export function originOf(req: FastifyRequest, publicBaseUrl: string | undefined): string {
  if (publicBaseUrl) return new URL(publicBaseUrl).origin;
  return `http://${req.headers.host ?? "127.0.0.1"}`;
}

export function connectionRoutes(connections: Connections, publicBaseUrl: string | undefined): AnyRoute[] {
  return [
    route({
      method: "POST",
      url: "/api/connections/providers",
      id: "connections.providers.create",
      tag: "connections",
      summary:
        "Register an OAuth 2.0 provider (owner, admin): its endpoints, client id, client secret (sealed, never answered) and scopes",
      body: ConnectionProviderCreateRequest,
      status: 201,
      response: ConnectionProvider,
      errors: ["access.denied"],
      handler: ({ who, body }) => connections.createProvider(who, body),
    }),
    route({
      method: "GET",
      url: "/api/connections/providers",
      id: "connections.providers.list",
      tag: "connections",
      summary: "The connection providers of the caller's organisations (or of one)",
      query: orgIdQuery,
      response: ConnectionProviderList,
      handler: async ({ who, query }) => ({ items: await connections.listProviders(who, query.org_id) }),
    }),
    route({
      method: "DELETE",
      url: "/api/connections/providers/:id",
      id: "connections.providers.delete",
      tag: "connections",
      summary: "Remove a provider (owner, admin) and every connection made through it",
      params: idParams("cnp"),
      status: 204,
      errors: ["access.denied"],
      handler: ({ who, params }) => connections.deleteProvider(who, params.id),
    }),
    route({
      method: "POST",
      url: "/api/connections",
      id: "connections.create",
      tag: "connections",
      summary:
        "Connect an account: a pending connection and `authorize_url`, where the member's browser signs in at the provider (authorization code with PKCE and a one-use state)",
      body: ConnectionCreateRequest,
      status: 201,
      response: ConnectionStarted,
      errors: ["access.denied"],
      handler: ({ who, body, req }) => connections.start(who, body, originOf(req, publicBaseUrl)),
    }),
    route({
      method: "GET",
      url: "/api/connections/callback",
      id: "connections.callback",
      tag: "connections",
      summary:
        "Where the provider sends the browser back: the state (one use, ten minutes, the member who started) and the code are checked and exchanged; 303 to the app's Connections page",
      query: ConnectionCallbackQuery,
      status: 303,
      errors: ["connection.refused"],
      handler: async ({ who, query, req, reply }) => {
        const c = await connections.callback(who, query, originOf(req, publicBaseUrl));
        return reply.code(303).header("location", `/connections?connected=${c.id}`).send();
      },
    }),
    route({
      method: "GET",
      url: "/api/connections",
      id: "connections.list",
      tag: "connections",
      summary:
        "The connections of the caller's organisations (or of one): status (with why when expired or revoked), grants, and who acts as the account; never a token",
      query: orgIdQuery,
      response: ConnectionList,
      handler: async ({ who, query }) => ({ items: await connections.list(who, query.org_id) }),
    }),
    route({
      method: "GET",
      url: "/api/connections/:id",
      id: "connections.get",
      tag: "connections",
      summary: "One connection; never a token",
      params: idParams("cnx"),
      response: Connection,
      handler: ({ who, params }) => connections.get(who, params.id),
    }),
    route({
      method: "PUT",
      url: "/api/connections/:id/grants",
      id: "connections.grants",
      tag: "connections",
      summary:
        "Replace a connection's grants (organisation, guild, agent): every agent they reach uses it as the one account",
      params: idParams("cnx"),
      body: ConnectionGrantsRequest,
      response: Connection,
      errors: ["access.denied"],
      handler: ({ who, params, body }) => connections.setGrants(who, params.id, body.grants),
    }),
    route({
      method: "POST",
      url: "/api/connections/:id/revoke",
      id: "connections.revoke",
      tag: "connections",
      summary:
        "Revoke a connection: its tokens are forgotten (and revoked at the provider when it can); a tool's next call through it is refused with why",
      params: idParams("cnx"),
      response: Connection,
      errors: ["access.denied"],
      handler: ({ who, params }) => connections.revoke(who, params.id),
    }),
  ];
}
