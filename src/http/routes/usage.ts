import { idParams } from "../../contract/common.js";
import { OrgUsage, UsageQuery } from "../../contract/usage.js";
import type { UsageRecords } from "../../records/usage.js";
import { route, type AnyRoute } from "../route.js";

export function usageRoutes(usage: UsageRecords): AnyRoute[] {
  return [
    route({
      method: "GET",
      url: "/api/orgs/:id/usage",
      id: "usage.get",
      tag: "usage",
      summary:
        "What the organisation's runs (or one agent's, `agent`) used step by step: tokens, dollars, CPU seconds, runs, disk",
      params: idParams("org"),
      query: UsageQuery,
      response: OrgUsage,
      handler: ({ who, params, query }) => usage.org(who, params.id, query),
    }),
  ];
}
