// Areas and tiers: the wire contract of docs/api.md, "Areas and tiers".
import { z } from "zod";
import { idOf, items } from "./common.js";

/** An area's name: lowercase letters, digits, "-" and "_", at most 64. */
export const areaName = z
  .string()
  .regex(
    /^[a-z0-9][a-z0-9_-]{0,63}$/,
    "must be 1-64 lowercase letters, digits, - or _ (a letter or digit first)",
  );

export const Area = z
  .object({
    name: z.string(),
    folders: z.array(z.string()).describe("folders of an agent's home, relative to it"),
    revision: z.number().describe("the area's latest revision (1 for a new area)"),
  })
  .meta({ id: "Area" });
export const AreaList = items(Area, "AreaList");

export const AreaPutRequest = z
  .object({
    folders: z
      .array(z.string().max(1024))
      .max(64)
      .describe("1 to 64 folders relative to the home: plain names joined by /, no . or .."),
  })
  .strict()
  .meta({ id: "AreaPutRequest" });

export const AreaRevision = z
  .object({
    revision: z.number(),
    folders: z
      .array(z.string())
      .nullable()
      .describe("the folders after this revision; null: it deleted the area"),
    by: z.string().describe("the email of who made the change"),
    at: z.string(),
  })
  .meta({ id: "AreaRevision" });
export const AreaRevisionList = items(AreaRevision, "AreaRevisionList");

export const areaParams = z.object({ id: idOf("org"), name: areaName });
