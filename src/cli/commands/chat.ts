// `warren chat AGENT`: a conversation with an agent in this terminal. Each line read is a
// message; the agent's answer streams from the conversation's events as it comes, its tool
// calls noted on stderr. stdin may be a pipe: one message a line, and the command ends after
// the answer to the last line. Under --json every event of this session's turns is printed as
// one JSON line instead.
import { createInterface } from "node:readline";
import type { Conversation, StreamEvent, WarrenClient } from "../../sdk/index.js";
import { defineCommand, defineSingle } from "../command.js";
import { EXIT_FAILED, EXIT_OK, LocalError, type Context } from "../context.js";
import { TurnView } from "./turns.js";

interface ChatParams {
  agentId: string;
  persona: string | undefined;
  conversationId: string | undefined;
  title: string | undefined;
}

/** A persona by id (`prs_...`) or by its name among the agent's. */
export async function personaId(client: WarrenClient, agentId: string, given: string): Promise<string> {
  if (/^prs_/.test(given)) return given;
  const list = await client.agent(agentId).personas.list();
  const found = list.items.find((p) => p.name === given);
  if (!found) {
    const names = list.items.map((p) => p.name).join(", ");
    throw new LocalError(
      "persona.unknown",
      `${agentId} has no persona named "${given}"${names ? ` (it has: ${names})` : " (it has none)"}`,
    );
  }
  return found.id;
}

async function conversationFor(ctx: Context, p: ChatParams): Promise<Conversation> {
  const client = ctx.client;
  if (p.conversationId !== undefined) {
    const c = await client.conversations.get(p.conversationId);
    if (c.agent_id !== p.agentId)
      throw new LocalError(
        "conversation.other_agent",
        `${c.id} is a conversation with ${c.agent_id}, not ${p.agentId}`,
      );
    if (c.status === "closed")
      throw new LocalError(
        "conversation.closed",
        `${c.id} is closed; start a new one without --conversation`,
      );
    return c;
  }
  const persona = p.persona !== undefined ? await personaId(client, p.agentId, p.persona) : undefined;
  return client.agent(p.agentId).conversations.create({
    ...(persona !== undefined ? { persona_id: persona } : {}),
    ...(p.title !== undefined ? { title: p.title } : {}),
  });
}

/** The events of the conversation from `after` on, kept in order for the turns that wait for theirs. */
class Inbox {
  private readonly events: StreamEvent[] = [];
  private wake: (() => void) | undefined;
  private failure: Error | undefined;
  private ended = false;

  constructor(source: AsyncIterable<StreamEvent>) {
    void (async () => {
      try {
        for await (const e of source) {
          this.events.push(e);
          this.wake?.();
        }
      } catch (err) {
        this.failure = err instanceof Error ? err : new Error("the event stream failed", { cause: err });
      } finally {
        this.ended = true;
        this.wake?.();
      }
    })();
  }

  /** Yields each event from index `from` on as it arrives. */
  async *from(from: number): AsyncGenerator<StreamEvent, void> {
    for (let i = from; ;) {
      while (i < this.events.length) {
        const e = this.events[i++];
        if (e) yield e;
      }
      if (this.failure) throw this.failure;
      if (this.ended) return;
      await new Promise<void>((resolve) => (this.wake = resolve));
    }
  }
}

/** Posts one message and prints its turn until its end; answers whether the turn succeeded. */
async function turn(ctx: Context, conversation: Conversation, inbox: Inbox, line: string): Promise<boolean> {
  const sent = await ctx.client.conversations.send(conversation.id, line);
  const view = new TurnView(sent.run_id);
  let exit: { status: string; reason: string | null } | undefined;
  for await (const e of inbox.from(0)) {
    if (!view.owns(e)) continue;
    const s = view.step(e);
    if (ctx.json) await ctx.out(`${JSON.stringify(e)}\n`);
    else {
      if (s.answer) await ctx.out(s.answer);
      if (s.note) await ctx.err(s.note);
    }
    if (s.exit) {
      exit = s.exit;
      break;
    }
  }
  if (!exit)
    throw new LocalError("stream.incomplete", "the conversation's event stream ended before the turn did");
  if (ctx.json) return exit.status === "succeeded";
  if (!view.answered) {
    // the whole answer is the turn's agent message, stored by the time the turn ended
    const messages = await ctx.client.conversations.messages(conversation.id);
    const answer = messages.items.findLast((m) => m.role === "agent" && m.run_id === sent.run_id);
    if (answer) {
      view.answered = true;
      const rest = view.final(answer.text);
      if (rest) await ctx.out(rest);
    }
  }
  if (view.printed !== "" && !view.printed.endsWith("\n")) await ctx.out("\n");
  if (exit.status !== "succeeded")
    await ctx.err(
      `warren: the turn ${sent.run_id} ended ${exit.status}${exit.reason ? ` (${exit.reason})` : ""}\n`,
    );
  return exit.status === "succeeded";
}

export const chat = defineSingle(
  "chat",
  "talk with an agent",
  defineCommand<ChatParams>({
    summary:
      "talk with an agent: each line is a message and the answer streams as it comes; from a pipe, one message a line, ending after the last answer",
    args: ["agent"],
    options: [
      { name: "persona", value: "<name|id>", help: "start the conversation as one of the agent's personas" },
      { name: "conversation", value: "<conversation>", help: "continue this conversation (cnv_...)" },
      { name: "title", value: "<text>", help: "the new conversation's title" },
    ],
    parse: (i) => {
      const persona = i.str("persona");
      const conversationId = i.str("conversation");
      const title = i.str("title");
      if (conversationId !== undefined && (persona !== undefined || title !== undefined))
        throw i.error("a continued conversation keeps its persona and title: give --conversation alone");
      if (persona === "") throw i.error("--persona must not be empty");
      return { agentId: i.arg("agent"), persona, conversationId, title };
    },
    run: async (ctx, p) => {
      const conversation = await conversationFor(ctx, p);
      const tty = (ctx.io.stdin as { isTTY?: boolean }).isTTY === true;
      const how = tty ? "type a message and Enter; Ctrl-D ends" : "one message a line";
      if (!ctx.json)
        await ctx.err(
          `warren: conversation ${conversation.id} with ${p.agentId} (${how}; continue it later with --conversation ${conversation.id})\n`,
        );
      const stop = new AbortController();
      // from the conversation's latest event: only what this session's messages start is shown
      const inbox = new Inbox(
        ctx.client.conversations.events(conversation.id, {
          after: String(conversation.last_event_id),
          signal: stop.signal,
          timeoutMs: 0,
        }),
      );
      const lines = createInterface({ input: ctx.io.stdin, terminal: false, crlfDelay: Infinity });
      let failed = false;
      const prompt = () => (tty && !ctx.json ? ctx.err("you> ") : Promise.resolve());
      try {
        await prompt();
        for await (const raw of lines) {
          const line = raw.trimEnd();
          if (line.trim() !== "") {
            if (!(await turn(ctx, conversation, inbox, line))) failed = true;
          }
          await prompt();
        }
        if (tty && !ctx.json) await ctx.err("\n");
      } finally {
        lines.close();
        stop.abort();
      }
      return failed ? EXIT_FAILED : EXIT_OK;
    },
  }),
);
