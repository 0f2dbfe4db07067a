// `warren guilds ...`: named groups of agents.
import type { Guild, GuildMessage } from "../../sdk/index.js";
import { defineCommand, defineGroup, type Input } from "../command.js";
import { detailView, listView, short, type Column } from "../format.js";
import { orgOption } from "../options.js";

export const guildColumns: Column<Guild>[] = [
  { header: "ID", value: (g) => g.id },
  { header: "NAME", value: (g) => g.name },
  { header: "ORG", value: (g) => g.org_id },
  { header: "AGENTS", value: (g) => g.agent_ids.length },
];

const messageColumns: Column<GuildMessage>[] = [
  { header: "ID", value: (m) => m.id },
  { header: "STATUS", value: (m) => m.status },
  { header: "TO", value: (m) => m.targets.map((t) => t.agent_id).join(",") || (m.status_reason ?? "") },
  { header: "TEXT", value: (m) => short(m.text, 40) },
  { header: "AT", value: (m) => m.created_at },
];

const guildArg = (i: Input) => ({ id: i.arg("guild") });

type Membership = { id: string; agentId: string };

/** Putting an agent in a guild or taking it out: a guild, an agent, the call, and what is said. */
const membership = (summary: string, call: "addAgent" | "removeAgent", said: (p: Membership) => string) =>
  defineCommand<Membership>({
    summary,
    args: ["guild", "agent"],
    parse: (i) => ({ id: i.arg("guild"), agentId: i.arg("agent") }),
    run: async (ctx, p) => {
      await ctx.client.guilds[call](p.id, p.agentId);
      return ctx.show(undefined, () => `${said(p)}\n`);
    },
  });

export const guilds = defineGroup("guilds", "named groups of agents", {
  create: defineCommand({
    summary: "create a guild: a named group of agents",
    args: ["name"],
    options: [orgOption],
    required: ["org"],
    parse: (i) => ({ body: { org_id: i.need("org"), name: i.arg("name") } }),
    run: async (ctx, p) => {
      const guild = await ctx.client.guilds.create(p.body);
      return ctx.show(guild, () => detailView(guild));
    },
  }),
  list: defineCommand({
    summary: "list guilds (of one organisation with --org)",
    options: [orgOption],
    parse: (i) => ({ orgId: i.str("org") }),
    run: async (ctx, p) => {
      const list = await ctx.client.guilds.list({ org_id: p.orgId });
      return ctx.show(list, () => listView("guilds", guildColumns, list.items));
    },
  }),
  get: defineCommand({
    summary: "show a guild and its agents",
    args: ["guild"],
    parse: guildArg,
    run: async (ctx, p) => {
      const guild = await ctx.client.guilds.get(p.id);
      return ctx.show(guild, () => detailView(guild));
    },
  }),
  delete: defineCommand({
    summary: "delete a guild (its agents stay)",
    args: ["guild"],
    parse: guildArg,
    run: async (ctx, p) => {
      await ctx.client.guilds.delete(p.id);
      return ctx.show(undefined, () => `deleted ${p.id}\n`);
    },
  }),
  "add-agent": membership("add an agent to a guild", "addAgent", (p) => `added ${p.agentId} to ${p.id}`),
  send: defineCommand({
    summary: "send a message to a guild: a turn of its least busy agent (all of them with --fan-out)",
    args: ["guild", "text"],
    options: [{ name: "fan-out", help: "to every agent of the guild that holds conversations" }],
    parse: (i) => ({ id: i.arg("guild"), text: i.arg("text"), fanOut: i.flag("fan-out") }),
    run: async (ctx, p) => {
      const m = await ctx.client.guilds.send(p.id, { text: p.text, ...(p.fanOut ? { fan_out: true } : {}) });
      return ctx.show(m, () => `${m.id} ${m.status}\n`);
    },
  }),
  messages: defineCommand({
    summary: "a guild's messages, newest first, and where each went",
    args: ["guild"],
    parse: guildArg,
    run: async (ctx, p) => {
      const list = await ctx.client.guilds.messages(p.id);
      return ctx.show(list, () => listView("messages", messageColumns, list.items));
    },
  }),
  "remove-agent": membership(
    "take an agent out of a guild",
    "removeAgent",
    (p) => `removed ${p.agentId} from ${p.id}`,
  ),
});
