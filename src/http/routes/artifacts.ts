// The artifact store for people: the Markdown view (a laptop or phone reads current notes
// without the app), writes, memory's revisions, and the access lists of notes and collections.
import { z } from "zod";
import type { Artifacts } from "../../artifacts/index.js";
import {
  AccessList,
  ArtifactList,
  ArtifactListQuery,
  ArtifactReadQuery,
  ArtifactWritten,
} from "../../contract/artifacts.js";
import { idOf } from "../../contract/common.js";
import { WarrenError } from "../../errors.js";
import { route, type AnyRoute } from "../route.js";

const pathParams = z.object({ id: idOf("org"), "*": z.string().min(1).max(1024) });
/** A write's body: the content's bytes, at most 1 MiB (and some room for the limit's own check). */
const BODY_LIMIT = 1024 * 1024 + 1;

const utf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });
function textOf(body: unknown): string {
  if (!Buffer.isBuffer(body)) return "";
  try {
    return utf8.decode(body);
  } catch {
    throw new WarrenError("request.invalid", "body: an artifact is UTF-8 text, and this is not", {
      field: "body",
    });
  }
}

const TYPES = {
  memory: "text/markdown; charset=utf-8",
  note: "text/markdown; charset=utf-8",
  script: "text/plain; charset=utf-8",
  record: "application/json; charset=utf-8",
} as const;

export function artifactRoutes(artifacts: Artifacts): AnyRoute[] {
  return [
    route({
      method: "GET",
      url: "/api/orgs/:id/artifacts",
      id: "artifacts.list",
      tag: "artifacts",
      summary: "List the organisation's artifacts (notes, memories, scripts, records) under a prefix",
      params: z.object({ id: idOf("org") }),
      query: ArtifactListQuery,
      response: ArtifactList,
      handler: async ({ who, params, query }) => ({
        items: await artifacts.list(who, params.id, query.prefix),
      }),
    }),
    route({
      method: "GET",
      url: "/api/orgs/:id/artifacts/*",
      id: "artifacts.read",
      tag: "artifacts",
      summary:
        "Read an artifact's current content (Markdown, a script's text, or JSON for a record); ?revisions lists its revisions ({items: [{revision, by, at, bytes}]}, every one of a memory); ?revision=N reads an earlier revision of a memory",
      produces: "text/markdown",
      params: pathParams,
      query: ArtifactReadQuery,
      errors: ["request.invalid", "not_found"],
      handler: async ({ who, params, query, reply }) => {
        const path = params["*"];
        if (query.revisions !== undefined) {
          const items = await artifacts.revisions(who, params.id, path);
          return reply.code(200).type("application/json; charset=utf-8").send(JSON.stringify({ items }));
        }
        if (query.revision !== undefined) {
          const text = await artifacts.revision(who, params.id, path, query.revision);
          return reply.code(200).type(TYPES.memory).send(text);
        }
        const a = await artifacts.read(who, params.id, path);
        return reply.code(200).type(TYPES[a.kind]).send(a.content);
      },
    }),
    route({
      method: "PUT",
      url: "/api/orgs/:id/artifacts/*",
      id: "artifacts.write",
      tag: "artifacts",
      summary:
        "Create or replace an artifact with the body as its content (a record's body is JSON); a memory's old revision is kept",
      params: pathParams,
      rawBody: true,
      bodyLimit: BODY_LIMIT,
      response: ArtifactWritten,
      errors: ["request.invalid", "not_found", "access.denied", "request.too_large"],
      handler: async ({ who, params, body }) => artifacts.write(who, params.id, params["*"], textOf(body)),
    }),
    route({
      method: "GET",
      url: "/api/orgs/:id/access/*",
      id: "artifacts.access.get",
      tag: "artifacts",
      summary: "The access list of a note or a collection (collections/<name>)",
      params: pathParams,
      response: AccessList,
      errors: ["request.invalid", "not_found"],
      handler: async ({ who, params }) => ({
        grants: await artifacts.getAccess(who, params.id, params["*"]),
      }),
    }),
    route({
      method: "PUT",
      url: "/api/orgs/:id/access/*",
      id: "artifacts.access.set",
      tag: "artifacts",
      summary:
        "Replace the access list of a note or a collection: rows for the organisation, a guild or an agent, each read, write or none",
      params: pathParams,
      body: AccessList,
      response: AccessList,
      errors: ["request.invalid", "not_found", "access.denied"],
      handler: async ({ who, params, body }) => ({
        grants: await artifacts.setAccess(who, params.id, params["*"], body.grants),
      }),
    }),
  ];
}
