// `warren runs logs [-f] RUN`: what a run printed, from its recorded output events; with -f it
// follows the run's event stream, printing output as it arrives, and ends when the run does.
import type { RunEvent, StreamEvent } from "../../sdk/index.js";
import { defineCommand } from "../command.js";
import { EXIT_OK, type Context } from "../context.js";
import { TurnView } from "./turns.js";

/**
 * Prints one event as `runs start --wait` does (TurnView): a command's stdout and stderr as they
 * came; an agent run's text once, each step on a line of its own, then only what its whole answer
 * adds (never the answer twice); tool calls as notes on stderr.
 */
async function print(ctx: Context, view: TurnView, type: string, data: unknown): Promise<void> {
  const s = view.step({ id: "", type, data, at: undefined, run_id: view.runId });
  if (s.answer) await ctx.out(s.answer);
  if (s.note) await ctx.err(s.note);
}

/** An agent's answer ends its line (a command's output is left as it printed it). */
async function ended(ctx: Context, view: TurnView): Promise<number> {
  if (!ctx.json && view.spoke && !view.printed.endsWith("\n")) await ctx.out("\n");
  return EXIT_OK;
}

export const runLogs = defineCommand({
  summary: "print what a run printed so far; with -f follow its output as it arrives until the run ends",
  args: ["run"],
  options: [
    { name: "follow", short: "f", help: "keep printing the run's output as it arrives, until it ends" },
  ],
  parse: (i) => ({ id: i.arg("run"), follow: i.flag("follow") }),
  run: async (ctx, p) => {
    const view = new TurnView(p.id);
    if (p.follow) {
      for await (const e of ctx.client.runs.stream(p.id)) {
        if (ctx.json) await ctx.out(`${JSON.stringify(e satisfies StreamEvent)}\n`);
        else await print(ctx, view, e.type, e.data);
      }
      return ended(ctx, view);
    }
    const all: RunEvent[] = [];
    for (;;) {
      const last = all.at(-1);
      const page = await ctx.client.runs.events(p.id, last ? { after: last.id } : {});
      if (page.items.length === 0) break;
      all.push(...page.items);
    }
    if (ctx.json) return ctx.show({ items: all.filter((e) => e.type === "output") }, () => "");
    for (const e of all) await print(ctx, view, e.type, e.data);
    return ended(ctx, view);
  },
});
