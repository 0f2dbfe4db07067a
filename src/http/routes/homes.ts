import { z } from "zod";
import { FILE_LIMIT_BYTES, type Homes } from "../../homes/service.js";
import { route, type AnyRoute } from "../route.js";
import { idOf, idParams } from "../../contract/common.js";
import { FolderListing, FolderQuery, Usage } from "../../contract/homes.js";

const fileParams = z.object({ id: idOf("agt"), "*": z.string().max(4096) });

/** The wildcard part of a files URL, as the router decoded it (once). */
const pathOf = (raw: string): string => raw;

export function homeRoutes(homes: Homes): AnyRoute[] {
  return [
    route({
      method: "GET",
      url: "/api/agents/:id/usage",
      id: "homes.usage",
      tag: "homes",
      summary: "The disk the agent's home and its machine's folder use, against their caps, as last measured",
      params: idParams("agt"),
      response: Usage,
      handler: async ({ who, params }) => homes.usage(who, params.id),
    }),
    route({
      method: "GET",
      url: "/api/agents/:id/folder",
      id: "files.list",
      tag: "homes",
      summary: "List a folder of the agent's home (no link on the way; links listed, not followed)",
      params: idParams("agt"),
      query: FolderQuery,
      response: FolderListing,
      errors: ["file.invalid_path", "file.link", "file.not_regular", "file.not_found", "access.denied"],
      handler: async ({ who, params, query }) => homes.listFolder(who, params.id, query.path),
    }),
    route({
      method: "GET",
      url: "/api/agents/:id/files/*",
      id: "files.read",
      tag: "homes",
      summary: "Read a file of the agent's home, by the host-side read rules",
      produces: "application/octet-stream",
      params: fileParams,
      errors: ["file.invalid_path", "file.link", "file.not_regular", "file.not_found", "file.too_large"],
      handler: async ({ who, params, reply }) => {
        const data = await homes.readFile(who, params.id, pathOf(params["*"]));
        return reply.code(200).type("application/octet-stream").send(data);
      },
    }),
    route({
      method: "PUT",
      url: "/api/agents/:id/files/*",
      id: "files.write",
      tag: "homes",
      summary: "Create or replace a file of the agent's home, by the host-side write rules",
      params: fileParams,
      rawBody: true,
      bodyLimit: FILE_LIMIT_BYTES,
      status: 204,
      errors: [
        "file.invalid_path",
        "file.link",
        "file.not_regular",
        "file.too_large",
        "access.denied",
        "generation.busy",
      ],
      handler: async ({ who, params, body }) => {
        await homes.writeFile(who, params.id, pathOf(params["*"]), body as Buffer);
      },
    }),
  ];
}
