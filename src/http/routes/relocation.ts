import { idParams } from "../../contract/common.js";
import { MachineDefinitionText, MachineImported, MachineImportRequest } from "../../contract/definitions.js";
import type { Definitions } from "../../relocation/definitions.js";
import { route, type AnyRoute } from "../route.js";

export function relocationRoutes(definitions: Definitions): AnyRoute[] {
  return [
    route({
      method: "GET",
      url: "/api/machines/:id/definition",
      id: "machines.definition",
      tag: "machines",
      summary:
        "The machine's definition (YAML text and its object): environment, limits, trust, agents with their specs, personas and schedules, areas, flows, secret names and grants (never values)",
      params: idParams("mch"),
      response: MachineDefinitionText,
      handler: ({ who, params }) => definitions.export(who, params.id),
    }),
    route({
      method: "POST",
      url: "/api/orgs/:id/machines/import",
      id: "machines.import",
      tag: "machines",
      summary:
        "Rebuild a definition as a new machine of the organisation, on this server's provider (owner, admin); secrets it names are granted when the organisation has them",
      params: idParams("org"),
      body: MachineImportRequest,
      status: 201,
      response: MachineImported,
      errors: ["access.denied"],
      handler: ({ who, params, body }) => definitions.import(who, params.id, body.text, body.name),
    }),
  ];
}
