// `warren machines ...`: where agents live, one box each.
import type { Machine, MachineCreateRequest, MachineUpdateRequest } from "../../sdk/index.js";
import { defineCommand, defineGroup, type Input, type OptionDef } from "../command.js";
import { detailView, listView, mib, type Column } from "../format.js";
import { maxWorkspaceOption, nameOption, orgOption } from "../options.js";

export const machineColumns: Column<Machine>[] = [
  { header: "ID", value: (m) => m.id },
  { header: "NAME", value: (m) => m.name },
  { header: "STATE", value: (m) => m.state },
  { header: "AGENTS", value: (m) => m.agents },
  { header: "DISK", value: (m) => mib(m.workspace_mib, m.max_workspace_mib) },
  { header: "MEMORY", value: (m) => `${m.memory_mib} MiB` },
  { header: "CPUS", value: (m) => m.cpus },
  { header: "TRUST", value: (m) => m.trust },
];

const memoryOption: OptionDef = { name: "memory-mib", value: "<mib>", help: "the box's memory, in MiB" };
const cpusOption: OptionDef = { name: "cpus", value: "<n>", help: "the box's CPUs (0.1-64)" };
const trustOption: OptionDef = { name: "trust", value: "<trust>", help: "isolated (default) or shared" };

function readTrust(i: Input): "isolated" | "shared" | undefined {
  const value = i.str("trust");
  if (value === undefined) return undefined;
  if (value !== "isolated" && value !== "shared")
    throw i.error(`--trust must be isolated or shared, not "${value}"`);
  return value;
}

const machineArg = (i: Input) => ({ id: i.arg("machine") });

export const machines = defineGroup("machines", "machines: where agents live, one box each", {
  create: defineCommand({
    summary: "create a machine: a place where agents live, with one box",
    args: ["name"],
    options: [orgOption, maxWorkspaceOption, memoryOption, cpusOption, trustOption],
    required: ["org"],
    parse: (i) => {
      const body: MachineCreateRequest = { org_id: i.need("org"), name: i.arg("name") };
      const max = i.whole("max-workspace-mib");
      const memory = i.whole("memory-mib");
      const cpus = i.decimal("cpus");
      const trust = readTrust(i);
      if (max !== undefined) body.max_workspace_mib = max;
      if (memory !== undefined) body.memory_mib = memory;
      if (cpus !== undefined) body.cpus = cpus;
      if (trust !== undefined) body.trust = trust;
      return { body };
    },
    run: async (ctx, p) => {
      const machine = await ctx.client.machines.create(p.body);
      return ctx.show(machine, () => detailView(machine));
    },
  }),
  list: defineCommand({
    summary: "list machines (of one organisation with --org)",
    options: [orgOption],
    parse: (i) => ({ orgId: i.str("org") }),
    run: async (ctx, p) => {
      const list = await ctx.client.machines.list({ org_id: p.orgId });
      return ctx.show(list, () => listView("machines", machineColumns, list.items));
    },
  }),
  get: defineCommand({
    summary: "show a machine and its box's state",
    args: ["machine"],
    parse: machineArg,
    run: async (ctx, p) => {
      const machine = await ctx.client.machines.get(p.id);
      return ctx.show(machine, () => detailView(machine));
    },
  }),
  update: defineCommand({
    summary: "rename or resize a machine (limits reach the next box start)",
    args: ["machine"],
    options: [nameOption, maxWorkspaceOption, memoryOption, cpusOption],
    parse: (i) => {
      const body: MachineUpdateRequest = {};
      const name = i.str("name");
      const max = i.whole("max-workspace-mib");
      const memory = i.whole("memory-mib");
      const cpus = i.decimal("cpus");
      if (name !== undefined) body.name = name;
      if (max !== undefined) body.max_workspace_mib = max;
      if (memory !== undefined) body.memory_mib = memory;
      if (cpus !== undefined) body.cpus = cpus;
      if (Object.keys(body).length === 0)
        throw i.error("say what to change: --name, --max-workspace-mib, --memory-mib or --cpus");
      return { id: i.arg("machine"), body };
    },
    run: async (ctx, p) => {
      const machine = await ctx.client.machines.update(p.id, p.body);
      return ctx.show(machine, () => detailView(machine));
    },
  }),
  stop: defineCommand({
    summary: "stop a machine's box; its files stay",
    args: ["machine"],
    parse: machineArg,
    run: async (ctx, p) => {
      const machine = await ctx.client.machines.stop(p.id);
      return ctx.show(machine, () => detailView(machine));
    },
  }),
  delete: defineCommand({
    summary: "delete a machine that has no agents",
    args: ["machine"],
    parse: machineArg,
    run: async (ctx, p) => {
      await ctx.client.machines.delete(p.id);
      return ctx.show(undefined, () => `deleted ${p.id}\n`);
    },
  }),
});
