import { z } from "zod";

/** One decision of the egress proxy: a plain HTTP request or a tunnel, allowed or refused. */
export const EgressEvent = z
  .object({
    at: z.string().describe("when the request or tunnel began"),
    decision: z.enum(["allowed", "refused"]),
    reason: z.string().describe("one line: the allow entry that matched, or why it was refused"),
    host: z.string(),
    port: z.number(),
    method: z.string().optional().describe("plain HTTP only"),
    path: z.string().optional().describe("plain HTTP only"),
    bytes_out: z.number().describe("bytes the agent sent upstream (a request's body, a tunnel's bytes)"),
    bytes_in: z.number().describe("bytes that came back"),
    duration_ms: z.number(),
    run_id: z.string().optional().describe("the run going on for the agent then"),
  })
  .meta({ id: "EgressEvent" });

export const EgressList = z
  .object({
    items: z.array(EgressEvent),
    next: z.string().optional().describe("pass as `before` for the next (older) page; absent on the last"),
  })
  .meta({ id: "EgressList" });

export const EgressListQuery = z
  .object({
    decision: z.enum(["allowed", "refused"]).optional(),
    limit: z.coerce.number().int().min(1).max(500).default(50).describe("1-500, newest first"),
    before: z
      .string()
      .regex(/^[1-9]\d{0,15}$/, "must be the `next` of an earlier page")
      .optional()
      .describe("the `next` of the previous page"),
  })
  .strict();
