// What the API shows of a conversation and its messages, and the names a turn's commit carries.
import type { Identity } from "../access/index.js";
import type { Conversation, ConversationMessage } from "../contract/types.js";
import { messageData } from "../records/index.js";
import type { schema } from "../store/index.js";
import type { BranchRow } from "./branches.js";

export type ConversationRow = typeof schema.conversations.$inferSelect;
type MessageRow = typeof schema.conversationMessages.$inferSelect;

/** Who someone is in a conversation: their identity and a name (the email's local part). */
export function authorOf(who: Identity): { user_id: string; email: string; name: string } {
  return { user_id: who.userId, email: who.email, name: who.email.split("@")[0] ?? who.email };
}

export function view(c: ConversationRow, b: BranchRow | null = null, pinned?: number | null): Conversation {
  return {
    id: c.id,
    agent_id: c.agentId,
    org_id: c.orgId,
    title: c.title,
    started_by: c.startedBy,
    persona_id: c.personaId,
    areas: c.areas,
    status: c.status,
    repo: c.repo,
    branch: b?.branch ?? null,
    base: b?.base ?? null,
    created_at: c.createdAt.toISOString(),
    last_message_at: c.lastMessageAt?.toISOString() ?? null,
    last_event_id: c.eventSeq,
    ...(pinned !== undefined ? { spec_version: pinned } : {}),
  };
}

/** A turn's commit message: the first line of the person's message, and their name. */
export function commitMessage(text: string, name: string): string {
  const first = (text.split("\n").find((l) => l.trim() !== "") ?? "").trim().slice(0, 72) || "(no text)";
  return `${first}\n\nAsked by ${name}`;
}

export function messageView(m: MessageRow): ConversationMessage {
  return messageData(m);
}
