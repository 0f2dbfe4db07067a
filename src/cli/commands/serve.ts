// `warren serve`: the control plane in the foreground.
import { defineCommand, defineSingle } from "../command.js";
import { EXIT_OK } from "../context.js";

export const serve = defineSingle(
  "serve",
  "run the control plane",
  defineCommand({
    summary: "run the control plane in the foreground (configured by the environment)",
    parse: () => ({}),
    run: async (ctx) => {
      const start = ctx.io.serve ?? (await import("../../main.js")).serve;
      await start(ctx.io.env);
      return EXIT_OK;
    },
  }),
);
