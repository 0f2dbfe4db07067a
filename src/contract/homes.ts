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
    }),
  })
  .meta({ id: "Usage" });

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
