// The wire shapes of usage over time: what an organisation's runs (or one agent's) used, from
// their receipts, in steps of equal length.
import { z } from "zod";
import { idOf } from "./common.js";

/** The most steps one answer holds. */
export const USAGE_MAX_STEPS = 1000;

export const UsageQuery = z
  .object({
    since: z.iso
      .datetime({ offset: true })
      .optional()
      .describe("the start (ISO-8601, included); default: a day before `until`"),
    until: z.iso.datetime({ offset: true }).optional().describe("the end (ISO-8601, excluded); default: now"),
    step: z
      .string()
      .regex(
        /^[1-9][0-9]{0,9}[smhd]?$/,
        "must be a whole number of seconds, or one with s, m, h or d (5m, 1h, 1d)",
      )
      .optional()
      .describe(
        `the length of a step: seconds, or 5m, 1h, 1d; default: what cuts the span into 60 steps; at most ${USAGE_MAX_STEPS} steps`,
      ),
    agent: idOf("agt").optional().describe("only this agent's runs"),
  })
  .strict();

const figures = {
  tokens_in: z.number().describe("model tokens in, of the runs that ended in the step"),
  tokens_out: z.number().describe("model tokens out"),
  usd: z.number().describe("model dollars"),
  cpu_seconds: z.number().describe("CPU seconds of the runs' commands"),
  execs: z.number().int().describe("runs that ended (each a receipt)"),
};

const UsagePoint = z
  .object({
    at: z.string().describe("the step's start"),
    ...figures,
    disk_mib: z
      .number()
      .nullable()
      .describe(
        "the homes' disk after the step's runs (an agent's largest; of an organisation, the sum of each agent's); null: no run measured it",
      ),
  })
  .meta({ id: "UsagePoint" });

const UsageTotals = z.object(figures).meta({ id: "UsageTotals" });

export const OrgUsage = z
  .object({
    org_id: z.string(),
    agent_id: z.string().nullable(),
    since: z.string(),
    until: z.string(),
    step_s: z.number().int(),
    series: z.array(UsagePoint),
    totals: UsageTotals,
  })
  .meta({ id: "OrgUsage" });

export type OrgUsage = z.infer<typeof OrgUsage>;
export type UsageQuery = z.infer<typeof UsageQuery>;
