// `warren orgs ...`: organisations and their members.
import type { Member, Org, Role } from "../../sdk/index.js";
import { ROLES } from "../../sdk/index.js";
import { defineCommand, defineGroup, type Input } from "../command.js";
import { detailView, listView, type Column } from "../format.js";

export const orgColumns: Column<Org>[] = [
  { header: "ID", value: (o) => o.id },
  { header: "NAME", value: (o) => o.name },
  { header: "ROLE", value: (o) => o.role },
];

export const memberColumns: Column<Member>[] = [
  { header: "USER", value: (m) => m.user_id },
  { header: "EMAIL", value: (m) => m.email },
  { header: "ROLE", value: (m) => m.role },
  { header: "AREAS", value: (m) => m.areas },
];

function readRole(i: Input): Role {
  const value = i.need("role");
  const role = ROLES.find((r) => r === value);
  if (!role) throw i.error(`--role must be one of ${ROLES.join(", ")}, not "${value}"`);
  return role;
}

const orgArg = (i: Input) => ({ orgId: i.arg("org") });

export const orgs = defineGroup("orgs", "organisations and their members", {
  create: defineCommand({
    summary: "create an organisation; you become its owner",
    args: ["name"],
    parse: (i) => ({ name: i.arg("name") }),
    run: async (ctx, p) => {
      const org = await ctx.client.orgs.create({ name: p.name });
      return ctx.show(org, () => detailView(org));
    },
  }),
  list: defineCommand({
    summary: "list your organisations",
    parse: () => ({}),
    run: async (ctx) => {
      const list = await ctx.client.orgs.list();
      return ctx.show(list, () => listView("organisations", orgColumns, list.items));
    },
  }),
  get: defineCommand({
    summary: "show an organisation",
    args: ["org"],
    parse: orgArg,
    run: async (ctx, p) => {
      const org = await ctx.client.orgs.get(p.orgId);
      return ctx.show(org, () => detailView(org));
    },
  }),
  delete: defineCommand({
    summary: "delete an empty organisation",
    args: ["org"],
    parse: orgArg,
    run: async (ctx, p) => {
      await ctx.client.orgs.delete(p.orgId);
      return ctx.show(undefined, () => `deleted ${p.orgId}\n`);
    },
  }),
  members: defineCommand({
    summary: "list an organisation's members",
    args: ["org"],
    parse: orgArg,
    run: async (ctx, p) => {
      const list = await ctx.client.orgs.members(p.orgId);
      return ctx.show(list, () => listView("members", memberColumns, list.items));
    },
  }),
  "set-member": defineCommand({
    summary: "add a member or change a member's role and areas",
    args: ["org"],
    options: [
      { name: "email", value: "<email>", help: "the member's email" },
      { name: "role", value: "<role>", help: ROLES.join(", ") },
      {
        name: "area",
        value: "<name>",
        repeatable: true,
        help: "an area the member holds (an editor or guest needs one); repeatable; absent: those held stay",
      },
    ],
    required: ["email", "role"],
    parse: (i) => {
      const areas = i.list("area");
      return { orgId: i.arg("org"), email: i.need("email"), role: readRole(i), ...(areas ? { areas } : {}) };
    },
    run: async (ctx, p) => {
      const member = await ctx.client.orgs.setMember(p.orgId, {
        email: p.email,
        role: p.role,
        ...(p.areas ? { areas: p.areas } : {}),
      });
      return ctx.show(member, () => detailView(member));
    },
  }),
  "remove-member": defineCommand({
    summary: "remove a member (by user id, usr_...)",
    args: ["org", "user"],
    parse: (i) => ({ orgId: i.arg("org"), userId: i.arg("user") }),
    run: async (ctx, p) => {
      await ctx.client.orgs.removeMember(p.orgId, p.userId);
      return ctx.show(undefined, () => `removed ${p.userId} from ${p.orgId}\n`);
    },
  }),
});
