// The wire shapes of an organisation's budgets: dollars and tokens per day and per month, for
// the organisation and per agent, enforced by the model gateway before every call.
import { z } from "zod";

const Period = z.enum(["day", "month"]).describe("a UTC day, or a UTC month");

export const BudgetLimit = z
  .object({
    agent_id: z
      .string()
      .min(1)
      .nullable()
      .optional()
      .describe("the agent the limit is of; absent or null: the organisation as a whole"),
    period: Period,
    max_usd: z.number().positive().finite().nullable().optional().describe("dollars per period"),
    max_tokens: z.number().int().positive().nullable().optional().describe("tokens (in and out) per period"),
  })
  .strict()
  .refine((l) => l.max_usd != null || l.max_tokens != null, {
    message: "give max_usd, max_tokens or both",
  });

export const BudgetsRequest = z
  .object({
    items: z
      .array(BudgetLimit)
      .max(1000)
      .describe("every limit of the organisation (those not named are removed); [] removes them all"),
  })
  .strict()
  .meta({ id: "BudgetsRequest" });

export const Budgets = z
  .object({
    org_id: z.string(),
    items: z.array(
      z.object({
        agent_id: z.string().nullable(),
        period: Period,
        max_usd: z.number().nullable(),
        max_tokens: z.number().nullable(),
        period_start: z.string().describe("the period now: 2026-12-02 (a day) or 2026-12 (a month)"),
        used_usd: z.number(),
        used_tokens: z.number(),
        reserved_usd: z.number().describe("held by calls under way"),
        reserved_tokens: z.number(),
        updated_by: z.string(),
        updated_at: z.string(),
      }),
    ),
  })
  .meta({ id: "Budgets" });

export type BudgetsBody = z.infer<typeof BudgetsRequest>;
export type BudgetsView = z.infer<typeof Budgets>;
