// `warren runs logs [-f] RUN`: what a run printed, from its recorded output events; with -f it
// follows the run's event stream, printing output as it arrives, and ends when the run does.
import type { RunEvent, StreamEvent } from "../../sdk/index.js";
import { defineCommand } from "../command.js";
import { EXIT_OK, type Context } from "../context.js";

/** An output event's text and where it goes: stderr's to stderr, stdout's and a model's text to stdout. */
function outputOf(type: string, data: unknown): { to: "out" | "err"; text: string } | null {
  if (type !== "output" || typeof data !== "object" || data === null) return null;
  const d = data as { stream?: unknown; data?: unknown };
  if (typeof d.data !== "string") return null;
  return { to: d.stream === "stderr" ? "err" : "out", text: d.data };
}

async function print(ctx: Context, type: string, data: unknown): Promise<void> {
  const o = outputOf(type, data);
  if (o) await (o.to === "err" ? ctx.err(o.text) : ctx.out(o.text));
}

export const runLogs = defineCommand({
  summary: "print what a run printed so far; with -f follow its output as it arrives until the run ends",
  args: ["run"],
  options: [
    { name: "follow", short: "f", help: "keep printing the run's output as it arrives, until it ends" },
  ],
  parse: (i) => ({ id: i.arg("run"), follow: i.flag("follow") }),
  run: async (ctx, p) => {
    if (p.follow) {
      for await (const e of ctx.client.runs.stream(p.id)) {
        if (ctx.json) await ctx.out(`${JSON.stringify(e satisfies StreamEvent)}\n`);
        else await print(ctx, e.type, e.data);
      }
      return EXIT_OK;
    }
    const all: RunEvent[] = [];
    for (;;) {
      const last = all.at(-1);
      const page = await ctx.client.runs.events(p.id, last ? { after: last.id } : {});
      if (page.items.length === 0) break;
      all.push(...page.items);
    }
    if (ctx.json) return ctx.show({ items: all.filter((e) => e.type === "output") }, () => "");
    for (const e of all) await print(ctx, e.type, e.data);
    return EXIT_OK;
  },
});
