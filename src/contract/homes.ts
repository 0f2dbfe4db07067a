import { z } from "zod";

export const Usage = z
  .object({
    workspace_mib: z.number().nullable(),
    max_workspace_mib: z.number(),
    machine: z.object({
      id: z.string(),
      name: z.string(),
      workspace_mib: z.number().nullable(),
      max_workspace_mib: z.number(),
      reserved_mib: z
        .number()
        .describe("what the caps of every agent on the machine add up to, this one's included"),
      others_reserved_mib: z
        .number()
        .describe("what the other agents' caps reserve of the machine's disk cap"),
      unreserved_mib: z
        .number()
        .describe(
          "the machine's disk cap less what the other agents reserve, at least 0: the most this agent's cap may safely be",
        ),
      free_mib: z
        .number()
        .nullable()
        .describe(
          "the machine's disk cap less its folder as last measured (after a generation); null before",
        ),
    }),
  })
  .meta({ id: "Usage" });

export const FolderListing = z
  .object({
    path: z.string().describe('the folder, relative to the home ("" for the home itself)'),
    entries: z.array(
      z.object({
        name: z.string(),
        type: z.enum(["file", "folder", "link", "other"]).describe("a link is listed, never followed"),
        size_bytes: z.number(),
        modified_at: z.string(),
      }),
    ),
    truncated: z.boolean().describe("true when the folder holds more than the 1000 entries listed"),
  })
  .meta({ id: "FolderListing" });

export const FolderQuery = z
  .object({
    path: z
      .string()
      .max(4096)
      .default("")
      .describe("a folder of the home, relative to it or under /home/<agent id>; empty: the home"),
  })
  .strict();

export const Health = z
  .object({
    ok: z.boolean(),
    degraded: z
      .array(z.string())
      .optional()
      .describe("boot checks that failed and that the operator accepted (WARREN_ALLOW_DEGRADED)"),
  })
  .meta({ id: "Health" });

/** The OpenAPI document itself (served at /api/openapi.json). */
export const OpenApiDocument = z
  .looseObject({
    openapi: z.string(),
    info: z.object({ title: z.string(), version: z.string() }),
    paths: z.record(z.string(), z.unknown()),
  })
  .meta({ id: "OpenApiDocument" });
