// The artifact tools: an agent's notes, memory, collection records and scripts in the
// artifact store, as the agent (src/artifacts/agent.ts decides what it may see and write).
// Each is a builtin, decided by the agent's tool policy like every tool. script_run writes the
// agent's scripts into its home's scripts/ (by the home file rules) and runs one in the box as
// the agent, through the run's door. No tool reads memory's earlier revisions.
import type { ARTIFACT_TOOLS } from "../contract/spec.js";
import { homeOf, uidOf } from "../machines/placement.js";
import { writeHomeFile } from "../homes/files.js";
import { isWarrenError } from "../errors.js";
import type { BuiltinEnv } from "./builtins.js";
import { MAX_OUTPUT_BYTES, num, params, str, textParam, ToolFailure, type ToolImpl } from "./impl.js";
import { commandAnswer } from "./answer.js";

export type ArtifactTool = (typeof ARTIFACT_TOOLS)[number];

/** script_run's default and longest time. */
const SCRIPT_DEFAULT_S = 60;
const SCRIPT_MAX_S = 600;

/** The store's refusals (a bad path, no access, nothing there) are the tool's answer. */
async function answer<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (err) {
    if (isWarrenError(err)) throw new ToolFailure(err.message);
    throw err;
  }
}

const NOTE_PATH = textParam(
  "a note as note_list gives it: a name like plan.md for one of your own, org/<name>.md for your organisation's, guilds/<guild id>/<name>.md for a guild's, agents/<agent id>/notes/<name>.md",
);

const lines = (items: { path: string; bytes: number; revision: number; mode?: string }[], empty: string) =>
  items.length === 0
    ? empty
    : items
        .map((i) => `${i.path}\t${i.bytes} bytes\trevision ${i.revision}${i.mode ? `\t${i.mode}` : ""}`)
        .join("\n");

const BUILDERS: Record<ArtifactTool, (env: BuiltinEnv) => ToolImpl> = {
  note_list: (env) => ({
    kind: "builtin",
    tool: {
      name: "note_list",
      description:
        "Lists your notes and the notes shared with you: display path, size, revision and whether you may write it.",
      parameters: params({}),
    },
    run: () => answer(async () => lines(await env.artifacts.listNotes(), "(no notes)")),
  }),
  note_read: (env) => ({
    kind: "builtin",
    tool: {
      name: "note_read",
      description: "Reads a note (Markdown).",
      parameters: params({ path: NOTE_PATH }, ["path"]),
    },
    canonical: { path: notePath(env) },
    run: (args) => answer(() => env.artifacts.readNote(str(args, "path"))),
  }),
  note_write: (env) => ({
    kind: "builtin",
    tool: {
      name: "note_write",
      description:
        "Creates or replaces a note (Markdown): your own, or a shared one whose access list lets you write. Notes outlive your home.",
      parameters: params({ path: NOTE_PATH, content: textParam("the note's Markdown") }, ["path", "content"]),
    },
    canonical: { path: notePath(env) },
    run: (args) =>
      answer(async () => {
        const r = await env.artifacts.writeNote(str(args, "path"), str(args, "content"));
        return `wrote ${r.path} (revision ${r.revision})`;
      }),
  }),
  memory_read: (env) => ({
    kind: "builtin",
    tool: {
      name: "memory_read",
      description: "Reads your memory (Markdown), as it is now.",
      parameters: params({}),
    },
    run: () => answer(async () => (await env.artifacts.readMemory()) ?? "(your memory is empty)"),
  }),
  memory_write: (env) => ({
    kind: "builtin",
    tool: {
      name: "memory_write",
      description:
        "Replaces your whole memory with the given Markdown (it is in your system prompt on every run, and outlives your home). Keep what still matters.",
      parameters: params({ content: textParam("your whole memory, Markdown") }, ["content"]),
    },
    run: (args) =>
      answer(async () => {
        const r = await env.artifacts.writeMemory(str(args, "content"));
        return `your memory is saved (revision ${r.revision})`;
      }),
  }),
  record_list: (env) => ({
    kind: "builtin",
    tool: {
      name: "record_list",
      description:
        "Without a collection: the collections shared with you and your access (read or write). With one: its records.",
      parameters: params({ collection: textParam("a collection's name") }),
    },
    run: (args) =>
      answer(async () => {
        const c = str(args, "collection", { optional: true });
        if (c === undefined) {
          const cs = await env.artifacts.listCollections();
          return cs.length === 0
            ? "(no collection is shared with you)"
            : cs.map((x) => `${x.name}\t${x.mode}`).join("\n");
        }
        return lines(await env.artifacts.listRecords(c), `(the collection ${c} has no records)`);
      }),
  }),
  record_get: (env) => ({
    kind: "builtin",
    tool: {
      name: "record_get",
      description: "Reads one record (JSON) of a collection shared with you.",
      parameters: params(
        { collection: textParam("the collection's name"), id: textParam("the record's id") },
        ["collection", "id"],
      ),
    },
    run: (args) => answer(() => env.artifacts.getRecord(str(args, "collection"), str(args, "id"))),
  }),
  record_put: (env) => ({
    kind: "builtin",
    tool: {
      name: "record_put",
      description: "Creates or replaces one record of a collection whose access list lets you write.",
      parameters: params(
        {
          collection: textParam("the collection's name"),
          id: textParam("the record's id: letters, digits, ., _ and -"),
          record: { description: "the record: any JSON value" },
        },
        ["collection", "id", "record"],
      ),
    },
    run: (args) =>
      answer(async () => {
        if (args.record === undefined) throw new ToolFailure('the argument "record" is required');
        const r = await env.artifacts.putRecord(
          str(args, "collection"),
          str(args, "id"),
          JSON.stringify(args.record),
        );
        return `wrote ${r.path} (revision ${r.revision})`;
      }),
  }),
  script_list: (env) => ({
    kind: "builtin",
    tool: { name: "script_list", description: "Lists your scripts.", parameters: params({}) },
    run: () => answer(async () => lines(await env.artifacts.listScripts(), "(no scripts)")),
  }),
  script_write: (env) => ({
    kind: "builtin",
    tool: {
      name: "script_write",
      description:
        "Creates or replaces one of your scripts (start it with a #! line; without one it runs with bash). Scripts outlive your home; script_run runs them.",
      parameters: params(
        {
          name: textParam("the script's name: letters, digits, ., _ and -"),
          content: textParam("the script"),
        },
        ["name", "content"],
      ),
    },
    run: (args) =>
      answer(async () => {
        const r = await env.artifacts.writeScript(str(args, "name"), str(args, "content"));
        return `wrote ${r.path} (revision ${r.revision})`;
      }),
  }),
  script_run: (env) => ({
    kind: "builtin",
    tool: {
      name: "script_run",
      description: `Runs one of your scripts in your box as you, from your home's scripts/ (where all of them are written first), with the given arguments. Answers its exit code, stdout and stderr. At most ${SCRIPT_MAX_S} s (default ${SCRIPT_DEFAULT_S} s).`,
      parameters: params(
        {
          name: textParam("the script's name"),
          args: { type: "array", items: { type: "string" }, description: "its arguments" },
          timeout_s: { type: "number", description: `seconds before it is killed (at most ${SCRIPT_MAX_S})` },
        },
        ["name"],
      ),
    },
    run: (args, signal) =>
      answer(async () => {
        const name = str(args, "name");
        const given = args.args ?? [];
        if (!Array.isArray(given) || !given.every((a) => typeof a === "string"))
          throw new ToolFailure('the argument "args" must be a list of strings');
        const timeoutS = Math.min(SCRIPT_MAX_S, Math.max(1, num(args, "timeout_s") ?? SCRIPT_DEFAULT_S));
        const scripts = await env.artifacts.scripts();
        const script = scripts.find((x) => x.name === name);
        if (!script)
          throw new ToolFailure(
            `you have no script named ${name} (${scripts.map((x) => x.name).join(", ") || "none yet: script_write makes one"})`,
          );
        const dir = env.layout.homeDir(env.agent.machineId, env.agent.id);
        const owner = env.layout.fileOwner(uidOf(env.agent.slot), env.trust);
        for (const x of scripts)
          await writeHomeFile(dir, ["scripts", x.name], Buffer.from(x.content, "utf8"), {
            maxBytes: 2 * 1024 * 1024,
            ...owner,
            // the owner runs it; in a shared machine its group may too, as it may read it
            mode: owner.mode | ((owner.mode & 0o040) === 0 ? 0o100 : 0o110),
          });
        const file = `${homeOf(env.agent.id)}/scripts/${name}`;
        const argv = script.content.startsWith("#!") ? [file, ...given] : ["/bin/bash", file, ...given];
        const out = await env.workload.collect(
          { argv, timeoutMs: timeoutS * 1000 },
          { limitBytes: MAX_OUTPUT_BYTES, signal },
        );
        return commandAnswer(out, timeoutS);
      }),
  }),
};

/** A note's path in its canonical form (a bare name is the agent's own note; an organisation's is org/<name>.md), which the policy tests. */
const notePath =
  (env: BuiltinEnv) =>
  (value: unknown, name: string): string => {
    if (typeof value !== "string") throw new ToolFailure(`the argument "${name}" must be a string`);
    try {
      return env.artifacts.spelled(env.artifacts.notePath(value).path);
    } catch (err) {
      if (isWarrenError(err)) throw new ToolFailure(err.message);
      throw err;
    }
  };

export function artifactTool(name: ArtifactTool, env: BuiltinEnv): ToolImpl {
  return BUILDERS[name](env);
}
