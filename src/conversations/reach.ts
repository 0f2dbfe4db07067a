// Who reaches a conversation, and which folders its turns keep. A member who holds areas (a
// guest always does) talks (converse) in the conversations they started, and reads (never
// writes) another's only when everything it holds lies inside their own areas; owners and
// admins hold no areas and reach every conversation their role lets them.
import { eq } from "drizzle-orm";
import type { Access, Identity } from "../access/index.js";
import type { Agents } from "../agents/service.js";
import { narrow, standing, type Fence } from "../areas/fence.js";
import type { Areas } from "../areas/service.js";
import { WarrenError } from "../errors.js";
import type { Db } from "../store/index.js";
import { schema } from "../store/index.js";
import type { ConversationRow } from "./views.js";

export interface ReachOptions {
  db: Db;
  access: Access;
  agents: Pick<Agents, "load">;
  areas: Pick<Areas, "foldersOf" | "fenceOf">;
}

export class ConversationReach {
  constructor(private readonly o: ReachOptions) {}

  /** A conversation the caller may reach (any other is not found). */
  async load(who: Identity, id: string, perm: "read" | "inspect" | "write"): Promise<ConversationRow> {
    const [c] = await this.o.db.select().from(schema.conversations).where(eq(schema.conversations.id, id));
    if (!c) throw new WarrenError("not_found", "conversation was not found");
    if (await this.fenced(c.orgId, who)) {
      if (c.startedBy.user_id === who.userId) {
        await this.o.access.require(c.orgId, who, "converse", "conversation");
        return c;
      }
      await this.o.access.require(c.orgId, who, "read", "conversation");
      if (!(await this.within(c, who))) throw new WarrenError("not_found", "conversation was not found");
      if (perm === "write")
        throw new WarrenError(
          "access.denied",
          "you hold areas, so you talk only in the conversations you started; this one you may read",
        );
    }
    await this.o.access.require(c.orgId, who, perm, "conversation");
    return c;
  }

  /** Whether everything a conversation holds (its starter's areas, as they are now) lies inside the caller's. */
  async within(c: ConversationRow, who: Identity): Promise<boolean> {
    const theirs = await this.o.areas.foldersOf(c.orgId, c.areas);
    if (theirs === null || theirs.length === 0) return false;
    const mine = await this.o.areas.fenceOf(c.orgId, who);
    return theirs.every((f) => standing(f.split("/"), mine) === "inside");
  }

  /** Whether the caller holds areas in the organisation (owners and admins never do). */
  async fenced(orgId: string, who: Identity): Promise<boolean> {
    return (await this.o.access.areasOf(orgId, who)).length > 0;
  }

  /**
   * The folders a turn keeps: its starter's areas, narrowed by its persona's (never widened),
   * read now, so that an edit of an area reaches the next turn. null: the whole home.
   */
  async fenceOf(c: ConversationRow, persona: { area: string | null } | null): Promise<Fence> {
    const starter = await this.o.areas.foldersOf(c.orgId, c.areas);
    const homed = persona?.area ? await this.o.areas.foldersOf(c.orgId, [persona.area]) : null;
    return narrow(starter, homed);
  }

  /** The agent of a conversation, for the caller who reached the conversation. */
  async agentOf(who: Identity, c: ConversationRow) {
    const talks = c.startedBy.user_id === who.userId && (await this.fenced(c.orgId, who));
    return this.o.agents.load(who, c.agentId, talks ? "converse" : "inspect");
  }

  /** The repository's files are the caller's to see only inside their areas as they are now. */
  async insideAreas(c: ConversationRow, who: Identity, path: string): Promise<void> {
    if (standing(path.split("/"), await this.o.areas.fenceOf(c.orgId, who)) !== "inside")
      throw new WarrenError("area.refused", "that path is outside your areas");
  }
}
