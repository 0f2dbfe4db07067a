import { z } from "zod";
import type { Machines } from "../../machines/service.js";
import { route, type AnyRoute } from "../route.js";
import { idOf, idParams, items, mibField, name, orgIdQuery } from "../schemas.js";

const machine = z.object({
  id: z.string(),
  org_id: z.string(),
  name: z.string(),
  state: z.enum(["stopped", "starting", "running"]),
  state_reason: z.string(),
  state_changed_at: z.string(),
  max_workspace_mib: z.number(),
  workspace_mib: z.number().nullable(),
  memory_mib: z.number(),
  cpus: z.number(),
  trust: z.enum(["isolated", "shared"]),
  agents: z.number(),
  created_at: z.string(),
});

const memory = z
  .number()
  .int("must be a whole number of MiB")
  .min(64, "must be at least 64")
  .max(262144, "must be at most 262144");
const cpus = z.number().min(0.1, "must be at least 0.1").max(64, "must be at most 64");

export function machineRoutes(machines: Machines): AnyRoute[] {
  return [
    route({
      method: "POST",
      url: "/api/machines",
      tag: "machines",
      summary: "Create a machine: a place where agents live, with one box",
      body: z
        .object({
          org_id: idOf("org"),
          name,
          max_workspace_mib: mibField(16 * 1024 * 1024).optional(),
          memory_mib: memory.optional(),
          cpus: cpus.optional(),
          trust: z.enum(["isolated", "shared"]).optional(),
        })
        .strict(),
      status: 201,
      response: machine,
      errors: ["access.denied"],
      handler: ({ who, body }) => machines.create(who, body),
    }),
    route({
      method: "GET",
      url: "/api/machines",
      tag: "machines",
      summary: "Machines of the caller's organisations (or of one)",
      query: orgIdQuery,
      response: items(machine),
      handler: async ({ who, query }) => ({ items: await machines.list(who, query.org_id) }),
    }),
    route({
      method: "GET",
      url: "/api/machines/:id",
      tag: "machines",
      summary: "One machine with its box's state",
      params: idParams("mch"),
      response: machine,
      handler: ({ who, params }) => machines.get(who, params.id),
    }),
    route({
      method: "PATCH",
      url: "/api/machines/:id",
      tag: "machines",
      summary: "Rename or resize a machine (limits reach the next box start)",
      params: idParams("mch"),
      body: z
        .object({
          name: name.optional(),
          max_workspace_mib: mibField(16 * 1024 * 1024).optional(),
          memory_mib: memory.optional(),
          cpus: cpus.optional(),
        })
        .strict(),
      response: machine,
      errors: ["access.denied"],
      handler: ({ who, params, body }) => machines.update(who, params.id, body),
    }),
    route({
      method: "POST",
      url: "/api/machines/:id/stop",
      tag: "machines",
      summary: "Stop the machine's box; its files stay",
      params: idParams("mch"),
      response: machine,
      errors: ["access.denied"],
      handler: ({ who, params }) => machines.stop(who, params.id),
    }),
    route({
      method: "DELETE",
      url: "/api/machines/:id",
      tag: "machines",
      summary: "Delete a machine that has no agents",
      params: idParams("mch"),
      status: 204,
      errors: ["access.denied", "machine.not_empty"],
      handler: ({ who, params }) => machines.delete(who, params.id),
    }),
  ];
}
