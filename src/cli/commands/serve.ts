// `warren serve`: the control plane in the foreground.
import { defineCommand, defineSingle } from "../command.js";
import { EXIT_OK } from "../context.js";

export const serve = defineSingle(
  "serve",
  "run the control plane",
  defineCommand({
    summary: "run the control plane in the foreground (configured by the environment)",
    options: [
      {
        name: "stop-boxes",
        help: "on SIGTERM or SIGINT, stop every box too (default: boxes keep running for the next start to adopt)",
      },
    ],
    parse: (i) => ({ stopBoxes: i.flag("stop-boxes") }),
    run: async (ctx, p) => {
      const start = ctx.io.serve ?? (await import("../../main.js")).serve;
      await start(ctx.io.env, { stopBoxes: p.stopBoxes });
      return EXIT_OK;
    },
  }),
);
