// `warren files ...`: files of an agent's home, to and from this side.
import { writeFile } from "node:fs/promises";
import { defineCommand, defineGroup } from "../command.js";
import { EXIT_OK, LocalError } from "../context.js";
import { filesCp, filesLs } from "./folders.js";

export const files = defineGroup("files", "files of an agent's home", {
  ls: filesLs,
  cp: filesCp,
  get: defineCommand({
    summary: "print a file of the agent's home (or save it with --out)",
    args: ["agent", "path"],
    options: [{ name: "out", value: "<file>", help: "write the file here instead of to stdout" }],
    parse: (i) => ({ agentId: i.arg("agent"), path: i.arg("path"), out: i.str("out") }),
    run: async (ctx, p) => {
      const bytes = await ctx.client.agent(p.agentId).files.read(p.path);
      if (p.out === undefined) {
        await ctx.out(bytes);
        return EXIT_OK;
      }
      try {
        await writeFile(p.out, bytes);
      } catch (err) {
        throw new LocalError(
          "local.write",
          `could not write ${p.out} (${(err as NodeJS.ErrnoException).code ?? "unwritable"})`,
        );
      }
      return ctx.show(undefined, () => `saved ${p.path} (${bytes.length} bytes) to ${p.out}\n`);
    },
  }),
  put: defineCommand({
    summary: "write a file of the agent's home from a local file (or stdin)",
    args: ["agent", "path", "local-file?"],
    parse: (i) => ({ agentId: i.arg("agent"), path: i.arg("path"), source: i.optionalArg("local-file") }),
    run: async (ctx, p) => {
      const bytes = await ctx.readLocal(p.source ?? "-", "the local file");
      await ctx.client.agent(p.agentId).files.write(p.path, bytes);
      return ctx.show(undefined, () => `wrote ${bytes.length} bytes to ${p.path}\n`);
    },
  }),
});
