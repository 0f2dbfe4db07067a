// `warren files ls` and `warren files cp`: folders of an agent's home both ways, one file at a
// time over the files API, so that every file goes by the home's own rules (no link followed,
// no path out of the home). Links are skipped on both sides, with a line on stderr for each.
import { lstat, mkdir, readdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { isWarrenApiError, type AgentFiles, type FolderListing } from "../../sdk/index.js";
import { defineCommand, type Input } from "../command.js";
import { LocalError, type Context } from "../context.js";
import { listView, type Column } from "../format.js";
import { orgOption } from "../options.js";

type Entry = FolderListing["entries"][number];

const entryColumns: Column<Entry>[] = [
  { header: "TYPE", value: (e) => e.type },
  { header: "SIZE", value: (e) => e.size_bytes },
  { header: "MODIFIED", value: (e) => e.modified_at },
  { header: "NAME", value: (e) => e.name },
];

/** `AGENT:PATH` (the agent's id or name) or a local path; `:` only counts before any `/`. */
function sideOf(text: string): { agent: string; path: string } | { local: string } {
  const colon = text.indexOf(":");
  const slash = text.indexOf("/");
  if (colon > 0 && (slash === -1 || colon < slash))
    return { agent: text.slice(0, colon), path: text.slice(colon + 1) };
  return { local: text };
}

const within = (dir: string, name: string) => (dir === "" ? name : `${dir.replace(/\/+$/, "")}/${name}`);

function localError(action: string, path: string, err: unknown): LocalError {
  return new LocalError(
    "local.write",
    `could not ${action} ${path} (${(err as NodeJS.ErrnoException).code ?? "failed"})`,
  );
}

/** The bytes of a file of the home, or null when `path` is a folder (a read says so with file.not_regular). */
async function readOrFolder(files: AgentFiles, path: string): Promise<Uint8Array | null> {
  try {
    return await files.read(path);
  } catch (err) {
    if (isWarrenApiError(err) && err.code === "file.not_regular" && /is a folder/.test(err.message))
      return null;
    throw err;
  }
}

/** Copies a file or folder of the home to `dest` here; answers the number of files written. */
async function download(
  ctx: Context,
  files: AgentFiles,
  path: string,
  dest: string,
  known?: "file" | "folder",
): Promise<number> {
  const bytes = known === "folder" || path === "" ? null : await readOrFolder(files, path);
  if (bytes !== null) {
    await writeFile(dest, bytes).catch((err: unknown) => {
      throw localError("write", dest, err);
    });
    return 1;
  }
  await mkdir(dest, { recursive: true }).catch((err: unknown) => {
    throw localError("make", dest, err);
  });
  const listing = await files.list(path);
  if (listing.truncated)
    await ctx.err(`warren: ${path || "the home"} holds more than 1000 entries; only 1000 copied\n`);
  let count = 0;
  for (const e of listing.entries) {
    const from = within(path, e.name);
    if (e.type === "file" || e.type === "folder")
      count += await download(ctx, files, from, join(dest, e.name), e.type);
    else await ctx.err(`warren: skipped ${from}: a ${e.type}, not copied\n`);
  }
  return count;
}

/** Copies a local file or folder to `path` of the home; answers the number of files written. */
async function upload(ctx: Context, files: AgentFiles, local: string, path: string): Promise<number> {
  const st = await lstat(local).catch((err: unknown) => {
    throw new LocalError(
      "local.read",
      `could not read ${local} (${(err as NodeJS.ErrnoException).code ?? "failed"})`,
    );
  });
  if (st.isSymbolicLink() || !(st.isFile() || st.isDirectory())) {
    await ctx.err(
      `warren: skipped ${local}: ${st.isSymbolicLink() ? "a link" : "not a file or folder"}, not copied\n`,
    );
    return 0;
  }
  if (st.isFile()) {
    if (path === "") throw new LocalError("local.read", `give a path in the home for the file ${local}`);
    await files.write(path, await readFile(local));
    return 1;
  }
  let count = 0;
  for (const name of (await readdir(local)).sort())
    count += await upload(ctx, files, join(local, name), within(path, name));
  return count;
}

interface CopyParams {
  agentId: string;
  orgId: string | undefined;
  path: string;
  local: string;
  down: boolean;
}

function readCopy(i: Input): CopyParams {
  const from = sideOf(i.arg("source"));
  const to = sideOf(i.arg("dest"));
  if ("agent" in from && "local" in to)
    return { agentId: from.agent, path: from.path, local: to.local, down: true, orgId: i.str("org") };
  if ("local" in from && "agent" in to)
    return { agentId: to.agent, path: to.path, local: from.local, down: false, orgId: i.str("org") };
  throw i.error(
    "one side is AGENT:PATH in the agent's home and the other a local path, e.g. builder:src ./src",
  );
}

export const filesLs = defineCommand({
  summary: "list a folder of the agent's home (links are listed, never followed)",
  args: ["agent", "path?"],
  options: [orgOption],
  parse: (i) => ({
    agentId: i.arg("agent"),
    orgId: i.str("org"),
    path: i.optionalArg("path") ?? "",
  }),
  run: async (ctx, p) => {
    const listing = await ctx.client.agent(p.agentId).files.list(p.path);
    if (ctx.quiet && !ctx.json) {
      await ctx.out(listing.entries.map((e) => `${e.name}\n`).join(""));
      return 0;
    }
    return ctx.show(listing, () => listView("entries", entryColumns, listing.entries));
  },
});

export const filesCp = defineCommand({
  summary: "copy a file or a whole folder between the agent's home (AGENT:PATH) and here, either way",
  args: ["source", "dest"],
  options: [orgOption],
  parse: readCopy,
  run: async (ctx, p) => {
    const files = ctx.client.agent(p.agentId).files;
    const count = p.down
      ? await download(ctx, files, p.path, p.local)
      : await upload(ctx, files, p.local, p.path);
    const [from, to] = p.down ? [`${p.agentId}:${p.path}`, p.local] : [p.local, `${p.agentId}:${p.path}`];
    return ctx.show(
      { files: count },
      () => `copied ${count} file${count === 1 ? "" : "s"} from ${from} to ${to}\n`,
    );
  },
});
