// `warren init`: one state root for every start. STATE_ROOT made absolute and written to the
// `.env` every start reads (the checkout's, or WARREN_ENV_FILE), as `make up` does
// (scripts/env.sh). A `.env` naming another STATE_ROOT is left alone unless --force.
import { mkdir, readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { envFileOf, parseDotEnv } from "../../config/dotenv.js";
import { defineCommand, defineSingle } from "../command.js";
import { LocalError } from "../context.js";

const STATE_ROOT_LINE = /^\s*(?:export\s+)?STATE_ROOT\s*=.*$/;

/** `text` with its STATE_ROOT lines replaced by one naming `root` (appended when it had none). */
function withStateRoot(text: string, root: string): string {
  const line = `STATE_ROOT=${root}`;
  const lines = text === "" ? [] : text.replace(/\n$/, "").split("\n");
  const at = lines.findIndex((l) => STATE_ROOT_LINE.test(l));
  if (at < 0) {
    return `${lines.map((l) => `${l}\n`).join("")}# written by warren init; the server reads it wherever it is started from\n${line}\n`;
  }
  const out = lines.flatMap((l, i) => (!STATE_ROOT_LINE.test(l) ? [l] : i === at ? [line] : []));
  return out.map((l) => `${l}\n`).join("");
}

export const init = defineSingle(
  "init",
  "write STATE_ROOT, made absolute, to .env",
  defineCommand({
    summary:
      "make STATE_ROOT absolute and write it to the .env every start reads (the checkout's, or WARREN_ENV_FILE), so the server finds one state tree and master key wherever it starts",
    options: [
      {
        name: "state-root",
        value: "<path>",
        help: "the state tree (relative: to this folder); default: STATE_ROOT, else .state beside the .env",
      },
      { name: "force", help: "replace a STATE_ROOT the .env names already" },
    ],
    parse: (i) => {
      const root = i.str("state-root");
      if (root === "") throw i.error("--state-root must name a folder");
      return { root, force: i.flag("force") };
    },
    run: async (ctx, p) => {
      const file = path.resolve(envFileOf(ctx.io.env));
      const given = p.root ?? ctx.io.env.STATE_ROOT;
      const root = given ? path.resolve(given) : path.join(path.dirname(file), ".state");
      let text = "";
      try {
        text = await readFile(file, "utf8");
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== "ENOENT")
          throw new LocalError(
            "local.read",
            `could not read ${file} (${(err as NodeJS.ErrnoException).code})`,
          );
      }
      const before = parseDotEnv(text).STATE_ROOT;
      if (before !== undefined && before !== root && !p.force) {
        throw new LocalError(
          "init.state_root_set",
          `${file} names STATE_ROOT=${before} already, not ${root}: a server started on another state tree does not see the first one's data or master key; warren init --force replaces it`,
        );
      }
      const changed = before !== root;
      if (changed) {
        await mkdir(path.dirname(file), { recursive: true });
        await writeFile(file, withStateRoot(text, root), { mode: 0o600 });
      }
      const answer = { env_file: file, state_root: root, previous: before ?? null, changed };
      return ctx.show(answer, () =>
        changed
          ? `wrote STATE_ROOT=${root} to ${file}${before !== undefined ? ` (was ${before})` : ""}\n`
          : `${file} names STATE_ROOT=${root} already\n`,
      );
    },
  }),
);
