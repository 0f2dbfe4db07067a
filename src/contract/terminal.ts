// The agent's terminal: POST /api/agents/:id/cli and the WebSocket of /api/agents/:id/cli/tty.
// Binary frames carry the terminal's bytes both ways; text frames carry these JSON messages.
import { z } from "zod";
import { PTY_SIGNALS } from "../boxd/protocol.js";
import { noNul } from "./common.js";

/** The most columns and rows a terminal may have (boxd's own limit). */
export const MAX_TERMINAL_SIZE = 1000;
/** The largest WebSocket message the server takes; a larger one closes the socket (1009). */
export const TERMINAL_MAX_MESSAGE_BYTES = 64 * 1024;
/** How much of a terminal's recent output a viewer gets on attaching. */
export const TERMINAL_SCROLLBACK_BYTES = 256 * 1024;

const size = z.coerce.number().int().min(1).max(MAX_TERMINAL_SIZE);

export const TerminalReady = z
  .object({ status: z.literal("ready") })
  .strict()
  .meta({ id: "TerminalReady", description: "the agent's terminal is running" });

export const TerminalQuery = z
  .object({
    cols: size.optional().describe("the size of a terminal this connection starts (default 80)"),
    rows: size.optional().describe("the size of a terminal this connection starts (default 24)"),
    argv: z
      .union([noNul(4096), z.array(noNul(4096)).min(1).max(256)])
      .optional()
      .describe(
        "repeatable: runs this one command in a terminal of this connection's own (not the shared shell), which ends with it",
      ),
  })
  .strict();

/** The signals a writer may send to the terminal's job in front: those boxd passes to it. */
export const TerminalSignal = z.enum(PTY_SIGNALS);

/** What a client may send in a text frame. */
export const TerminalInput = z.discriminatedUnion("type", [
  z.object({ type: z.literal("resize"), cols: size, rows: size }).strict(),
  z.object({ type: z.literal("signal"), signal: TerminalSignal }).strict(),
]);

/** What the server sends in a text frame. */
export const TerminalMessage = z
  .discriminatedUnion("type", [
    z
      .object({
        type: z.literal("attached"),
        mode: z.enum(["write", "watch"]).describe("watch: this viewer's input is dropped"),
        shared: z.boolean().describe("the agent's one shared shell, or a command of this connection's own"),
        cols: z.number().int(),
        rows: z.number().int(),
      })
      .strict(),
    z
      .object({
        type: z.literal("resize"),
        cols: z.number().int(),
        rows: z.number().int(),
      })
      .strict(),
    z
      .object({
        type: z.literal("exit"),
        exit_code: z.number().int().nullable(),
        signal: z.string().nullable(),
        reason: z.string().describe("why the terminal ended, for people; also the close frame's reason"),
      })
      .strict(),
    z
      .object({
        type: z.literal("error"),
        code: z.string(),
        message: z.string(),
      })
      .strict(),
  ])
  .meta({
    id: "TerminalMessage",
    description:
      "a JSON text frame of the terminal's WebSocket, from the server (the client sends resize {cols, rows} and signal {signal})",
  });
