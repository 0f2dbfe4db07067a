// `warren shell`: this terminal attached to the agent's shell in its box (raw mode, resized on
// SIGWINCH, ^C to the remote side), or one interactive command with `-- CMD`; the exit status
// of the remote shell or command is the command's own.
import type { TerminalEnd } from "../../sdk/index.js";
import { defineCommand, defineSingle } from "../command.js";
import { EXIT_FAILED, write } from "../context.js";
import { exitCodeOf } from "./exec.js";

interface TtyIn extends NodeJS.ReadableStream {
  isTTY?: boolean;
  setRawMode?(raw: boolean): unknown;
}
interface TtyOut extends NodeJS.WritableStream {
  isTTY?: boolean;
  columns?: number;
  rows?: number;
}

/** The size of this terminal, or 80x24 when output is not one. */
export function sizeOf(out: TtyOut): { cols: number; rows: number } {
  const ok = (n: number | undefined): n is number => typeof n === "number" && n >= 1 && n <= 1000;
  return out.isTTY && ok(out.columns) && ok(out.rows)
    ? { cols: out.columns, rows: out.rows }
    : { cols: 80, rows: 24 };
}

/** The exit code of `warren shell` for how the terminal ended, and a line for stderr if any. */
export function shellOutcome(end: TerminalEnd): { code: number; note: string | null } {
  const exit = end.exit;
  if (exit && (exit.exit_code !== null || exit.signal !== null)) {
    const code = exitCodeOf({ exit_code: exit.exit_code, signal: exit.signal, timed_out: false });
    return { code, note: exit.signal ? `warren: the shell was ended by ${exit.signal}\n` : null };
  }
  const why = exit?.reason ?? (end.reason || `the connection closed (${end.code})`);
  return { code: EXIT_FAILED, note: `warren: ${why}\n` };
}

export const shell = defineSingle(
  "shell",
  "a terminal in an agent's box",
  defineCommand({
    summary:
      "attach this terminal to the agent's shell (shared with every viewer), or run one interactive command after --; exits with its status",
    args: ["agent"],
    rest: true,
    parse: (i) => ({ agentId: i.arg("agent"), argv: i.rest.length > 0 ? [...i.rest] : undefined }),
    run: async (ctx, p) => {
      const term = ctx.client.agent(p.agentId).terminal;
      const stdin = ctx.io.stdin as TtyIn;
      const stdout = ctx.io.stdout as TtyOut;
      const size = sizeOf(stdout);
      const conn = await ctx.waitFor(
        `starting ${p.agentId}'s terminal`,
        (async () => {
          if (!p.argv) await term.start();
          return term.connect({ ...size, ...(p.argv ? { argv: p.argv } : {}) });
        })(),
      );
      conn.onData((chunk) => void write(stdout, chunk));
      conn.onMessage((m) => {
        if (m.type === "error") void ctx.err(`\r\nwarren: ${m.message}\r\n`);
        if (m.type === "attached" && m.mode === "watch")
          void ctx.err("warren: your role can watch this terminal, not type in it\r\n");
      });
      // this terminal's size wins (the shared shell may have another viewer's)
      conn.resize(size.cols, size.rows);
      const onResize = () => {
        const s = sizeOf(stdout);
        conn.resize(s.cols, s.rows);
      };
      const onInterrupt = () => conn.signal("SIGINT"); // stdin is not a terminal: ^C arrives as a signal
      const onInput = (chunk: Buffer | string) => conn.write(chunk);
      const raw = stdin.isTTY === true && typeof stdin.setRawMode === "function";
      if (raw) stdin.setRawMode?.(true);
      process.on("SIGWINCH", onResize);
      process.on("SIGINT", onInterrupt);
      stdin.on("data", onInput);
      stdin.resume();
      try {
        const { code, note } = shellOutcome(await conn.closed);
        if (note) await ctx.err(raw ? note.replace(/\n/g, "\r\n") : note);
        return code;
      } finally {
        stdin.off("data", onInput);
        stdin.pause();
        process.off("SIGWINCH", onResize);
        process.off("SIGINT", onInterrupt);
        if (raw) stdin.setRawMode?.(false);
      }
    },
  }),
);
