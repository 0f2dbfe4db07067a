import { z } from "zod";

/** The kinds of thing a name may stand for where an id goes. */
export const NAME_KINDS = ["org", "agent", "machine"] as const;

export const NameQuery = z
  .object({
    kind: z.enum(NAME_KINDS),
    name: z.string().min(1).max(200).describe("a name, or an id (answered as itself when visible)"),
    org_id: z
      .string()
      .max(200)
      .optional()
      .describe("look an agent or machine up in this organisation only (its id or its name)"),
  })
  .strict();

export const NameAnswer = z
  .object({
    kind: z.enum(NAME_KINDS),
    id: z.string(),
    name: z.string(),
    org_id: z.string().describe("the organisation it belongs to (for an organisation, its own id)"),
  })
  .meta({ id: "NameAnswer" });
