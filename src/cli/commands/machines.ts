// `warren machines ...`: where agents live, one box each.
import type { Machine, MachineCreateRequest, MachineUpdateRequest } from "../../sdk/index.js";
import { TRUSTS } from "../../sdk/index.js";
import { defineCommand, defineGroup, type Input, type OptionDef } from "../command.js";
import { detailView, listView, mib, visible, type Column } from "../format.js";
import { maxWorkspaceOption, nameOption, orgOption } from "../options.js";
import { environmentCommands } from "./environments.js";

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

function readTrust(i: Input): (typeof TRUSTS)[number] | undefined {
  const value = i.str("trust");
  if (value === undefined) return undefined;
  const trust = TRUSTS.find((t) => t === value);
  if (!trust) throw i.error(`--trust must be ${TRUSTS.join(" or ")}, not "${value}"`);
  return trust;
}

const runawayOption: OptionDef = {
  name: "runaway-after-s",
  value: "<s>",
  help: "how long a command tree may hold the box at its pids or memory limit before it is stopped (default 60)",
};

// a machine by id, or by name in the organisation of --org (else $WARREN_ORG)
const machineArg = (i: Input) => {
  const org = i.str("org");
  return { machineId: i.arg("machine"), ...(org === undefined ? {} : { orgId: org }) };
};

const MiB = 1024 * 1024;

/** A machine, with its box's usage on one line and its events one a line. */
export function machineDetail(m: Machine): string {
  let text = detailView(m, ["box"]);
  const box = m.box;
  if (!box) return text;
  const u = box.usage;
  const rows: [string, string][] = [["box.state", box.state]];
  rows.push([
    "box.usage",
    u
      ? `cpu ${u.cpu_s.toFixed(1)} s, memory ${(u.memory_bytes / MiB).toFixed(1)} MiB (peak ${(u.memory_peak_bytes / MiB).toFixed(1)} MiB), ${u.pids} processes`
      : "-",
  ]);
  if (box.at_limit) rows.push(["box.at_limit", `${box.at_limit.limit} since ${box.at_limit.since}`]);
  rows.push(["box.events", box.events.length === 0 ? "-" : String(box.events.length)]);
  const width = Math.max(
    ...text.split("\n").map((l) => l.split("  ")[0]?.length ?? 0),
    ...rows.map(([k]) => k.length),
  );
  text += rows.map(([k, v]) => `${k.padEnd(width)}  ${visible(v)}`).join("\n") + "\n";
  for (const e of box.events) text += `  ${e.at}  ${e.type}  ${visible(e.detail)}\n`;
  return text;
}

export const machines = defineGroup("machines", "machines: where agents live, one box each", {
  create: defineCommand({
    summary: "create a machine: a place where agents live, with one box",
    args: ["name"],
    options: [orgOption, maxWorkspaceOption, memoryOption, cpusOption, trustOption, runawayOption],
    required: ["org"],
    parse: (i) => {
      const body: MachineCreateRequest = { org_id: i.need("org"), name: i.arg("name") };
      const max = i.whole("max-workspace-mib");
      const memory = i.whole("memory-mib");
      const cpus = i.decimal("cpus");
      const trust = readTrust(i);
      const runaway = i.whole("runaway-after-s");
      if (runaway !== undefined) body.runaway_after_s = runaway;
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
    summary: "show a machine and its box: state, usage, the limit it is at, its latest events",
    args: ["machine"],
    options: [orgOption],
    parse: machineArg,
    run: async (ctx, p) => {
      const machine = await ctx.client.machines.get(p.machineId);
      return ctx.show(machine, () => machineDetail(machine));
    },
  }),
  update: defineCommand({
    summary: "rename or resize a machine (limits reach the next box start)",
    args: ["machine"],
    options: [nameOption, maxWorkspaceOption, memoryOption, cpusOption, runawayOption],
    parse: (i) => {
      const body: MachineUpdateRequest = {};
      const name = i.str("name");
      const max = i.whole("max-workspace-mib");
      const memory = i.whole("memory-mib");
      const cpus = i.decimal("cpus");
      const runaway = i.whole("runaway-after-s");
      if (runaway !== undefined) body.runaway_after_s = runaway;
      if (name !== undefined) body.name = name;
      if (max !== undefined) body.max_workspace_mib = max;
      if (memory !== undefined) body.memory_mib = memory;
      if (cpus !== undefined) body.cpus = cpus;
      if (Object.keys(body).length === 0)
        throw i.error(
          "say what to change: --name, --max-workspace-mib, --memory-mib, --cpus or --runaway-after-s",
        );
      return { machineId: i.arg("machine"), body };
    },
    run: async (ctx, p) => {
      const machine = await ctx.client.machines.update(p.machineId, p.body);
      return ctx.show(machine, () => detailView(machine));
    },
  }),
  stop: defineCommand({
    summary: "stop a machine's box; its files stay",
    args: ["machine"],
    options: [orgOption],
    parse: machineArg,
    run: async (ctx, p) => {
      const machine = await ctx.client.machines.stop(p.machineId);
      return ctx.show(machine, () => detailView(machine));
    },
  }),
  pause: defineCommand({
    summary: "pause a machine's box: frozen in memory, resumed by the next command",
    args: ["machine"],
    options: [orgOption],
    parse: machineArg,
    run: async (ctx, p) => {
      const machine = await ctx.client.machines.pause(p.machineId);
      return ctx.show(machine, () => detailView(machine));
    },
  }),
  export: defineCommand({
    summary:
      "print a machine's definition (YAML): environment, limits, trust, agents, personas, areas, schedules, flows, secret names and grants",
    args: ["machine"],
    options: [orgOption],
    parse: machineArg,
    run: async (ctx, p) => {
      const d = await ctx.client.machines.definition(p.machineId);
      return ctx.show(d.definition, () => d.text);
    },
  }),
  import: defineCommand({
    summary: "rebuild a definition (a file, or - for stdin) as a new machine of an organisation",
    args: ["file"],
    options: [orgOption, nameOption],
    required: ["org"],
    parse: (i) => ({ orgId: i.need("org"), file: i.arg("file"), name: i.str("name") }),
    run: async (ctx, p) => {
      const text = (await ctx.readLocal(p.file, "the definition")).toString("utf8");
      const r = await ctx.client.machines.import(p.orgId, { text, ...(p.name ? { name: p.name } : {}) });
      const notes = [
        ...r.missing_secrets.map((s) => `secret ${s} is not in the organisation: set it, then grant it\n`),
        ...(r.environment_pending.length
          ? [
              `environment revision ${r.environment_revision ?? "-"} building: ${r.environment_pending.join(" ")} (warren machines environment ${r.machine.id})\n`,
            ]
          : []),
      ];
      return ctx.show(
        r,
        () => `imported machine ${r.machine.id} with ${r.agents.length} agent(s)\n${notes.join("")}`,
      );
    },
  }),
  ...environmentCommands,
  delete: defineCommand({
    summary: "delete a machine that has no agents",
    args: ["machine"],
    options: [orgOption],
    parse: machineArg,
    run: async (ctx, p) => {
      await ctx.client.machines.delete(p.machineId);
      return ctx.show(undefined, () => `deleted ${p.machineId}\n`);
    },
  }),
});
