// A flow contract: one YAML file per flow (`<flow folder>/flow.yaml` in WARREN_CONTRACTS) that
// names the flow, its organisation, its agents with their workspace class and permission
// bundle, what an instance takes as input, and the files the flow ships for its agents (in
// its folder, beside the contract). The published JSON Schema (docs/flow-contract.schema.json)
// is generated from this one schema.
import { z } from "zod";
import { name } from "./common.js";

/** A class or bundle of policy.yaml, as a contract names it. */
const policyName = z
  .string()
  .regex(
    /^[a-z][a-z0-9_-]{0,63}$/,
    "must be lowercase letters, digits, _ and - (at most 64), starting with a letter",
  );

/** A file of the flow's folder: relative, no `..`, no hidden component. */
const shippedFile = z
  .string()
  .min(1)
  .max(512)
  .regex(
    /^(?!\/)(?!.*(^|\/)\.)[A-Za-z0-9_.\-/]+$/,
    "must be a relative path of the flow's folder (letters, digits, _ . - /; no component starting with a dot)",
  );

export const FlowContractAgent = z
  .object({
    name: name.describe("an agent of the organisation, by name"),
    workspace_class: policyName
      .nullable()
      .default(null)
      .describe("a class of policy.yaml's workspace_classes (the agent's spec must name the same, or none)"),
    permission_bundle: policyName.describe(
      "a bundle of policy.yaml's permission_bundles: the tools, hosts and secrets the agent's spec may ask for",
    ),
  })
  .strict();

export const FlowContractInput = z
  .object({
    type: z.enum(["string", "number", "boolean", "object", "array"]).default("string"),
    required: z.boolean().default(false),
    description: z.string().max(2000).default(""),
  })
  .strict();

export const FlowContract = z
  .object({
    name: name.describe("the flow's name in its organisation"),
    org: name.describe("the organisation, by name (or id)"),
    description: z.string().max(4000).default(""),
    agents: z
      .array(FlowContractAgent)
      .min(1, "name at least one agent")
      .max(64)
      .superRefine((agents, ctx) => {
        const seen = new Set<string>();
        for (const [i, a] of agents.entries()) {
          if (seen.has(a.name))
            ctx.addIssue({ code: "custom", path: [i, "name"], message: `"${a.name}" is listed twice` });
          seen.add(a.name);
        }
      }),
    input: z
      .record(
        z
          .string()
          .regex(/^[a-z][a-z0-9_]{0,63}$/, "must be lowercase letters, digits and _, starting with a letter"),
        FlowContractInput,
      )
      .default({})
      .describe("what an instance takes as input (POST /api/flows/:id/instances {input})"),
    files: z
      .array(shippedFile)
      .max(256)
      .default([])
      .describe("files of the flow's folder its agents read at /opt/warren/contracts/self/<file>"),
  })
  .strict()
  .meta({ id: "FlowContract", title: "warren flow contract" });

export type FlowContract = z.output<typeof FlowContract>;

/** The published JSON Schema of a contract file, as docs/flow-contract.schema.json holds it. */
export function flowContractJsonSchema(): string {
  const doc = z.toJSONSchema(FlowContract, { io: "input", target: "draft-2020-12" });
  return `${JSON.stringify(doc, null, 2)}\n`;
}
