import { z } from "zod";
import { sandboxPolicySchema } from "../../agents/policy.js";
import type { Agents } from "../../agents/service.js";
import type { Guilds } from "../../guilds/service.js";
import { route, type AnyRoute } from "../route.js";
import { idOf, idParams, items, mibField, name, orgIdQuery } from "../schemas.js";

const agent = z.object({
  id: z.string(),
  org_id: z.string(),
  machine_id: z.string(),
  name: z.string(),
  slot: z.number(),
  uid: z.number(),
  home: z.string(),
  ports: z.object({ first: z.number(), last: z.number() }),
  max_workspace_mib: z.number(),
  workspace_mib: z.number().nullable(),
  sandbox_policy: sandboxPolicySchema,
  created_at: z.string(),
  warnings: z.array(z.string()).optional(),
});

const guild = z.object({
  id: z.string(),
  org_id: z.string(),
  name: z.string(),
  agent_ids: z.array(z.string()),
});

export function agentRoutes(agents: Agents): AnyRoute[] {
  return [
    route({
      method: "POST",
      url: "/api/agents",
      tag: "agents",
      summary: "Create an agent on a machine: it takes the lowest free slot",
      body: z
        .object({
          org_id: idOf("org"),
          machine_id: idOf("mch"),
          name,
          max_workspace_mib: mibField(16 * 1024 * 1024).optional(),
        })
        .strict(),
      status: 201,
      response: agent,
      errors: ["access.denied"],
      handler: ({ who, body }) => agents.create(who, body),
    }),
    route({
      method: "GET",
      url: "/api/agents",
      tag: "agents",
      summary: "Agents of the caller's organisations, optionally of one organisation or machine",
      query: orgIdQuery.extend({ machine_id: idOf("mch").optional() }).strict(),
      response: items(agent),
      handler: async ({ who, query }) => ({ items: await agents.list(who, query) }),
    }),
    route({
      method: "GET",
      url: "/api/agents/:id",
      tag: "agents",
      summary: "One agent",
      params: idParams("agt"),
      response: agent,
      handler: ({ who, params }) => agents.get(who, params.id),
    }),
    route({
      method: "PATCH",
      url: "/api/agents/:id",
      tag: "agents",
      summary: "Rename an agent, change its disk cap or its sandbox policy",
      params: idParams("agt"),
      body: z
        .object({
          name: name.optional(),
          max_workspace_mib: mibField(16 * 1024 * 1024).optional(),
          sandbox_policy: sandboxPolicySchema.optional(),
        })
        .strict(),
      response: agent,
      errors: ["access.denied"],
      handler: ({ who, params, body }) => agents.update(who, params.id, body),
    }),
    route({
      method: "DELETE",
      url: "/api/agents/:id",
      tag: "agents",
      summary: "Delete an agent and its home; its run records stay",
      params: idParams("agt"),
      status: 204,
      errors: ["access.denied"],
      handler: ({ who, params }) => agents.delete(who, params.id),
    }),
  ];
}

export function guildRoutes(guilds: Guilds): AnyRoute[] {
  return [
    route({
      method: "POST",
      url: "/api/guilds",
      tag: "guilds",
      summary: "Create a guild: a named group of agents",
      body: z.object({ org_id: idOf("org"), name }).strict(),
      status: 201,
      response: guild,
      errors: ["access.denied"],
      handler: ({ who, body }) => guilds.create(who, body),
    }),
    route({
      method: "GET",
      url: "/api/guilds",
      tag: "guilds",
      summary: "Guilds of the caller's organisations (or of one)",
      query: orgIdQuery,
      response: items(guild),
      handler: async ({ who, query }) => ({ items: await guilds.list(who, query.org_id) }),
    }),
    route({
      method: "GET",
      url: "/api/guilds/:id",
      tag: "guilds",
      summary: "One guild and its agents",
      params: idParams("gld"),
      response: guild,
      handler: ({ who, params }) => guilds.get(who, params.id),
    }),
    route({
      method: "DELETE",
      url: "/api/guilds/:id",
      tag: "guilds",
      summary: "Delete a guild (its agents stay)",
      params: idParams("gld"),
      status: 204,
      errors: ["access.denied"],
      handler: ({ who, params }) => guilds.delete(who, params.id),
    }),
    route({
      method: "POST",
      url: "/api/guilds/:id/agents",
      tag: "guilds",
      summary: "Add an agent of the same organisation to a guild",
      params: idParams("gld"),
      body: z.object({ agent_id: idOf("agt") }).strict(),
      status: 204,
      errors: ["access.denied"],
      handler: ({ who, params, body }) => guilds.addAgent(who, params.id, body.agent_id),
    }),
    route({
      method: "DELETE",
      url: "/api/guilds/:id/agents/:agent_id",
      tag: "guilds",
      summary: "Take an agent out of a guild",
      params: z.object({ id: idOf("gld"), agent_id: idOf("agt") }),
      status: 204,
      errors: ["access.denied"],
      handler: ({ who, params }) => guilds.removeAgent(who, params.id, params.agent_id),
    }),
  ];
}
