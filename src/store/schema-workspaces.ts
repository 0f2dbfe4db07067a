// A part of the schema (re-exported by schema.ts, which would pass its bound of lines).
import { index, integer, jsonb, pgTable, primaryKey, text, uniqueIndex } from "drizzle-orm/pg-core";
import { at, belongsTo, created } from "./columns.js";
import { orgs, agents, conversations } from "./schema.js";

// ---- Workspaces and flows (issue 25) ------------------------------------------------------

/** A flow: a named set of agents of one organisation. */
export const flows = pgTable(
  "flows",
  {
    id: text("id").primaryKey(),
    orgId: belongsTo("org_id", () => orgs.id, "restrict"),
    name: text("name").notNull(),
    /** `contract`: made from a contract file (WARREN_CONTRACTS); the API does not change it. */
    source: text("source", { enum: ["api", "contract"] })
      .notNull()
      .default("api"),
    /** A contract flow's revision: the content hash of its folder as last loaded. */
    revision: text("revision"),
    /** A contract flow's file, relative to the contracts folder. */
    contractFile: text("contract_file"),
    createdAt: created(),
  },
  (t) => [index("flows_org_idx").on(t.orgId)],
);

/** The agents a flow names (an agent deleted leaves its flows). */
export const flowAgents = pgTable(
  "flow_agents",
  {
    flowId: belongsTo("flow_id", () => flows.id),
    agentId: belongsTo("agent_id", () => agents.id),
    /** A contract flow's agent: the permission bundle (policy.yaml) its spec stays within. */
    bundle: text("bundle"),
  },
  (t) => [primaryKey({ columns: [t.flowId, t.agentId] }), index("flow_agents_agent_idx").on(t.agentId)],
);

/**
 * One working of a flow, with its own shared workspace (STATE_ROOT/flows/<id>/workspace), which
 * belongs to the instance's own group (`gid`): the commands of the instance's agents carry it.
 * Ending an instance keeps its workspace.
 */
export const flowInstances = pgTable(
  "flow_instances",
  {
    id: text("id").primaryKey(),
    flowId: belongsTo("flow_id", () => flows.id, "restrict"),
    orgId: text("org_id").notNull(),
    name: text("name"),
    status: text("status", { enum: ["running", "ended"] }).notNull(),
    gid: integer("gid").notNull(),
    /** The workspace's size when last measured (after each run in it), MiB; null before. */
    workspaceMib: integer("workspace_mib"),
    /** A contract flow's revision when the instance started (it keeps it). */
    revision: text("revision"),
    /** What the instance was started with (a contract's `input`). */
    input: jsonb("input").$type<Record<string, unknown>>(),
    createdAt: created(),
    endedAt: at("ended_at"),
  },
  (t) => [
    uniqueIndex("flow_instances_gid_uq").on(t.gid),
    index("flow_instances_flow_idx").on(t.flowId, t.createdAt),
  ],
);

/** The conversations held inside a flow instance (their turns' /workspace is the instance's). */
export const flowInstanceConversations = pgTable(
  "flow_instance_conversations",
  {
    conversationId: text("conversation_id")
      .primaryKey()
      .references(() => conversations.id, { onDelete: "cascade" }),
    instanceId: belongsTo("instance_id", () => flowInstances.id),
    createdAt: created(),
  },
  (t) => [index("flow_instance_conversations_instance_idx").on(t.instanceId, t.createdAt)],
);

/** The runs made inside a flow instance (their /workspace was the instance's). */
export const flowInstanceRuns = pgTable(
  "flow_instance_runs",
  {
    runId: text("run_id").primaryKey(),
    instanceId: belongsTo("instance_id", () => flowInstances.id),
    agentId: text("agent_id").notNull(),
    createdAt: created(),
  },
  (t) => [index("flow_instance_runs_instance_idx").on(t.instanceId, t.createdAt)],
);
