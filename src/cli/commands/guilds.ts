// `warren guilds ...`: named groups of agents.
import type { Guild } from "../../sdk/index.js";
import { defineCommand, defineGroup, type Input } from "../command.js";
import { detailView, listView, type Column } from "../format.js";
import { orgOption } from "../options.js";

export const guildColumns: Column<Guild>[] = [
  { header: "ID", value: (g) => g.id },
  { header: "NAME", value: (g) => g.name },
  { header: "ORG", value: (g) => g.org_id },
  { header: "AGENTS", value: (g) => g.agent_ids.length },
];

const guildArg = (i: Input) => ({ id: i.arg("guild") });
const guildAndAgent = (i: Input) => ({ id: i.arg("guild"), agentId: i.arg("agent") });

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
  "add-agent": defineCommand({
    summary: "add an agent to a guild",
    args: ["guild", "agent"],
    parse: guildAndAgent,
    run: async (ctx, p) => {
      await ctx.client.guilds.addAgent(p.id, p.agentId);
      return ctx.show(undefined, () => `added ${p.agentId} to ${p.id}\n`);
    },
  }),
  "remove-agent": defineCommand({
    summary: "take an agent out of a guild",
    args: ["guild", "agent"],
    parse: guildAndAgent,
    run: async (ctx, p) => {
      await ctx.client.guilds.removeAgent(p.id, p.agentId);
      return ctx.show(undefined, () => `removed ${p.agentId} from ${p.id}\n`);
    },
  }),
});
