// `warren artifacts ...`: an organisation's notes, memories, scripts and collection records
// under display paths, memory's revisions, and the access lists of notes and collections.
import type { ArtifactGrant, ArtifactItem } from "../../sdk/index.js";
import { defineCommand, defineGroup, type Input } from "../command.js";
import { EXIT_OK } from "../context.js";
import { listView, type Column } from "../format.js";
import { orgOption } from "../options.js";

const columns: Column<ArtifactItem>[] = [
  { header: "PATH", value: (a) => a.path },
  { header: "KIND", value: (a) => a.kind },
  { header: "BYTES", value: (a) => a.bytes },
  { header: "REVISION", value: (a) => a.revision },
  { header: "UPDATED", value: (a) => a.updated_at },
];

const MODES = ["read", "write", "none"] as const;
const SCOPES = ["org", "guild", "agent"] as const;

/** `org:<id>=read`, `guild:<id>=write`, `agent:<id>=none`. */
function parseGrant(i: Input, text: string): ArtifactGrant {
  const m = /^(org|guild|agent):([^=]+)=(read|write|none)$/.exec(text);
  if (!m)
    throw i.error(
      `--grant ${JSON.stringify(text)} is not <${SCOPES.join("|")}>:<id>=<${MODES.join("|")}> (e.g. guild:gld_...=write)`,
    );
  return { scope: m[1] as ArtifactGrant["scope"], id: m[2]!, mode: m[3] as ArtifactGrant["mode"] };
}

export const artifacts = defineGroup("artifacts", "notes, memories, scripts and collection records", {
  list: defineCommand({
    summary: "list the organisation's artifacts (under a path prefix with --prefix)",
    options: [orgOption, { name: "prefix", value: "<prefix>", help: "only the paths that start with it" }],
    required: ["org"],
    parse: (i) => ({ orgId: i.need("org"), prefix: i.str("prefix") ?? "" }),
    run: async (ctx, p) => {
      const list = await ctx.client.artifacts(p.orgId).list(p.prefix);
      return ctx.show(list, () => listView("artifacts", columns, list.items));
    },
  }),
  get: defineCommand({
    summary: "print an artifact's current text (revision N of a memory with --revision)",
    args: ["path"],
    options: [orgOption, { name: "revision", value: "<n>", help: "an earlier revision of a memory" }],
    required: ["org"],
    parse: (i) => ({ orgId: i.need("org"), path: i.arg("path"), revision: i.whole("revision") }),
    run: async (ctx, p) => {
      const api = ctx.client.artifacts(p.orgId);
      const text = p.revision === undefined ? await api.read(p.path) : await api.revision(p.path, p.revision);
      await ctx.out(Buffer.from(text, "utf8"));
      return EXIT_OK;
    },
  }),
  put: defineCommand({
    summary: "write an artifact from a local file (or stdin); a record is JSON",
    args: ["path", "local-file?"],
    options: [orgOption],
    required: ["org"],
    parse: (i) => ({ orgId: i.need("org"), path: i.arg("path"), source: i.optionalArg("local-file") }),
    run: async (ctx, p) => {
      const bytes = await ctx.readLocal(p.source ?? "-", "the local file");
      const w = await ctx.client.artifacts(p.orgId).write(p.path, bytes.toString("utf8"));
      return ctx.show(w, () => `wrote ${w.path} (revision ${w.revision})\n`);
    },
  }),
  revisions: defineCommand({
    summary: "list an artifact's revisions (every one of a memory), newest first",
    args: ["path"],
    options: [orgOption],
    required: ["org"],
    parse: (i) => ({ orgId: i.need("org"), path: i.arg("path") }),
    run: async (ctx, p) => {
      const list = await ctx.client.artifacts(p.orgId).revisions(p.path);
      return ctx.show(list, () =>
        listView(
          "revisions",
          [
            { header: "REVISION", value: (r) => r.revision },
            { header: "BY", value: (r) => r.by },
            { header: "AT", value: (r) => r.at },
            { header: "BYTES", value: (r) => r.bytes },
          ],
          list.items,
        ),
      );
    },
  }),
  access: defineCommand({
    summary:
      "show the access list of a note or a collection (collections/<name>), or replace it with --grant",
    args: ["path"],
    options: [
      orgOption,
      {
        name: "grant",
        value: "<scope:id=mode>",
        help: "a row of the new list (repeatable): org:<id>=read, guild:<id>=write, agent:<id>=none",
        repeatable: true,
      },
      { name: "clear", help: "replace the list with an empty one (no access for any agent)" },
    ],
    required: ["org"],
    parse: (i) => ({
      orgId: i.need("org"),
      path: i.arg("path"),
      grants: (i.list("grant") ?? []).map((g) => parseGrant(i, g)),
      clear: i.flag("clear"),
    }),
    run: async (ctx, p) => {
      const api = ctx.client.artifacts(p.orgId);
      const list =
        p.grants.length > 0 || p.clear ? await api.setAccess(p.path, p.grants) : await api.access(p.path);
      return ctx.show(list, () =>
        listView(
          "grants",
          [
            { header: "SCOPE", value: (g) => g.scope },
            { header: "ID", value: (g) => g.id },
            { header: "MODE", value: (g) => g.mode },
          ],
          list.grants,
        ),
      );
    },
  }),
});
