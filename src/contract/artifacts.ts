// The artifact store's wire shapes: artifacts under display paths, memory's revisions, and
// the access lists of notes and collections.
import { z } from "zod";
import { idOf, items } from "./common.js";

export const ArtifactItem = z
  .object({
    path: z.string().describe("the display path, relative to the organisation"),
    kind: z.enum(["memory", "note", "script", "record"]),
    bytes: z.number(),
    revision: z.number(),
    updated_at: z.string(),
  })
  .meta({ id: "ArtifactItem" });
export const ArtifactList = items(ArtifactItem, "ArtifactList");

export const ArtifactListQuery = z
  .object({ prefix: z.string().max(1024).default("").describe("only the paths that start with it") })
  .strict();

export const ArtifactReadQuery = z
  .object({
    revisions: z.string().optional().describe("present: the artifact's revisions instead of its content"),
    revision: z.coerce
      .number()
      .int()
      .min(1)
      .optional()
      .describe("the text of one earlier revision of a memory (operators only)"),
  })
  .strict();

export const ArtifactWritten = z
  .object({ path: z.string(), revision: z.number() })
  .meta({ id: "ArtifactWritten" });

export const ArtifactGrant = z
  .object({
    scope: z.enum(["org", "guild", "agent"]),
    id: z.union([idOf("org"), idOf("gld"), idOf("agt")]),
    mode: z.enum(["read", "write", "none"]),
  })
  .strict()
  .meta({ id: "ArtifactGrant" });

export const AccessList = z
  .object({ grants: z.array(ArtifactGrant).max(200) })
  .strict()
  .meta({ id: "AccessList" });
