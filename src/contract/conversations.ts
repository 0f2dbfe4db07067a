// Conversations (threads of turns with one agent) and personas (a named narrowing of an
// agent's turns). The wire contract of docs/api.md, "Conversations" and "Personas".
import { z } from "zod";
import { idOf, items, name } from "./common.js";

/** Who sent a message: the identity as it was when the message was sent. */
export const ConversationAuthor = z
  .object({ user_id: z.string(), email: z.string(), name: z.string() })
  .meta({ id: "ConversationAuthor" });

export const Conversation = z
  .object({
    id: z.string(),
    agent_id: z.string(),
    org_id: z.string(),
    title: z.string(),
    started_by: ConversationAuthor,
    persona_id: z.string().nullable(),
    areas: z.array(z.string()).describe("the areas of the person who started it, kept for its whole life"),
    status: z.enum(["open", "closed"]),
    repo: z.string().nullable(),
    branch: z.string().nullable().optional(),
    base: z.string().nullable().optional(),
    created_at: z.string(),
    last_message_at: z.string().nullable(),
    spec_version: z
      .number()
      .nullable()
      .optional()
      .describe(
        "the version its turns run, kept for its whole life, when the canary took it at its start; null: the agent's current version at each turn",
      ),
    last_event_id: z
      .number()
      .describe("the id of its latest event (0: none yet); the stream resumes after one"),
  })
  .meta({ id: "Conversation" });
export const ConversationList = items(Conversation, "ConversationList");

export const ConversationCreateRequest = z
  .object({
    title: z.string().max(200).optional(),
    persona_id: idOf("prs").optional().describe("the persona whose narrowing every turn keeps"),
    repo: z.string().max(500).optional(),
    routing_key: z
      .string()
      .min(1)
      .max(256)
      .optional()
      .describe(
        "the key of the canary's sticky routing (as a run's); default the conversation's id. A conversation the canary takes keeps its version for its whole life",
      ),
  })
  .strict()
  .meta({ id: "ConversationCreateRequest" });

// The text's own limit (256 KiB) is checked by the service to answer run.input_too_large; the
// schema only bounds what it will even read.
export const ConversationForkRequest = z
  .object({
    at_message: z
      .union([z.number().int(), idOf("msg")])
      .optional()
      .describe(
        "the last message the fork keeps: its place (1 is the first) or its id; absent: all of them. One that names no message of the conversation is 400 request.invalid (field at_message)",
      ),
  })
  .strict()
  .meta({ id: "ConversationForkRequest" });

export const ConversationMessageRequest = z
  .object({
    text: z
      .string()
      .min(1, "must not be empty")
      .max(4 * 1024 * 1024)
      .describe("the person's message: at most 256 KiB (413 run.input_too_large)"),
  })
  .strict()
  .meta({ id: "ConversationMessageRequest" });

export const ConversationMessage = z
  .object({
    id: z.string(),
    role: z.enum(["user", "agent"]),
    text: z.string().describe("redacted of every secret that reaches the agent"),
    author: ConversationAuthor.nullable().optional().describe("a user message: who sent it"),
    run_id: z.string().nullable().optional().describe("the turn (a run) the message started or answered"),
    at: z.string(),
  })
  .meta({ id: "ConversationMessage" });
export const ConversationMessageList = items(ConversationMessage, "ConversationMessageList");

export const ConversationMessageCreated = z
  .object({ message: ConversationMessage, run_id: z.string() })
  .meta({ id: "ConversationMessageCreated" });

/** One event of a conversation, as the stream and the list give it. */
export const ConversationEvent = z
  .object({
    id: z.number().describe("strictly increasing within the conversation, in the order events were stored"),
    type: z.string(),
    run_id: z.string().nullable(),
    at: z.string(),
    data: z.unknown(),
  })
  .meta({ id: "ConversationEvent" });

export const ConversationEventsQuery = z
  .object({
    after: z.coerce
      .number()
      .int()
      .min(0)
      .optional()
      .describe("only events after this event id (as the Last-Event-ID header; the header wins)"),
  })
  .strict();

const toolName = z.string().regex(/^[a-z][a-z0-9_]{0,47}$/, "must be a tool's name");
const secretName = z
  .string()
  .regex(/^[A-Z_][A-Z0-9_]*$/, "must be a secret's name")
  .max(128);

export const PersonaCreateRequest = z
  .object({
    name,
    instructions: z
      .string()
      .max(64 * 1024)
      .optional()
      .describe("appended to the agent's instructions in every turn of its conversations"),
    area: z.string().min(1).max(100).optional().describe("the area (a named set of folders) it is homed in"),
    tools: z
      .array(toolName)
      .max(64)
      .optional()
      .describe("the agent's tools it keeps (absent: all of them); naming one the agent lacks is 400"),
    secrets: z
      .array(secretName)
      .max(64)
      .optional()
      .describe(
        "the names of the secrets reaching the agent that its commands keep (absent: all of them); naming one that does not reach the agent is 400",
      ),
  })
  .strict()
  .meta({ id: "PersonaCreateRequest" });

export const Persona = z
  .object({
    id: z.string(),
    agent_id: z.string(),
    name: z.string(),
    instructions: z.string(),
    area: z.string().nullable(),
    tools: z.array(z.string()).nullable().describe("null: every tool of the agent"),
    secrets: z.array(z.string()).nullable().describe("null: every secret that reaches the agent"),
    created_at: z.string(),
  })
  .meta({ id: "Persona" });
export const PersonaList = items(Persona, "PersonaList");

export const ConversationDiff = z
  .object({
    base: z.string().describe("the branch it was made from, and lands into"),
    branch: z.string().describe("warren/<conversation id>"),
    ahead: z.number().describe("commits on the branch not on its base"),
    behind: z.number().describe("commits on the base not on the branch"),
    files: z.array(
      z.object({
        path: z.string(),
        status: z.string().describe("added, modified, deleted, renamed or copied"),
        additions: z.number(),
        deletions: z.number(),
      }),
    ),
    patch: z.string().describe("the unified diff from the merge base (at most 1 MiB)"),
    patch_truncated: z.boolean(),
  })
  .meta({ id: "ConversationDiff" });

export const ConversationLanded = z
  .object({ landed: z.literal(true), commit: z.string() })
  .meta({ id: "ConversationLanded" });
