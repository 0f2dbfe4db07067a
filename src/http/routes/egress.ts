import { idParams } from "../../contract/common.js";
import { EgressList, EgressListQuery } from "../../contract/egress.js";
import type { Egress } from "../../egress/service.js";
import { route, type AnyRoute } from "../route.js";

export function egressRoutes(egress: Egress): AnyRoute[] {
  return [
    route({
      method: "GET",
      url: "/api/agents/:id/egress",
      id: "egress.list",
      tag: "egress",
      summary:
        "The agent's egress decisions, newest first: every request and tunnel of its commands, allowed or refused, with the reason",
      params: idParams("agt"),
      query: EgressListQuery,
      response: EgressList,
      handler: ({ who, params, query }) => egress.list(who, params.id, query),
    }),
  ];
}
