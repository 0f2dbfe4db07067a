// `warren areas ...`: an organisation's areas (named sets of folders of an agent's home that
// fence what the members who hold them, and their conversations' turns, see), and their revisions.
import type { Area, AreaRevision } from "../../sdk/index.js";
import { defineCommand, defineGroup, type Input } from "../command.js";
import { detailView, listView, type Column } from "../format.js";
import { orgOption } from "../options.js";

const areaColumns: Column<Area>[] = [
  { header: "NAME", value: (a) => a.name },
  { header: "REVISION", value: (a) => a.revision },
  { header: "FOLDERS", value: (a) => a.folders },
];

const revisionColumns: Column<AreaRevision>[] = [
  { header: "REVISION", value: (r) => r.revision },
  { header: "BY", value: (r) => r.by },
  { header: "AT", value: (r) => r.at },
  // null: the revision deleted the area
  { header: "FOLDERS", value: (r) => r.folders ?? "(deleted)" },
];

const named = (i: Input) => ({ orgId: i.need("org"), name: i.arg("name") });

export const areas = defineGroup("areas", "an organisation's areas: named folders that fence members", {
  list: defineCommand({
    summary: "list the organisation's areas (a member who holds areas sees only theirs)",
    options: [orgOption],
    required: ["org"],
    parse: (i) => ({ orgId: i.need("org") }),
    run: async (ctx, p) => {
      const list = await ctx.client.orgs.areas(p.orgId);
      return ctx.show(list, () => listView("areas", areaColumns, list.items));
    },
  }),
  put: defineCommand({
    summary: "define an area or change its folders (each change is a revision)",
    args: ["name"],
    options: [
      orgOption,
      {
        name: "folder",
        value: "<path>",
        repeatable: true,
        help: "a folder of the home, relative to it (e.g. support/tickets); repeatable",
      },
    ],
    required: ["org", "folder"],
    parse: (i) => {
      const folders = i.list("folder") ?? [];
      if (folders.length === 0) throw i.error("--folder is required: an area names at least one folder");
      return { ...named(i), folders };
    },
    run: async (ctx, p) => {
      const area = await ctx.client.orgs.putArea(p.orgId, p.name, p.folders);
      return ctx.show(area, () => detailView(area));
    },
  }),
  revisions: defineCommand({
    summary: "list an area's revisions, oldest first: who changed it, when, and to what",
    args: ["name"],
    options: [orgOption],
    required: ["org"],
    parse: named,
    run: async (ctx, p) => {
      const list = await ctx.client.orgs.areaRevisions(p.orgId, p.name);
      return ctx.show(list, () => listView("revisions", revisionColumns, list.items));
    },
  }),
  delete: defineCommand({
    summary: "delete an area nobody holds",
    args: ["name"],
    options: [orgOption],
    required: ["org"],
    parse: named,
    run: async (ctx, p) => {
      await ctx.client.orgs.deleteArea(p.orgId, p.name);
      return ctx.show(undefined, () => `deleted area ${p.name}\n`);
    },
  }),
});
