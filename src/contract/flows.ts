// Flows and their instances: a named set of agents, and one working of it with its own
// shared /workspace (kept when the instance ends).
import { z } from "zod";
import { idOf, items, name } from "./common.js";
import { AgentRunCreateRequest, CommandRunCreateRequest } from "./runs.js";

export const Flow = z
  .object({
    id: z.string(),
    org_id: z.string(),
    name: z.string(),
    agent_ids: z.array(z.string()),
    source: z
      .enum(["api", "contract"])
      .describe("contract: made from a contract file (WARREN_CONTRACTS); the API does not change it"),
    revision: z
      .string()
      .nullable()
      .describe("a contract flow's revision as last loaded (sha256 of its contract and files); null for api"),
    created_at: z.string(),
  })
  .meta({ id: "Flow" });
export const FlowList = items(Flow, "FlowList");

export const FlowCreateRequest = z
  .object({
    org_id: idOf("org"),
    name,
    agent_ids: z.array(idOf("agt")).min(1, "name at least one agent").max(64),
  })
  .strict()
  .meta({ id: "FlowCreateRequest" });

export const FlowUpdateRequest = z
  .object({
    name: name.optional(),
    agent_ids: z.array(idOf("agt")).min(1, "name at least one agent").max(64).optional(),
  })
  .strict()
  .meta({ id: "FlowUpdateRequest" });

const ContractProblem = z
  .object({ file: z.string(), line: z.number().int(), reason: z.string() })
  .meta({ id: "FlowContractProblem" });

export const FlowReloadResponse = z
  .object({
    flows: z
      .array(
        z.object({
          id: z.string(),
          org_id: z.string(),
          name: z.string(),
          revision: z.string(),
          file: z.string().describe("the contract file, relative to the contracts folder"),
        }),
      )
      .describe("the flows made or brought to their contracts (of the organisations the caller reads)"),
    skipped: z
      .array(ContractProblem)
      .describe("contracts that hold but name what the database does not have (an unknown agent...)"),
  })
  .meta({ id: "FlowReloadResponse" });

export const FlowConversationCreateRequest = z
  .object({
    agent_id: idOf("agt").describe("one of the flow's agents"),
    title: z.string().max(200).optional(),
    persona_id: idOf("prs").optional(),
  })
  .strict()
  .meta({ id: "FlowConversationCreateRequest" });

export const FlowListQuery = z.object({ org_id: idOf("org") }).strict();

export const FlowWorkspace = z
  .object({
    path: z.literal("/workspace").describe("where the instance's agents see it"),
    host_path: z.string().describe("where it is kept on the server's host (STATE_ROOT/flows/<id>/workspace)"),
    labels: z.record(z.string(), z.string()).describe("how recovery and reset find it"),
    mib: z
      .number()
      .int()
      .nullable()
      .describe(
        "its size when last measured (after each run in it), MiB; null before; capped at WORKSPACE_MAX_MIB",
      ),
  })
  .meta({ id: "FlowWorkspace" });

export const FlowInstance = z
  .object({
    id: z.string(),
    flow_id: z.string(),
    org_id: z.string(),
    name: z.string().nullable(),
    status: z.enum(["running", "ended"]),
    revision: z.string().nullable().describe("the flow's revision when the instance started (it keeps it)"),
    input: z.record(z.string(), z.unknown()).describe("what the instance was started with"),
    agent_ids: z.array(z.string()),
    workspace: FlowWorkspace,
    run_ids: z.array(z.string()).describe("the runs made inside the instance, oldest first"),
    conversation_ids: z
      .array(z.string())
      .describe("the conversations held inside the instance, oldest first"),
    created_at: z.string(),
    ended_at: z.string().nullable(),
  })
  .meta({ id: "FlowInstance" });
export const FlowInstanceList = items(FlowInstance, "FlowInstanceList");

export const FlowInstanceCreateRequest = z
  .object({
    name: name.optional(),
    input: z
      .record(z.string().max(64), z.unknown())
      .optional()
      .describe("a contract flow's input: its contract's `input` says what it takes"),
  })
  .strict()
  .meta({ id: "FlowInstanceCreateRequest" });

const agentId = { agent_id: idOf("agt").describe("one of the flow's agents") };

/** The body of POST /api/agents/:id/runs, and the agent of the flow that makes the run. */
export const FlowRunCreateRequest = z
  .discriminatedUnion("kind", [
    CommandRunCreateRequest.safeExtend(agentId),
    AgentRunCreateRequest.extend(agentId),
  ])
  .meta({ id: "FlowRunCreateRequest" });
