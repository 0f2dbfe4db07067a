// `warren usage`: the disk an agent's home and its machine use, or what an organisation's runs
// (or one agent's) used over time (GET /api/orgs/:id/usage).
import type { Usage } from "../../sdk/index.js";
import type { OrgUsage } from "../../sdk/resources.js";
import { defineCommand, defineSingle } from "../command.js";
import { formatTable, mib } from "../format.js";

export function usageView(u: Usage): string {
  return formatTable(
    ["", "USED", "NAME"],
    [
      ["agent", mib(u.workspace_mib, u.max_workspace_mib), ""],
      [
        "machine",
        mib(u.machine.workspace_mib, u.machine.max_workspace_mib),
        `${u.machine.name} (${u.machine.id})`,
      ],
    ],
  );
}

const BARS = "▁▂▃▄▅▆▇█";

/** One character a step, from the lowest bar (nothing) to the highest (the most of the span). */
function sparkline(values: readonly number[]): string {
  const max = Math.max(0, ...values);
  return values.map((v) => (max === 0 ? BARS[0] : BARS[Math.round((v / max) * (BARS.length - 1))])).join("");
}

const usd = (x: number): string => `$${x.toFixed(x !== 0 && x < 0.01 ? 6 : 4)}`;

/** The steps that counted a run, their totals, and a line a figure over the whole span. */
function orgUsageView(u: OrgUsage): string {
  const rows = u.series
    .filter((p) => p.execs > 0)
    .map((p) => [
      p.at,
      String(p.tokens_in),
      String(p.tokens_out),
      usd(p.usd),
      p.cpu_seconds.toFixed(2),
      String(p.execs),
      p.disk_mib === null ? "-" : String(p.disk_mib),
    ]);
  const t = u.totals;
  rows.push([
    "total",
    String(t.tokens_in),
    String(t.tokens_out),
    usd(t.usd),
    t.cpu_seconds.toFixed(2),
    String(t.execs),
    "",
  ]);
  const table = formatTable(["AT", "TOKENS IN", "TOKENS OUT", "USD", "CPU S", "EXECS", "DISK MIB"], rows);
  const line = (name: string, pick: (p: OrgUsage["series"][number]) => number) =>
    `${name.padEnd(7)}${sparkline(u.series.map(pick))}`;
  const who = u.agent_id ? `agent ${u.agent_id}` : `organisation ${u.org_id}`;
  return [
    `${who}, ${u.since} to ${u.until}, steps of ${u.step_s} s`,
    table.trimEnd(),
    line("tokens", (p) => p.tokens_in + p.tokens_out),
    line("usd", (p) => p.usd),
    line("cpu", (p) => p.cpu_seconds),
    line("execs", (p) => p.execs),
    "",
  ].join("\n");
}

export const usage = defineSingle(
  "usage",
  "disk use of an agent's home",
  defineCommand({
    summary:
      "show the disk an agent's home and machine use; with --org, the tokens, dollars, CPU seconds and runs of the organisation (or of the agent) over time",
    args: ["agent?"],
    options: [
      { name: "org", value: "<org>", help: "the organisation (org_...): its runs' usage over time" },
      { name: "since", value: "<time>", help: "with --org: the start (ISO-8601; default: a day ago)" },
      { name: "until", value: "<time>", help: "with --org: the end (ISO-8601; default: now)" },
      { name: "step", value: "<step>", help: "with --org: the step (seconds, or 5m, 1h, 1d)" },
    ],
    parse: (i) => {
      const org = i.str("org");
      const agentId = i.optionalArg("agent");
      if (org === undefined) {
        if (!agentId) throw i.error("give an agent, or --org for an organisation's usage over time");
        for (const o of ["since", "until", "step"])
          if (i.str(o) !== undefined) throw i.error(`--${o} goes with --org`);
        return { agentId };
      }
      const query = { agent: agentId, since: i.str("since"), until: i.str("until"), step: i.str("step") };
      return { org, query };
    },
    run: async (ctx, p) => {
      if (p.org === undefined) {
        const answer = await ctx.client.agent(p.agentId).usage();
        return ctx.show(answer, () => usageView(answer));
      }
      const answer = await ctx.client.orgs.usage(p.org, p.query);
      return ctx.show(answer, () => orgUsageView(answer));
    },
  }),
);
