// `warren exec`: a command in an agent's box, its output streamed, its exit code passed on.
import type { ExecExitEvent, ExecRequest } from "../../sdk/index.js";
import { defineCommand, defineSingle } from "../command.js";
import { EXIT_FAILED } from "../context.js";
import {
  commandOption,
  limitOptions,
  orgOption,
  parseEnvPairs,
  readLimits,
  readTarget,
  timeoutMsOption,
  type Target,
} from "../options.js";

/** The argv or shell text of a request. */
export function targetBody(target: Target): Pick<ExecRequest, "argv" | "command"> {
  return "argv" in target ? { argv: target.argv } : { command: target.command };
}

/** Signal numbers on Linux, for the shell's 128+n convention. */
const SIGNALS: Record<string, number> = {
  SIGHUP: 1,
  SIGINT: 2,
  SIGQUIT: 3,
  SIGILL: 4,
  SIGTRAP: 5,
  SIGABRT: 6,
  SIGBUS: 7,
  SIGFPE: 8,
  SIGKILL: 9,
  SIGUSR1: 10,
  SIGSEGV: 11,
  SIGUSR2: 12,
  SIGPIPE: 13,
  SIGALRM: 14,
  SIGTERM: 15,
  SIGXCPU: 24,
  SIGXFSZ: 25,
};

/**
 * The exit code the CLI passes on for a command that ended: its own code; 124 when it timed
 * out (as timeout(1) does); 128+n when a signal ended it; 1 when nothing better is known.
 */
export function exitCodeOf(exit: Pick<ExecExitEvent, "exit_code" | "signal" | "timed_out">): number {
  if (exit.timed_out) return 124;
  if (exit.exit_code !== null) return Math.min(255, Math.max(0, exit.exit_code));
  const n =
    exit.signal === null
      ? undefined
      : SIGNALS[exit.signal.startsWith("SIG") ? exit.signal : `SIG${exit.signal}`];
  return n === undefined ? 1 : 128 + n;
}

/** A line for stderr when a command did not simply exit, else null. */
export function exitNote(
  exit: Pick<ExecExitEvent, "exit_code" | "signal" | "timed_out" | "duration_ms">,
): string | null {
  if (exit.timed_out) return `warren: the command timed out after ${exit.duration_ms} ms\n`;
  if (exit.exit_code === null && exit.signal !== null)
    return `warren: the command was ended by ${exit.signal}\n`;
  return null;
}

export const exec = defineSingle(
  "exec",
  "run a command in an agent's box",
  defineCommand({
    summary: "run a command in the agent's box, streaming its output; exits with its code",
    args: ["agent"],
    options: [
      orgOption,
      commandOption,
      { name: "cwd", value: "<dir>", help: "the working folder (default: the agent's home)" },
      {
        name: "env",
        value: "<NAME=value>",
        repeatable: true,
        help: "NAME=value for the command; repeatable",
      },
      {
        name: "stdin-file",
        value: "<file>",
        help: "a file fed to the command's stdin (- for this terminal's stdin)",
      },
      timeoutMsOption,
      ...limitOptions,
    ],
    rest: true,
    parse: (i) => ({
      agentId: i.arg("agent"),
      orgId: i.str("org"),
      target: readTarget(i),
      cwd: i.str("cwd"),
      env: parseEnvPairs(i.list("env"), i.topic),
      stdinFile: i.str("stdin-file"),
      timeoutMs: i.whole("timeout-ms"),
      limits: readLimits(i),
    }),
    run: async (ctx, p) => {
      const request: ExecRequest = { ...targetBody(p.target) };
      if (p.cwd !== undefined) request.cwd = p.cwd;
      if (p.env !== undefined) request.env = p.env;
      if (p.timeoutMs !== undefined) request.timeout_ms = p.timeoutMs;
      if (p.limits !== undefined) request.limits = p.limits;
      if (p.stdinFile !== undefined)
        request.stdin = (await ctx.readLocal(p.stdinFile, "the stdin file")).toString("utf8");
      const agent = ctx.client.agent(p.agentId);
      if (ctx.json) {
        const result = await agent.exec(request);
        await ctx.printJson(result);
        return exitCodeOf(result);
      }
      // The box may have to start first: a spinner until the command says anything.
      const spinner = ctx.spinner(`starting the command in ${p.agentId}'s box`);
      try {
        for await (const event of agent.execStream(request)) {
          spinner.stop();
          if ("stream" in event) {
            await (event.stream === "stdout" ? ctx.out(event.data) : ctx.err(event.data));
          } else {
            const note = exitNote(event);
            if (note) await ctx.err(note);
            return exitCodeOf(event);
          }
        }
      } finally {
        spinner.stop();
      }
      return EXIT_FAILED;
    },
  }),
);
