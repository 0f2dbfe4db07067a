import { idParams, orgIdQuery } from "../../contract/common.js";
import { Machine, MachineCreateRequest, MachineList, MachineUpdateRequest } from "../../contract/machines.js";
import type { Machines } from "../../machines/service.js";
import { route, type AnyRoute } from "../route.js";

export function machineRoutes(machines: Machines): AnyRoute[] {
  return [
    route({
      method: "POST",
      url: "/api/machines",
      id: "machines.create",
      tag: "machines",
      summary: "Create a machine: a place where agents live, with one box",
      body: MachineCreateRequest,
      status: 201,
      response: Machine,
      errors: ["access.denied"],
      handler: ({ who, body }) => machines.create(who, body),
    }),
    route({
      method: "GET",
      url: "/api/machines",
      id: "machines.list",
      tag: "machines",
      summary: "Machines of the caller's organisations (or of one)",
      query: orgIdQuery,
      response: MachineList,
      handler: async ({ who, query }) => ({ items: await machines.list(who, query.org_id) }),
    }),
    route({
      method: "GET",
      url: "/api/machines/:id",
      id: "machines.get",
      tag: "machines",
      summary: "One machine with its box's state",
      params: idParams("mch"),
      response: Machine,
      handler: ({ who, params }) => machines.get(who, params.id),
    }),
    route({
      method: "PATCH",
      url: "/api/machines/:id",
      id: "machines.update",
      tag: "machines",
      summary: "Rename or resize a machine (limits reach the next box start)",
      params: idParams("mch"),
      body: MachineUpdateRequest,
      response: Machine,
      errors: ["access.denied"],
      handler: ({ who, params, body }) => machines.update(who, params.id, body),
    }),
    route({
      method: "POST",
      url: "/api/machines/:id/stop",
      id: "machines.stop",
      tag: "machines",
      summary: "Stop the machine's box; its files stay",
      params: idParams("mch"),
      response: Machine,
      errors: ["access.denied"],
      handler: ({ who, params }) => machines.stop(who, params.id),
    }),
    route({
      method: "DELETE",
      url: "/api/machines/:id",
      id: "machines.delete",
      tag: "machines",
      summary: "Delete a machine that has no agents",
      params: idParams("mch"),
      status: 204,
      errors: ["access.denied", "machine.not_empty"],
      handler: ({ who, params }) => machines.delete(who, params.id),
    }),
  ];
}
