// `warren conversations ...`: an agent's threads, read, forked and closed, a branch's diff and its landing
// (talk in one with `warren chat`).
import type {
  Conversation,
  ConversationCreateRequest,
  ConversationDiff,
  ConversationForkRequest,
  ConversationMessage,
} from "../../sdk/index.js";
import { defineCommand, defineGroup, type Input } from "../command.js";
import { detailView, listView, short, visible, type Column } from "../format.js";
import { orgOption } from "../options.js";

export const conversationColumns: Column<Conversation>[] = [
  { header: "ID", value: (c) => c.id },
  { header: "STATUS", value: (c) => c.status },
  { header: "TITLE", value: (c) => short(c.title, 40) },
  { header: "STARTED BY", value: (c) => c.started_by.email },
  { header: "PERSONA", value: (c) => c.persona_id },
  { header: "LAST MESSAGE", value: (c) => c.last_message_at },
];

/** The thread as people read it: who said it and when, then what they said. */
export function threadView(items: readonly ConversationMessage[]): string {
  if (items.length === 0) return "no messages\n";
  return items
    .map((m) => {
      const who = m.role === "agent" ? "agent" : (m.author?.email ?? "user");
      const turn = m.run_id ? `  (${m.run_id})` : "";
      // the text as sent, indented, with control characters other than tabs made visible
      const body = m.text
        .split("\n")
        // eslint-disable-next-line no-control-regex
        .map((l) => `  ${l.replace(/[\u0000-\u0008\u000a-\u001f\u007f]/g, (c) => visible(c))}`)
        .join("\n");
      return `${who}  ${m.at}${turn}\n${body}\n`;
    })
    .join("\n");
}

const fileColumns: Column<ConversationDiff["files"][number]>[] = [
  { header: "STATUS", value: (f) => f.status },
  { header: "+", value: (f) => f.additions },
  { header: "-", value: (f) => f.deletions },
  { header: "PATH", value: (f) => f.path },
];

/** A branch's diff as people read it: where it stands, its files, then the patch as git wrote it. */
function diffView(d: ConversationDiff): string {
  const head = `${d.branch} onto ${d.base}: ${d.ahead} ahead, ${d.behind} behind\n`;
  if (d.files.length === 0) return `${head}no changes\n`;
  const more = d.patch_truncated ? "\n(the patch is cut short; read the rest in the repository)\n" : "";
  return `${head}\n${listView("files", fileColumns, d.files)}\n${d.patch}${more}`;
}

const conversationArg = (i: Input) => ({ id: i.arg("conversation") });

export const conversations = defineGroup(
  "conversations",
  "an agent's conversations (talk with `warren chat`)",
  {
    start: defineCommand({
      summary: "start a conversation with an agent; with --repo a branch conversation (see diff and land)",
      args: ["agent"],
      options: [
        orgOption,
        {
          name: "repo",
          value: "<repo>",
          help: "a git repository of the home; the conversation works on a branch of it",
        },
        { name: "title", value: "<text>", help: "the conversation's title" },
        { name: "persona", value: "<prs_id>", help: "the persona whose narrowing every turn keeps" },
      ],
      parse: (i) => {
        const body: ConversationCreateRequest = {};
        const [repo, title, persona] = [i.str("repo"), i.str("title"), i.str("persona")];
        if (repo !== undefined) body.repo = repo;
        if (title !== undefined) body.title = title;
        if (persona !== undefined) body.persona_id = persona;
        return { agentId: i.arg("agent"), orgId: i.str("org"), body };
      },
      run: async (ctx, p) => {
        const c = await ctx.client.agent(p.agentId).conversations.create(p.body);
        return ctx.show(c, () => detailView(c));
      },
    }),
    list: defineCommand({
      summary: "list an agent's conversations",
      args: ["agent"],
      parse: (i) => ({ agentId: i.arg("agent") }),
      run: async (ctx, p) => {
        const list = await ctx.client.agent(p.agentId).conversations.list();
        return ctx.show(list, () => listView("conversations", conversationColumns, list.items));
      },
    }),
    get: defineCommand({
      summary: "show a conversation",
      args: ["conversation"],
      parse: conversationArg,
      run: async (ctx, p) => {
        const c = await ctx.client.conversations.get(p.id);
        return ctx.show(c, () => detailView(c));
      },
    }),
    messages: defineCommand({
      summary: "print a conversation's messages, oldest first",
      args: ["conversation"],
      parse: conversationArg,
      run: async (ctx, p) => {
        const list = await ctx.client.conversations.messages(p.id);
        return ctx.show(list, () => threadView(list.items));
      },
    }),
    diff: defineCommand({
      summary: "show what a conversation's branch changed against its base: files, then the patch",
      args: ["conversation"],
      parse: conversationArg,
      run: async (ctx, p) => {
        const d = await ctx.client.conversations.diff(p.id);
        return ctx.show(d, () => diffView(d));
      },
    }),
    land: defineCommand({
      summary: "land a conversation's branch into its base (owners and admins)",
      args: ["conversation"],
      parse: conversationArg,
      run: async (ctx, p) => {
        const landed = await ctx.client.conversations.land(p.id);
        return ctx.show(landed, () => `landed ${p.id}: ${landed.commit}\n`);
      },
    }),
    fork: defineCommand({
      summary:
        "fork a conversation: a new one with its messages up to --at (default all), its persona, areas and version, and a branch holding its uncommitted changes",
      args: ["conversation"],
      options: [
        {
          name: "at",
          value: "<n|msg_id>",
          help: "the last message the fork keeps: its place (1 is the first) or its id",
        },
      ],
      parse: (i) => {
        const at = i.str("at");
        const body: ConversationForkRequest = {};
        if (at !== undefined) body.at_message = /^[0-9]+$/.test(at) ? Number(at) : at;
        return { id: i.arg("conversation"), body };
      },
      run: async (ctx, p) => {
        const c = await ctx.client.conversations.fork(p.id, p.body);
        return ctx.show(c, () => detailView(c));
      },
    }),
    close: defineCommand({
      summary: "close a conversation: it takes no more messages",
      args: ["conversation"],
      parse: conversationArg,
      run: async (ctx, p) => {
        const c = await ctx.client.conversations.close(p.id);
        return ctx.show(c, () => detailView(c));
      },
    }),
  },
);
