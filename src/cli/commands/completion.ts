// `warren completion bash|zsh`: the shell completion script, made from the command catalog.
import { defineCommand, defineSingle } from "../command.js";
import { EXIT_OK } from "../context.js";

export const completion = defineSingle(
  "completion",
  "print the shell completion script (bash or zsh)",
  defineCommand({
    summary: 'print the completion script of a shell: eval "$(warren completion bash)" (or zsh)',
    args: ["shell"],
    parse: (i): { shell: "bash" | "zsh" } => {
      const shell = i.arg("shell");
      if (shell === "bash" || shell === "zsh") return { shell };
      throw i.error(`completion knows bash and zsh, not "${shell}"`);
    },
    run: async (ctx, p) => {
      // loaded when asked for: the script is made from the catalog, which lists this command
      const { completionScript } = await import("../completion.js");
      await ctx.out(completionScript(p.shell));
      return EXIT_OK;
    },
  }),
);
