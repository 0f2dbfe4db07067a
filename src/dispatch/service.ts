// Guild dispatch: a message to a guild is stored (queued) before it is answered, then its
// guild's dispatcher (one per guild with messages waiting, in this process) hands it to one
// of the guild's agents that hold conversations (the least busy, then in turn) or to all of
// them (fan_out), as a turn of each agent's conversation with the guild. Messages still
// queued when the server stopped are dispatched by the next one; a guild with no agent that
// can take a message keeps them queued, saying why, until one joins.
import { and, asc, desc, eq } from "drizzle-orm";
import type { Access, Identity } from "../access/index.js";
import type { Agents } from "../agents/service.js";
import type { GuildMessage } from "../contract/types.js";
import type { Conversations } from "../conversations/index.js";
import { WarrenError } from "../errors.js";
import { newId } from "../ids.js";
import type { Logger } from "../observability/log.js";
import type { AgentRunners } from "../runs/kinds.js";
import { planAgentRun } from "../runs/model-run.js";
import type { GenerationRegistry } from "../runs/registry.js";
import { MAX_INPUT_BYTES } from "../runs/service.js";
import type { Db } from "../store/index.js";
import { schema } from "../store/index.js";
import type { EventBus } from "../events/index.js";

type MessageRow = typeof schema.guildMessages.$inferSelect;
type Target = { agent_id: string; conversation_id: string; run_id: string };

export interface GuildDispatchOptions {
  db: Db;
  access: Access;
  agents: Pick<Agents, "load" | "specOf">;
  conversations: Pick<Conversations, "create" | "get" | "post">;
  runners: AgentRunners;
  registry: Pick<GenerationRegistry, "forAgent" | "waiters">;
  /** A queued message and an agent's joining wake the guild's dispatcher (told on the bus). */
  events: Pick<EventBus, "on" | "emit">;
  logger: Logger;
}

function view(m: MessageRow): GuildMessage {
  return {
    id: m.id,
    guild_id: m.guildId,
    text: m.text,
    fan_out: m.fanOut,
    status: m.status,
    status_reason: m.statusReason,
    targets: m.targets,
    author: m.author,
    created_at: m.createdAt.toISOString(),
    dispatched_at: m.dispatchedAt?.toISOString() ?? null,
  };
}

const messageOf = (err: unknown) => (err instanceof Error ? err.message : String(err));

export class GuildDispatch {
  readonly #o: GuildDispatchOptions;
  /** The dispatcher of each guild with messages waiting; `again`: look once more when it is done. */
  readonly #running = new Map<string, { again: boolean }>();
  /** The agent each guild's last single message went to (round robin among the least busy). */
  readonly #last = new Map<string, string>();
  #stopped = false;

  constructor(o: GuildDispatchOptions) {
    this.#o = o;
    o.events.on("guild.message_queued", (e) => this.wake(e.guildId));
    o.events.on("guild.joined", (e) => this.wake(e.guildId));
  }

  async #guild(who: Identity, id: string, perm: "read" | "write") {
    const [g] = await this.#o.db.select().from(schema.guilds).where(eq(schema.guilds.id, id));
    if (!g) throw new WarrenError("not_found", "guild was not found");
    await this.#o.access.require(g.orgId, who, perm, "guild");
    return g;
  }

  /** Queues a message to the guild (durably), and wakes its dispatcher. */
  async post(who: Identity, guildId: string, body: { text: string; fan_out?: boolean | undefined }) {
    const bytes = Buffer.byteLength(body.text, "utf8");
    if (bytes > MAX_INPUT_BYTES)
      throw new WarrenError(
        "run.input_too_large",
        `the message is ${bytes} bytes, above the ${MAX_INPUT_BYTES}-byte limit; put large text in a file and name it`,
      );
    const g = await this.#guild(who, guildId, "write");
    const [row] = await this.#o.db
      .insert(schema.guildMessages)
      .values({
        id: newId("gms"),
        guildId: g.id,
        orgId: g.orgId,
        text: body.text,
        fanOut: body.fan_out ?? false,
        author: { user_id: who.userId, email: who.email },
        status: "queued",
      })
      .returning();
    if (!row) throw new Error("guild message insert returned nothing");
    this.#o.events.emit("guild.message_queued", { guildId: g.id, messageId: row.id });
    return view(row);
  }

  /** The guild's messages, newest first. */
  async list(who: Identity, guildId: string): Promise<GuildMessage[]> {
    const g = await this.#guild(who, guildId, "read");
    const rows = await this.#o.db
      .select()
      .from(schema.guildMessages)
      .where(eq(schema.guildMessages.guildId, g.id))
      .orderBy(desc(schema.guildMessages.createdAt), desc(schema.guildMessages.id))
      .limit(500);
    return rows.map(view);
  }

  /** At boot: every guild with messages still queued gets its dispatcher. */
  async start(): Promise<void> {
    const rows = await this.#o.db
      .selectDistinct({ guildId: schema.guildMessages.guildId })
      .from(schema.guildMessages)
      .where(eq(schema.guildMessages.status, "queued"));
    for (const r of rows) this.wake(r.guildId);
  }

  stop(): void {
    this.#stopped = true;
  }

  /** Starts the guild's dispatcher, or has the one going on look again once it is done. */
  wake(guildId: string): void {
    if (this.#stopped) return;
    const running = this.#running.get(guildId);
    if (running) {
      running.again = true;
      return;
    }
    const state = { again: false };
    this.#running.set(guildId, state);
    void (async () => {
      try {
        do {
          state.again = false;
          await this.#drain(guildId);
        } while (state.again && !this.#stopped);
      } catch (err) {
        this.#o.logger.error({ err, guildId }, "a guild's dispatcher failed; its messages stay queued");
      } finally {
        this.#running.delete(guildId);
      }
    })();
  }

  /** Dispatches the guild's queued messages, oldest first, until none is left or none can go. */
  async #drain(guildId: string): Promise<void> {
    for (;;) {
      if (this.#stopped) return;
      const [m] = await this.#o.db
        .select()
        .from(schema.guildMessages)
        .where(and(eq(schema.guildMessages.guildId, guildId), eq(schema.guildMessages.status, "queued")))
        .orderBy(asc(schema.guildMessages.createdAt), asc(schema.guildMessages.id))
        .limit(1);
      if (!m) return;
      const who = { userId: m.author.user_id, email: m.author.email };
      const agents = await this.#candidates(guildId, who);
      if (agents.length === 0) {
        await this.#o.db
          .update(schema.guildMessages)
          .set({
            statusReason:
              "no agent of the guild can take a message (none, or none of a kind that holds conversations); it waits for one to join",
          })
          .where(eq(schema.guildMessages.id, m.id));
        return;
      }
      const picked = m.fanOut ? agents : [this.#pick(guildId, agents)];
      const targets: Target[] = [];
      let failure: string | null = null;
      for (const agentId of picked) {
        try {
          targets.push(await this.#deliver(guildId, agentId, who, m.text));
        } catch (err) {
          failure = `${agentId}: ${messageOf(err)}`;
        }
      }
      if (!m.fanOut && picked[0]) this.#last.set(guildId, picked[0]);
      await this.#o.db
        .update(schema.guildMessages)
        .set({
          status: targets.length > 0 ? "dispatched" : "failed",
          statusReason: failure,
          targets,
          dispatchedAt: new Date(),
        })
        .where(eq(schema.guildMessages.id, m.id));
    }
  }

  /** The guild's agents that hold conversations and that the author may message, by id. */
  async #candidates(guildId: string, who: Identity): Promise<string[]> {
    const members = await this.#o.db
      .select({ agentId: schema.guildAgents.agentId })
      .from(schema.guildAgents)
      .where(eq(schema.guildAgents.guildId, guildId))
      .orderBy(asc(schema.guildAgents.agentId));
    const out: string[] = [];
    for (const { agentId } of members) {
      try {
        const agent = await this.#o.agents.load(who, agentId, "write");
        const { spec, version } = await this.#o.agents.specOf(agent);
        planAgentRun(spec, version, this.#o.runners, undefined);
        out.push(agentId);
      } catch {
        // a command agent holds no conversation; an agent the author may not reach is not theirs to message
      }
    }
    return out;
  }

  /** The least busy agent (its run going on and those waiting); among equals, the next after the last one. */
  #pick(guildId: string, agents: string[]): string {
    const r = this.#o.registry;
    const load = (id: string) => (r.forAgent(id) ? 1 : 0) + r.waiters(id).length;
    const least = Math.min(...agents.map(load));
    const idle = agents.filter((a) => load(a) === least);
    const last = this.#last.get(guildId);
    return idle.find((a) => last !== undefined && a > last) ?? idle[0]!;
  }

  /** The message as a turn of the agent's conversation with the guild (made on first use). */
  async #deliver(guildId: string, agentId: string, who: Identity, text: string): Promise<Target> {
    const o = this.#o;
    const [known] = await o.db
      .select()
      .from(schema.guildConversations)
      .where(
        and(eq(schema.guildConversations.guildId, guildId), eq(schema.guildConversations.agentId, agentId)),
      );
    let conversationId = known?.conversationId;
    if (conversationId) {
      const c = await o.conversations.get(who, conversationId);
      if (c.status === "closed") conversationId = undefined;
    }
    if (!conversationId) {
      const [g] = await o.db.select().from(schema.guilds).where(eq(schema.guilds.id, guildId));
      const c = await o.conversations.create(who, agentId, { title: `guild ${g?.name ?? guildId}` });
      conversationId = c.id;
      await o.db
        .insert(schema.guildConversations)
        .values({ guildId, agentId, conversationId })
        .onConflictDoUpdate({
          target: [schema.guildConversations.guildId, schema.guildConversations.agentId],
          set: { conversationId },
        });
    }
    const posted = await o.conversations.post(who, conversationId, text);
    return { agent_id: agentId, conversation_id: conversationId, run_id: posted.run_id };
  }
}
