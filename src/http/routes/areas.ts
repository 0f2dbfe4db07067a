import { idParams } from "../../contract/common.js";
import { Area, AreaList, areaParams, AreaPutRequest, AreaRevisionList } from "../../contract/areas.js";
import type { Areas } from "../../areas/service.js";
import { route, type AnyRoute } from "../route.js";

export function areaRoutes(areas: Areas): AnyRoute[] {
  return [
    route({
      method: "PUT",
      url: "/api/orgs/:id/areas/:name",
      id: "areas.put",
      tag: "areas",
      summary: "Define an area or change its folders (owner, admin); every change is a revision",
      params: areaParams,
      body: AreaPutRequest,
      response: Area,
      errors: ["access.denied"],
      handler: ({ who, params, body }) => areas.put(who, params.id, params.name, body.folders),
    }),
    route({
      method: "GET",
      url: "/api/orgs/:id/areas",
      id: "areas.list",
      tag: "areas",
      summary: "The organisation's areas (a member who holds areas sees only theirs)",
      params: idParams("org"),
      response: AreaList,
      handler: async ({ who, params }) => ({ items: await areas.list(who, params.id) }),
    }),
    route({
      method: "GET",
      url: "/api/orgs/:id/areas/:name/revisions",
      id: "areas.revisions",
      tag: "areas",
      summary: "Every change of an area: its folders after it, who and when",
      params: areaParams,
      response: AreaRevisionList,
      errors: ["access.denied", "area.refused"],
      handler: async ({ who, params }) => ({ items: await areas.revisions(who, params.id, params.name) }),
    }),
    route({
      method: "DELETE",
      url: "/api/orgs/:id/areas/:name",
      id: "areas.delete",
      tag: "areas",
      summary: "Delete an area no member holds (owner, admin)",
      params: areaParams,
      status: 204,
      errors: ["access.denied", "area.in_use"],
      handler: ({ who, params }) => areas.remove(who, params.id, params.name),
    }),
  ];
}
