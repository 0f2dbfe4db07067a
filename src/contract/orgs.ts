import { z } from "zod";
import { areaName } from "./areas.js";
import { items, name, Role } from "./common.js";

export const Org = z
  .object({
    id: z.string(),
    name: z.string(),
    role: Role.describe("the caller's role in it"),
    areas: z
      .array(z.string())
      .describe(
        "the areas the caller holds in it: none, the whole home as the role allows; any, a fenced seat (files inside them and conversations, never configuration, commands or terminals)",
      ),
  })
  .meta({ id: "Org" });
export const OrgList = items(Org, "OrgList");
export const OrgCreateRequest = z.object({ name }).strict().meta({ id: "OrgCreateRequest" });
export const OrgUpdateRequest = z.object({ name }).strict().meta({ id: "OrgUpdateRequest" });

export const Member = z
  .object({
    user_id: z.string(),
    email: z.string(),
    role: Role,
    areas: z
      .array(z.string())
      .describe("the areas the member holds (none: the whole home, as the role allows)"),
  })
  .meta({ id: "Member" });
export const MemberList = items(Member, "MemberList");
export const MemberSetRequest = z
  .object({
    email: z
      .string()
      .trim()
      .toLowerCase()
      .regex(/^[^\s@<>,;"]{1,128}@[^\s@<>,;"]{1,255}$/, "must be an email address"),
    role: Role,
    areas: z
      .array(areaName)
      .max(64)
      .optional()
      .describe(
        "the areas the member holds: an editor or guest needs one (area.required), an owner or admin can hold none (area.not_allowed); absent: those it holds stay",
      ),
  })
  .strict()
  .meta({ id: "MemberSetRequest" });

export const MemberRevision = z
  .object({
    user_id: z.string(),
    email: z.string(),
    revision: z.number().describe("counts each member's changes from 1"),
    role: Role.nullable().describe("the role after this revision; null: it removed the member"),
    areas: z.array(z.string()).describe("the areas held after this revision"),
    by: z.string().describe("the email of who made the change"),
    at: z.string(),
  })
  .meta({ id: "MemberRevision" });
export const MemberRevisionList = items(MemberRevision, "MemberRevisionList");
export const MemberRevisionQuery = z
  .object({ email: z.string().trim().toLowerCase().max(400).optional() })
  .strict()
  .meta({ id: "MemberRevisionQuery" });
