// The durable state. The same schema and migrations serve PGlite and PostgreSQL.
import { sql } from "drizzle-orm";
import {
  type AnyPgColumn,
  bigint,
  bigserial,
  boolean,
  check,
  index,
  integer,
  json,
  jsonb,
  pgTable,
  primaryKey,
  real,
  text,
  uniqueIndex,
} from "drizzle-orm/pg-core";
import { at, belongsTo, created, updated } from "./columns.js";
import { ROLES, RUN_STATUSES, TRUSTS } from "../contract/lists.js";

export const users = pgTable("users", {
  id: text("id").primaryKey(),
  email: text("email").notNull().unique(),
  createdAt: created(),
});

export const orgs = pgTable("orgs", {
  id: text("id").primaryKey(),
  name: text("name").notNull(),
  createdAt: created(),
});

export const memberships = pgTable(
  "memberships",
  {
    orgId: belongsTo("org_id", () => orgs.id),
    userId: belongsTo("user_id", () => users.id),
    role: text("role", { enum: ROLES }).notNull(),
    createdAt: created(),
  },
  (t) => [primaryKey({ columns: [t.orgId, t.userId] }), index("memberships_user_idx").on(t.userId)],
);

export const machines = pgTable(
  "machines",
  {
    id: text("id").primaryKey(),
    orgId: belongsTo("org_id", () => orgs.id, "restrict"),
    name: text("name").notNull(),
    maxWorkspaceMib: integer("max_workspace_mib").notNull(),
    memoryMib: integer("memory_mib").notNull(),
    cpus: real("cpus").notNull(),
    trust: text("trust", { enum: TRUSTS }).notNull(),
    workspaceMib: integer("workspace_mib"),
    /** How long a command tree may hold the box at its pids or memory limit before it is stopped. */
    runawayAfterS: integer("runaway_after_s").notNull().default(60),
    /** Its own image on oci and kubernetes (null: the boxes' image); schema-environments.ts. */
    image: text("image"),
    /** Capabilities the owner turned on: the host's GPU devices, a container engine in the box. */
    gpu: boolean("gpu").notNull().default(false),
    nestedEngine: boolean("nested_engine").notNull().default(false),
    /** The environment's last good revision (0: the base alone). */
    envRevision: integer("env_revision").notNull().default(0),
    /** The revision the running box's commands see (null: no box started since it was recorded). */
    boxEnvRevision: integer("box_env_revision"),
    state: text("state", { enum: ["stopped", "starting", "running", "paused"] })
      .notNull()
      .default("stopped"),
    stateReason: text("state_reason").notNull().default("created"),
    stateChangedAt: at("state_changed_at").notNull().defaultNow(),
    createdAt: created(),
  },
  (t) => [index("machines_org_idx").on(t.orgId)],
);

/** What happened to a machine's box (a runaway command stopped, ...), newest last. */
export const machineEvents = pgTable(
  "machine_events",
  {
    id: bigserial("id", { mode: "number" }).primaryKey(),
    machineId: belongsTo("machine_id", () => machines.id),
    type: text("type").notNull(),
    at: at("at").notNull().defaultNow(),
    detail: text("detail").notNull(),
    data: jsonb("data").notNull(),
  },
  (t) => [index("machine_events_machine_idx").on(t.machineId, t.id)],
);

export const agents = pgTable(
  "agents",
  {
    id: text("id").primaryKey(),
    orgId: belongsTo("org_id", () => orgs.id, "restrict"),
    machineId: belongsTo("machine_id", () => machines.id, "restrict"),
    name: text("name").notNull(),
    slot: integer("slot").notNull(),
    maxWorkspaceMib: integer("max_workspace_mib").notNull(),
    workspaceMib: integer("workspace_mib"),
    sandboxPolicy: jsonb("sandbox_policy"),
    /** The agent's current spec version (agent_specs), or null: kind command, nothing more. */
    specVersion: integer("spec_version"),
    createdAt: created(),
  },
  (t) => [
    uniqueIndex("agents_machine_slot_uq").on(t.machineId, t.slot),
    index("agents_org_idx").on(t.orgId),
    check("agents_slot_range", sql`${t.slot} >= 0 AND ${t.slot} < 400`),
  ],
);

/** An agent's specs (kind, model, instructions, tools, tool policy, limits): a version never changes. */
export const agentSpecs = pgTable(
  "agent_specs",
  {
    agentId: belongsTo("agent_id", () => agents.id),
    version: integer("version").notNull(),
    spec: jsonb("spec").notNull(),
    createdAt: created(),
  },
  (t) => [primaryKey({ columns: [t.agentId, t.version] })],
);

/** Every egress decision of an agent's commands: a request or tunnel allowed or refused (src/egress). */
export const egressEvents = pgTable(
  "egress_events",
  {
    id: bigserial("id", { mode: "number" }).primaryKey(),
    agentId: belongsTo("agent_id", () => agents.id),
    runId: text("run_id"),
    at: at("at").notNull(),
    decision: text("decision", { enum: ["allowed", "refused"] }).notNull(),
    reason: text("reason").notNull(),
    host: text("host").notNull(),
    port: integer("port").notNull(),
    method: text("method"),
    path: text("path"),
    bytesOut: bigint("bytes_out", { mode: "number" }).notNull(),
    bytesIn: bigint("bytes_in", { mode: "number" }).notNull(),
    durationMs: integer("duration_ms").notNull(),
  },
  (t) => [
    index("egress_events_agent_idx").on(t.agentId, t.id),
    index("egress_events_agent_decision_idx").on(t.agentId, t.decision, t.id),
  ],
);

export const guilds = pgTable(
  "guilds",
  {
    id: text("id").primaryKey(),
    orgId: belongsTo("org_id", () => orgs.id),
    name: text("name").notNull(),
    createdAt: created(),
  },
  (t) => [index("guilds_org_idx").on(t.orgId)],
);

export const guildAgents = pgTable(
  "guild_agents",
  {
    guildId: belongsTo("guild_id", () => guilds.id),
    agentId: belongsTo("agent_id", () => agents.id),
  },
  (t) => [primaryKey({ columns: [t.guildId, t.agentId] })],
);

/** Runs outlive their agent: no foreign key to agents, so deleting an agent keeps its records. */
export const runs = pgTable(
  "runs",
  {
    id: text("id").primaryKey(),
    orgId: text("org_id").notNull(),
    agentId: text("agent_id").notNull(),
    machineId: text("machine_id").notNull(),
    kind: text("kind").notNull(),
    status: text("status", {
      enum: RUN_STATUSES,
    }).notNull(),
    statusReason: text("status_reason"),
    argv: jsonb("argv").$type<string[]>().notNull(),
    inputBytes: integer("input_bytes").notNull().default(0),
    timeoutS: integer("timeout_s").notNull(),
    exitCode: integer("exit_code"),
    signal: text("signal"),
    output: text("output").notNull().default(""),
    outputTruncated: boolean("output_truncated").notNull().default(false),
    receipt: json("receipt"), // json, not jsonb: it keeps the receipt's fields in the order written
    /** An agent run's spec version, and what it used (tokens, dollars, steps, tool calls). */
    specVersion: integer("spec_version"),
    usage: jsonb("usage"),
    createdAt: created(),
    startedAt: at("started_at"),
    endedAt: at("ended_at"),
    /** When the organisation's retention deleted the run's output and trace (src/records/retention.ts). */
    outputDeletedAt: at("output_deleted_at"),
  },
  (t) => [index("runs_agent_idx").on(t.agentId, t.createdAt), index("runs_status_idx").on(t.status)],
);

export const runEvents = pgTable(
  "run_events",
  {
    id: bigserial("id", { mode: "number" }).primaryKey(),
    runId: belongsTo("run_id", () => runs.id),
    type: text("type").notNull(),
    at: at("at").notNull().defaultNow(),
    data: jsonb("data").notNull(),
  },
  (t) => [index("run_events_run_idx").on(t.runId, t.id)],
);

/**
 * Secrets: the value sealed under the master key (src/secrets/crypto.ts), never plaintext.
 * An alias holds no value of its own: it names the secret whose value it carries.
 */
export const secrets = pgTable(
  "secrets",
  {
    id: text("id").primaryKey(),
    orgId: belongsTo("org_id", () => orgs.id),
    name: text("name").notNull(),
    description: text("description").notNull().default(""),
    sealed: text("sealed"),
    aliasOf: text("alias_of").references((): AnyPgColumn => secrets.id, { onDelete: "cascade" }),
    /**
     * env: reaches commands as a variable; model: a provider key only the model gateway reads;
     * egress: commands see a marker, the egress proxy puts the value in requests to its hosts.
     */
    use: text("use", { enum: ["env", "model", "tool", "egress"] })
      .notNull()
      .default("env"),
    /**
     * Use model: the hosts (`host` or `host:port`) its value may be sent to; empty: only the
     * official API host of the provider of the model that names it. An alias has none of its
     * own (it takes those of the secret it names).
     */
    hosts: text("hosts")
      .array()
      .notNull()
      .default(sql`'{}'::text[]`),
    /** The agent that stored it from its box (secret_store), or null for an operator's. */
    storedByAgent: text("stored_by_agent"),
    createdAt: created(),
    updatedAt: updated(),
  },
  (t) => [
    uniqueIndex("secrets_org_name_uq").on(t.orgId, t.name),
    index("secrets_alias_idx").on(t.aliasOf),
    check("secrets_value_or_alias", sql`(${t.sealed} IS NULL) <> (${t.aliasOf} IS NULL)`),
    check("secrets_use", sql`${t.use} IN ('env', 'model', 'tool', 'egress')`),
  ],
);

/** Who a secret reaches: its organisation, a guild or an agent. */
export const secretGrants = pgTable(
  "secret_grants",
  {
    secretId: belongsTo("secret_id", () => secrets.id),
    scope: text("scope", { enum: ["org", "guild", "agent"] }).notNull(),
    targetId: text("target_id").notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.secretId, t.scope, t.targetId] }),
    index("secret_grants_target_idx").on(t.scope, t.targetId),
  ],
);

/**
 * Personas of an agent: a named narrowing of its conversations' turns (tools and secrets a
 * subset of the agent's, extra instructions, the area it is homed in). Never a widening.
 */
export const personas = pgTable(
  "personas",
  {
    id: text("id").primaryKey(),
    orgId: text("org_id").notNull(),
    agentId: belongsTo("agent_id", () => agents.id),
    name: text("name").notNull(),
    instructions: text("instructions").notNull().default(""),
    area: text("area"),
    /** null: every tool of the agent; else the names of the tools it keeps. */
    tools: jsonb("tools").$type<string[] | null>(),
    /** null: every secret that reaches the agent; else the names of those it keeps. */
    secrets: jsonb("secrets").$type<string[] | null>(),
    createdAt: created(),
  },
  (t) => [index("personas_agent_idx").on(t.agentId)],
);

/**
 * Conversations: a thread of turns with one agent. `eventSeq` is the last id given to one of
 * its events: each event takes the next one under the conversation's row lock, so the order
 * of ids is the order in which they were committed (conversation_events).
 */
export const conversations = pgTable(
  "conversations",
  {
    id: text("id").primaryKey(),
    orgId: text("org_id").notNull(),
    agentId: belongsTo("agent_id", () => agents.id),
    title: text("title").notNull().default(""),
    startedBy: jsonb("started_by").$type<{ user_id: string; email: string; name: string }>().notNull(),
    personaId: text("persona_id"),
    areas: jsonb("areas").$type<string[]>().notNull(),
    repo: text("repo"),
    status: text("status", { enum: ["open", "closed"] })
      .notNull()
      .default("open"),
    eventSeq: bigint("event_seq", { mode: "number" }).notNull().default(0),
    createdAt: created(),
    lastMessageAt: at("last_message_at"),
  },
  (t) => [index("conversations_agent_idx").on(t.agentId, t.createdAt)],
);

/** What people see of a conversation: the person's messages and the agent's answers. */
export const conversationMessages = pgTable(
  "conversation_messages",
  {
    id: text("id").primaryKey(),
    conversationId: belongsTo("conversation_id", () => conversations.id),
    role: text("role", { enum: ["user", "agent"] }).notNull(),
    text: text("text").notNull(),
    author: jsonb("author").$type<{ user_id: string; email: string; name: string } | null>(),
    runId: text("run_id"),
    at: at("at").notNull().defaultNow(),
  },
  (t) => [index("conversation_messages_conv_idx").on(t.conversationId, t.at)],
);

/**
 * A conversation's turns: each is a run of the agent (runs.id), its author as it was when the
 * message was sent, and how it ended for the conversation (interrupted: its box or the server
 * stopped under it).
 */
export const conversationTurns = pgTable(
  "conversation_turns",
  {
    runId: text("run_id").primaryKey(),
    conversationId: belongsTo("conversation_id", () => conversations.id),
    messageId: text("message_id").notNull(),
    personaId: text("persona_id"),
    author: jsonb("author").$type<{ user_id: string; email: string; name: string }>().notNull(),
    interrupted: boolean("interrupted").notNull().default(false),
    createdAt: created(),
  },
  (t) => [index("conversation_turns_conv_idx").on(t.conversationId, t.createdAt)],
);

/**
 * The model history of a conversation, appended and never rewritten: the person's messages,
 * the model's answers with their tool calls, and the tools' answers, in order (`seq`).
 */
export const conversationTranscript = pgTable(
  "conversation_transcript",
  {
    id: bigserial("id", { mode: "number" }).primaryKey(),
    conversationId: belongsTo("conversation_id", () => conversations.id),
    runId: text("run_id").notNull(),
    message: jsonb("message").notNull(),
    at: at("at").notNull().defaultNow(),
  },
  (t) => [index("conversation_transcript_conv_idx").on(t.conversationId, t.id)],
);

/** Every event of a conversation (its messages and every event of its turns), by `seq`. */
export const conversationEvents = pgTable(
  "conversation_events",
  {
    conversationId: belongsTo("conversation_id", () => conversations.id),
    seq: bigint("seq", { mode: "number" }).notNull(),
    runId: text("run_id"),
    type: text("type").notNull(),
    at: at("at").notNull().defaultNow(),
    data: jsonb("data").notNull(),
  },
  (t) => [primaryKey({ columns: [t.conversationId, t.seq] })],
);

// the schema's other parts, one file a feature
export * from "./schema-artifacts.js";
export * from "./schema-areas.js";
export * from "./schema-versions.js";
export * from "./schema-schedules.js";
export * from "./schema-workspaces.js";
export * from "./schema-budgets.js";
export * from "./schema-suspensions.js";
export * from "./schema-egress.js";
export * from "./schema-connections.js";
export * from "./schema-github.js";
export * from "./schema-environments.js";
export * from "./schema-moves.js";
