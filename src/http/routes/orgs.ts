import { z } from "zod";
import type { Orgs } from "../../orgs/service.js";
import { route, type AnyRoute } from "../route.js";
import { idOf, idParams, items, name, role } from "../schemas.js";

const org = z.object({ id: z.string(), name: z.string(), role });
const member = z.object({ user_id: z.string(), email: z.string(), role });

export function orgRoutes(orgs: Orgs): AnyRoute[] {
  return [
    route({
      method: "POST",
      url: "/api/orgs",
      tag: "orgs",
      summary: "Create an organisation; the caller becomes its owner",
      body: z.object({ name }).strict(),
      status: 201,
      response: org,
      handler: ({ who, body }) => orgs.create(who, body.name),
    }),
    route({
      method: "GET",
      url: "/api/orgs",
      tag: "orgs",
      summary: "The organisations the caller is a member of",
      response: items(org),
      handler: async ({ who }) => ({ items: await orgs.list(who) }),
    }),
    route({
      method: "GET",
      url: "/api/orgs/:id",
      tag: "orgs",
      summary: "One organisation",
      params: idParams("org"),
      response: org,
      handler: ({ who, params }) => orgs.get(who, params.id),
    }),
    route({
      method: "PATCH",
      url: "/api/orgs/:id",
      tag: "orgs",
      summary: "Rename an organisation (owner, admin)",
      params: idParams("org"),
      body: z.object({ name }).strict(),
      response: org,
      errors: ["access.denied"],
      handler: ({ who, params, body }) => orgs.rename(who, params.id, body.name),
    }),
    route({
      method: "DELETE",
      url: "/api/orgs/:id",
      tag: "orgs",
      summary: "Delete an empty organisation (owner)",
      params: idParams("org"),
      status: 204,
      errors: ["access.denied", "machine.not_empty"],
      handler: ({ who, params }) => orgs.delete(who, params.id),
    }),
    route({
      method: "GET",
      url: "/api/orgs/:id/members",
      tag: "orgs",
      summary: "The members of an organisation and their roles",
      params: idParams("org"),
      response: items(member),
      handler: async ({ who, params }) => ({ items: await orgs.members(who, params.id) }),
    }),
    route({
      method: "PUT",
      url: "/api/orgs/:id/members",
      tag: "orgs",
      summary: "Add a member or change a member's role (owner, admin)",
      params: idParams("org"),
      body: z
        .object({
          email: z
            .string()
            .trim()
            .toLowerCase()
            .regex(/^[^\s@<>,;"]{1,128}@[^\s@<>,;"]{1,255}$/, "must be an email address"),
          role,
        })
        .strict(),
      response: member,
      errors: ["access.denied"],
      handler: ({ who, params, body }) => orgs.setMember(who, params.id, body.email, body.role),
    }),
    route({
      method: "DELETE",
      url: "/api/orgs/:id/members/:user_id",
      tag: "orgs",
      summary: "Remove a member (owner, admin)",
      params: z.object({ id: idOf("org"), user_id: idOf("usr") }),
      status: 204,
      errors: ["access.denied"],
      handler: ({ who, params }) => orgs.removeMember(who, params.id, params.user_id),
    }),
  ];
}
