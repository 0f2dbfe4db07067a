import { idParams } from "../../contract/common.js";
import { Agent } from "../../contract/agents.js";
import {
  AgentMoveRequest,
  MachineDefinitionText,
  MachineImported,
  MachineImportRequest,
} from "../../contract/definitions.js";
import type { Definitions } from "../../relocation/definitions.js";
import type { Moves } from "../../relocation/move.js";
import { route, type AnyRoute } from "../route.js";

export function relocationRoutes(definitions: Definitions, moves: Moves): AnyRoute[] {
  return [
    route({
      method: "POST",
      url: "/api/agents/:id/move",
      id: "agents.move",
      tag: "agents",
      summary:
        "Move the agent to another machine of its organisation: its home (files, conversations' worktrees and branches), a slot and ports there; room checked first, nothing lost if it stops half-way",
      params: idParams("agt"),
      body: AgentMoveRequest,
      response: Agent,
      errors: ["access.denied", "generation.busy"],
      handler: ({ who, params, body }) => moves.move(who, params.id, body.machine_id),
    }),
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
