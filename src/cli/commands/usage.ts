// `warren usage`: the disk an agent's home and its machine use.
import type { Usage } from "../../sdk/index.js";
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

export const usage = defineSingle(
  "usage",
  "disk use of an agent's home",
  defineCommand({
    summary: "show the disk an agent's home and machine use",
    args: ["agent"],
    parse: (i) => ({ agentId: i.arg("agent") }),
    run: async (ctx, p) => {
      const answer = await ctx.client.agent(p.agentId).usage();
      return ctx.show(answer, () => usageView(answer));
    },
  }),
);
