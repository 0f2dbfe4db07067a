import { z } from "zod";
import { idOf, items, MAX_MIB, mibField, name } from "./common.js";
import { SandboxPolicy } from "./policy.js";
import { AgentKind, ModelSpec, RunLimits, ToolSpec, MAX_TOOLS } from "./spec.js";

/** The spec's fields as a request may give them (POST: all optional; PATCH: what changes). */
export const specFields = {
  kind: AgentKind.optional(),
  model: ModelSpec.nullable().optional(),
  instructions: z
    .string()
    .max(256 * 1024)
    .optional()
    .describe("Markdown; the assistant's system prompt (a template: see docs/agents.md)"),
  tools: z.array(ToolSpec).max(MAX_TOOLS, `at most ${MAX_TOOLS} tools`).optional(),
  tool_policy: z
    .string()
    .max(256 * 1024)
    .optional()
    .describe("Cedar policies, validated when saved; empty: every tool call is denied"),
  limits: RunLimits.optional(),
  workspace_class: z
    .string()
    .nullable()
    .optional()
    .describe("a class of the policy file's workspace_classes (the scope of /workspace); null: none"),
  memory: z.boolean().optional().describe("false: a per-agent /workspace is fresh for each run"),
};

/** The spec's fields as an answer carries them (an agent, one of its versions). */
export const specAnswer = {
  kind: AgentKind,
  model: ModelSpec.nullable(),
  instructions: z.string(),
  tools: z.array(ToolSpec),
  tool_policy: z.string(),
  limits: RunLimits,
};

export const Agent = z
  .object({
    id: z.string(),
    org_id: z.string(),
    machine_id: z.string(),
    name: z.string(),
    slot: z.number().describe("the agent's index on its machine"),
    uid: z.number(),
    home: z.string().describe("/home/<agent id>"),
    ports: z.object({ first: z.number(), last: z.number() }),
    max_workspace_mib: z.number(),
    workspace_mib: z.number().nullable().describe("null before the first measurement"),
    sandbox_policy: SandboxPolicy,
    ...specAnswer,
    workspace_class: z.string().nullable(),
    memory: z.boolean(),
    spec_version: z
      .number()
      .nullable()
      .describe("the agent's current spec version (versions never change); null: never given a spec"),
    created_at: z.string(),
    warnings: z.array(z.string()).optional(),
  })
  .meta({ id: "Agent" });
export const AgentList = items(Agent, "AgentList");

export const AgentCreateRequest = z
  .object({
    org_id: idOf("org"),
    machine_id: idOf("mch"),
    name,
    max_workspace_mib: mibField(MAX_MIB).optional(),
    ...specFields,
  })
  .strict()
  .meta({ id: "AgentCreateRequest" });

export const AgentUpdateRequest = z
  .object({
    name: name.optional(),
    max_workspace_mib: mibField(MAX_MIB).optional(),
    sandbox_policy: SandboxPolicy.optional(),
    eval_gate: z
      .string()
      .min(1)
      .max(64)
      .nullable()
      .optional()
      .describe(
        "an evaluation suite's name: making a version current then needs a passed evaluation by it; null: off",
      ),
    ...specFields,
  })
  .strict()
  .meta({ id: "AgentUpdateRequest" });

export const AgentListQuery = z
  .object({ org_id: idOf("org").optional(), machine_id: idOf("mch").optional() })
  .strict();

export const Guild = z
  .object({ id: z.string(), org_id: z.string(), name: z.string(), agent_ids: z.array(z.string()) })
  .meta({ id: "Guild" });
export const GuildList = items(Guild, "GuildList");
export const GuildCreateRequest = z
  .object({ org_id: idOf("org"), name })
  .strict()
  .meta({ id: "GuildCreateRequest" });
export const GuildAgentRequest = z
  .object({ agent_id: idOf("agt") })
  .strict()
  .meta({ id: "GuildAgentRequest" });
