// `warren egress AGENT`: what the agent's commands reached (or tried to) through the egress proxy.
import type { EgressEvent } from "../../sdk/index.js";
import { defineCommand, defineSingle } from "../command.js";
import { listView, short, type Column } from "../format.js";

export const egressColumns: Column<EgressEvent>[] = [
  { header: "AT", value: (e) => e.at },
  { header: "DECISION", value: (e) => e.decision },
  { header: "TARGET", value: (e) => `${e.host}:${e.port}` },
  { header: "REQUEST", value: (e) => (e.method ? short(`${e.method} ${e.path ?? ""}`, 40) : "tunnel") },
  { header: "OUT", value: (e) => e.bytes_out },
  { header: "IN", value: (e) => e.bytes_in },
  { header: "MS", value: (e) => e.duration_ms },
  { header: "REASON", value: (e) => short(e.reason, 60) },
];

export const egress = defineSingle(
  "egress",
  "an agent's connections out of its box",
  defineCommand({
    summary: "list the agent's egress decisions, newest first",
    args: ["agent"],
    options: [
      { name: "refused", help: "only refused requests and tunnels" },
      { name: "allowed", help: "only allowed ones" },
      { name: "limit", value: "<n>", help: "at most this many (1-500, default 50)" },
      { name: "before", value: "<next>", help: "the page after an earlier answer's next" },
    ],
    parse: (i) => {
      const refused = i.flag("refused");
      const allowed = i.flag("allowed");
      if (refused && allowed) throw i.error("give --refused or --allowed, not both");
      return {
        agentId: i.arg("agent"),
        decision: refused ? ("refused" as const) : allowed ? ("allowed" as const) : undefined,
        limit: i.whole("limit"),
        before: i.str("before"),
      };
    },
    run: async (ctx, p) => {
      const page = await ctx.client.agent(p.agentId).egress({
        ...(p.decision ? { decision: p.decision } : {}),
        ...(p.limit !== undefined ? { limit: p.limit } : {}),
        ...(p.before !== undefined ? { before: p.before } : {}),
      });
      return ctx.show(page, () => {
        const list = listView("egress decisions", egressColumns, page.items);
        return page.next ? `${list}more: --before ${page.next}\n` : list;
      });
    },
  }),
);
