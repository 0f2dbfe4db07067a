import { idParams } from "../../contract/common.js";
import {
  Secret,
  SecretCreateRequest,
  SecretList,
  SecretListQuery,
  SecretUpdateRequest,
} from "../../contract/secrets.js";
import type { Secrets } from "../../secrets/service.js";
import { route, type AnyRoute } from "../route.js";

export function secretRoutes(secrets: Secrets): AnyRoute[] {
  return [
    route({
      method: "POST",
      url: "/api/secrets",
      id: "secrets.create",
      tag: "secrets",
      summary:
        "Create a secret (sealed at rest) or an alias of one, granted to the organisation, guilds or agents; the answer never holds the value",
      body: SecretCreateRequest,
      status: 201,
      response: Secret,
      errors: ["access.denied"],
      handler: ({ who, body }) => secrets.create(who, body),
    }),
    route({
      method: "GET",
      url: "/api/secrets",
      id: "secrets.list",
      tag: "secrets",
      summary:
        "Secrets of the caller's organisations (or of one): names, descriptions and grants, never values",
      query: SecretListQuery,
      response: SecretList,
      handler: async ({ who, query }) => ({ items: await secrets.list(who, query.org_id) }),
    }),
    route({
      method: "GET",
      url: "/api/secrets/:id",
      id: "secrets.get",
      tag: "secrets",
      summary: "One secret: its name, description and grants, never its value",
      params: idParams("sec"),
      response: Secret,
      handler: ({ who, params }) => secrets.get(who, params.id),
    }),
    route({
      method: "PATCH",
      url: "/api/secrets/:id",
      id: "secrets.update",
      tag: "secrets",
      summary: "Change a secret's description or grants (the grants given replace the old ones)",
      params: idParams("sec"),
      body: SecretUpdateRequest,
      response: Secret,
      errors: ["access.denied"],
      handler: ({ who, params, body }) => secrets.update(who, params.id, body),
    }),
    route({
      method: "DELETE",
      url: "/api/secrets/:id",
      id: "secrets.delete",
      tag: "secrets",
      summary: "Delete a secret (and its aliases); running commands keep the values they started with",
      params: idParams("sec"),
      status: 204,
      errors: ["access.denied"],
      handler: ({ who, params }) => secrets.delete(who, params.id),
    }),
  ];
}
