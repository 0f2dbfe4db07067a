// `warren runs ...`: commands the server records, started now and read, waited for or cancelled later.
import { traceEntries, traceSummary, type Run, type RunEvent } from "../../sdk/index.js";
import { defineCommand, defineGroup, type Input } from "../command.js";
import { EXIT_FAILED, EXIT_OK, type Context } from "../context.js";
import { detailView, listView, short, type Column } from "../format.js";
import { commandOption, limitOptions, readLimits, readTarget, timeoutMsOption } from "../options.js";
import { targetBody } from "./exec.js";
import { runLogs } from "./run-logs.js";
import { TurnView } from "./turns.js";

export const runColumns: Column<Run>[] = [
  { header: "ID", value: (r) => r.id },
  { header: "STATUS", value: (r) => r.status },
  // an agent run has no argv: its kind says what ran
  { header: "COMMAND", value: (r) => (r.argv.length > 0 ? short(r.argv.join(" "), 40) : `(${r.kind})`) },
  { header: "EXIT", value: (r) => r.exit_code },
  { header: "STARTED", value: (r) => r.started_at },
  { header: "ENDED", value: (r) => r.ended_at },
];

export const eventColumns: Column<RunEvent>[] = [
  { header: "AT", value: (e) => e.at },
  { header: "TYPE", value: (e) => e.type },
  { header: "DATA", value: (e) => e.data },
];

/** A run's fields, then what it printed (as is) after a blank line. */
export function runView(run: Run): string {
  const head = detailView(run, ["output"]);
  if (run.output === null || run.output === undefined || run.output === "") return head;
  const tail = run.output.endsWith("\n") ? "" : "\n";
  return `${head}\noutput${run.output_truncated ? " (truncated)" : ""}:\n${run.output}${tail}`;
}

/** The exit code of `runs start --wait` for a run that ended. */
export function runExitCode(run: Run): number {
  if (run.status === "succeeded") return EXIT_OK;
  if (run.status === "timed_out") return 124;
  return run.exit_code !== null && run.exit_code > 0 ? Math.min(255, run.exit_code) : EXIT_FAILED;
}

/** After `runs start --wait`: the run's output (or its JSON; none again when `streamed` printed it), and its exit code. */
export async function finished(ctx: Context, run: Run, streamed = ""): Promise<number> {
  if (ctx.json) await ctx.printJson(run);
  else if (streamed) {
    if (!streamed.endsWith("\n")) await ctx.out("\n");
  } else if (run.output)
    // an agent's answer is text without a final newline; a command's output is printed as is
    await ctx.out(run.kind !== "command" && !run.output.endsWith("\n") ? `${run.output}\n` : run.output);
  if (!ctx.json && run.status !== "succeeded") {
    await ctx.err(
      `warren: run ${run.id} ended ${run.status}${run.status_reason ? ` (${run.status_reason})` : ""}\n`,
    );
  }
  return runExitCode(run);
}

const runArg = (i: Input) => ({ id: i.arg("run") });

/** A run's trace as a readable timeline: the time since its start, the event, what it says. */
export function traceView(run: Run, events: readonly RunEvent[]): string {
  const lines = traceEntries(events).map(
    (e) => `${`+${e.offset_s.toFixed(3)}s`.padStart(10)}  ${e.name.padEnd(11)} ${e.text}`,
  );
  return `${lines.join("\n")}\n\n${traceSummary(run)}\n`;
}

export const runs = defineGroup("runs", "recorded runs of commands", {
  start: defineCommand({
    summary:
      "start a recorded run: a command (after -- or --command), or the agent by its kind (--input only)",
    args: ["agent"],
    options: [
      commandOption,
      { name: "input", value: "<text>", help: "text that becomes /agent/input in the run" },
      {
        name: "input-file",
        value: "<file>",
        help: "a file that becomes /agent/input in the run (- for stdin)",
      },
      { name: "timeout-s", value: "<s>", help: "the run's time limit, in seconds" },
      ...limitOptions,
      { name: "wait", help: "wait for the run to end, print its output and exit with its code" },
      {
        name: "fail-if-busy",
        help: "refuse the run when its agent is busy or its organisation at its cap, instead of queueing it",
      },
    ],
    rest: true,
    parse: (i) => {
      const text = i.str("input");
      const file = i.str("input-file");
      if (text !== undefined && file !== undefined) throw i.error("give --input or --input-file, not both");
      // no command: the agent runs by its kind (assistant, claude-code, ...) on the input
      const agentRun = i.str("command") === undefined && i.rest.length === 0;
      if (agentRun && text === undefined && file === undefined)
        throw i.error('give the command after -- or as --command, or an agent\'s input with --input "..."');
      return {
        agentId: i.arg("agent"),
        target: agentRun ? null : readTarget(i),
        input: text !== undefined ? { text } : file !== undefined ? { file } : undefined,
        timeoutS: i.whole("timeout-s"),
        limits: readLimits(i),
        wait: i.flag("wait"),
        failIfBusy: i.flag("fail-if-busy"),
      };
    },
    run: async (ctx, p) => {
      let input: string | undefined;
      if (p.input && "text" in p.input) input = p.input.text;
      else if (p.input) input = (await ctx.readLocal(p.input.file, "the input file")).toString("utf8");
      const timeout = p.timeoutS !== undefined ? { timeout_s: p.timeoutS } : {};
      const wait = p.failIfBusy ? { wait: false } : {};
      const run = await ctx.client.runs.create(
        p.agentId,
        p.target === null
          ? { kind: "agent", input: input ?? "", ...timeout, ...wait }
          : {
              ...targetBody(p.target),
              ...(input !== undefined ? { input } : {}),
              ...timeout,
              ...(p.limits !== undefined ? { limits: p.limits } : {}),
              ...wait,
            },
      );
      if (!p.wait) return ctx.show(run, () => runView(run));
      const timeoutMs = p.timeoutS !== undefined ? p.timeoutS * 1000 + 60_000 : 24 * 3600_000;
      // an agent's run: the model's text as it comes (each step once), its tool calls on stderr
      if (p.target === null && !ctx.json) {
        const view = new TurnView(run.id);
        for await (const e of ctx.client.runs.stream(run.id)) {
          const s = view.step({ ...e, run_id: run.id });
          if (s.answer) await ctx.out(s.answer);
          if (s.note) await ctx.err(s.note);
          if (s.exit) break;
        }
        return finished(ctx, await ctx.client.runs.wait(run.id, { timeoutMs }), view.printed);
      }
      return finished(
        ctx,
        await ctx.waitFor(`waiting for ${run.id}`, ctx.client.runs.wait(run.id, { timeoutMs })),
      );
    },
  }),
  get: defineCommand({
    summary: "show a run and its output",
    args: ["run"],
    parse: runArg,
    run: async (ctx, p) => {
      const run = await ctx.client.runs.get(p.id);
      return ctx.show(run, () => runView(run));
    },
  }),
  trace: defineCommand({
    summary: "print a run's trace as a timeline: model calls, tool calls and decisions, budget, output",
    args: ["run"],
    parse: runArg,
    run: async (ctx, p) => {
      const [run, list] = await Promise.all([ctx.client.runs.get(p.id), ctx.client.runs.events(p.id)]);
      return ctx.show(list, () => traceView(run, list.items));
    },
  }),
  events: defineCommand({
    summary: "list a run's events",
    args: ["run"],
    parse: runArg,
    run: async (ctx, p) => {
      const list = await ctx.client.runs.events(p.id);
      return ctx.show(list, () => listView("events", eventColumns, list.items));
    },
  }),
  cancel: defineCommand({
    summary: "stop a run",
    args: ["run"],
    parse: runArg,
    run: async (ctx, p) => {
      const run = await ctx.client.runs.cancel(p.id);
      return ctx.show(run, () => runView(run));
    },
  }),
  list: defineCommand({
    summary: "list an agent's runs",
    args: ["agent"],
    parse: (i) => ({ agentId: i.arg("agent") }),
    run: async (ctx, p) => {
      const list = await ctx.client.runs.list(p.agentId);
      return ctx.show(list, () => listView("runs", runColumns, list.items));
    },
  }),
  logs: runLogs,
  wait: defineCommand({
    summary: "wait until a run ends, then show it",
    args: ["run"],
    options: [timeoutMsOption],
    parse: (i) => ({ id: i.arg("run"), timeoutMs: i.whole("timeout-ms") }),
    run: async (ctx, p) => {
      const run = await ctx.waitFor(
        `waiting for ${p.id}`,
        ctx.client.runs.wait(p.id, p.timeoutMs !== undefined ? { timeoutMs: p.timeoutMs } : {}),
      );
      return ctx.show(run, () => runView(run));
    },
  }),
});
