// `warren machines environment|propose|proposals|approve|refuse|packages`: a machine's
// environment (its base, its revisions with their packages and build state, a build's log), the
// proposals that ask for packages, and an owner's or admin's decision on them.
import type { MachinesApi } from "../../sdk/index.js";
import { defineCommand, type Input, type OptionDef } from "../command.js";
import { cell, detailView, listView, visible, type Column } from "../format.js";
import { orgOption } from "../options.js";

type MachineEnvironment = Awaited<ReturnType<MachinesApi["environment"]>>;
type EnvRevision = Awaited<ReturnType<MachinesApi["envRevision"]>>;
type EnvProposal = Awaited<ReturnType<MachinesApi["propose"]>>;

const STATES = ["pending", "approved", "refused"] as const;

const machineArg = (i: Input) => {
  const org = i.str("org");
  return { machineId: i.arg("machine"), ...(org === undefined ? {} : { orgId: org }) };
};

/** `a,b, c` (and the same option given again) as a list, empty entries dropped. */
function commaList(i: Input, name: string): string[] {
  const given = i.list(name) ?? [];
  return given.flatMap((v) => v.split(",")).flatMap((v) => (v.trim() === "" ? [] : [v.trim()]));
}

/** `name` or `name@version` (a scoped `@scope/name@version` too). */
function npmSpecs(i: Input): { name: string; version?: string }[] {
  return commaList(i, "npm").map((spec) => {
    const at = spec.lastIndexOf("@");
    return at > 0 ? { name: spec.slice(0, at), version: spec.slice(at + 1) } : { name: spec };
  });
}

const packagesOf = (l: readonly { name: string; version: string }[]) =>
  l.length === 0 ? "-" : l.map((p) => `${p.name} ${p.version}`).join(", ");

const revisionColumns: Column<EnvRevision>[] = [
  { header: "REVISION", value: (r) => r.revision },
  { header: "STATUS", value: (r) => r.status },
  { header: "PACKAGES", value: (r) => packagesOf([...r.packages, ...r.npm]) },
  { header: "BY", value: (r) => r.created_by },
  { header: "PROPOSAL", value: (r) => r.proposal_id },
  { header: "CREATED", value: (r) => r.created_at },
  { header: "FINISHED", value: (r) => r.finished_at },
];

const proposalColumns: Column<EnvProposal>[] = [
  { header: "ID", value: (p) => p.id },
  { header: "STATE", value: (p) => p.state },
  { header: "PACKAGES", value: (p) => packagesOf([...p.packages, ...p.npm]) },
  { header: "BY", value: (p) => p.proposed_by },
  { header: "WHY", value: (p) => p.why },
  { header: "REVISION", value: (p) => p.revision },
  { header: "CREATED", value: (p) => p.created_at },
];

/** The last `n` lines of a log, each made visible (no escape reaches the terminal). */
function tail(log: string, n: number): string {
  const lines = log.replace(/\n$/, "").split("\n");
  const cut = lines.length > n ? [`[... ${lines.length - n} line(s) before]`, ...lines.slice(-n)] : lines;
  return cut.map((l) => `  ${visible(l)}\n`).join("");
}

function environmentView(
  env: MachineEnvironment,
  revisions: readonly EnvRevision[],
  latest: EnvRevision | undefined,
  lines: number,
): string {
  const rows: [string, string][] = [
    ["machine", env.machine_id],
    ["base", env.base],
    ["revision", env.revision === 0 ? "0 (the base alone)" : String(env.revision)],
    ["box_revision", cell(env.box_revision)],
    ["building", cell(env.building)],
    ["packages", packagesOf(env.packages)],
    ["npm", packagesOf(env.npm)],
    ["pending_proposals", String(env.pending_proposals)],
  ];
  const width = Math.max(...rows.map(([k]) => k.length));
  let text = rows.map(([k, v]) => `${k.padEnd(width)}  ${visible(v)}`).join("\n") + "\n\n";
  text += listView("revisions yet", revisionColumns, revisions);
  if (latest?.log !== undefined) {
    text += `\nlog of revision ${latest.revision} (${latest.status}):\n`;
    text += latest.log === "" ? "  -\n" : tail(latest.log, lines);
  }
  return text;
}

const linesOption: OptionDef = {
  name: "lines",
  value: "<n>",
  help: "how many of the build log's last lines to show (default 20)",
};

export const environmentCommands = {
  environment: defineCommand({
    summary:
      "show a machine's environment: its base, revisions with their packages and build state, the latest build's log tail (--revision N: that revision's whole log)",
    args: ["machine"],
    options: [
      orgOption,
      { name: "revision", value: "<n>", help: "one revision, with its whole log" },
      linesOption,
    ],
    parse: (i) => {
      const revision = i.whole("revision");
      if (revision === 0) throw i.error("--revision must be 1 or more");
      return { ...machineArg(i), revision, lines: i.whole("lines") ?? 20 };
    },
    run: async (ctx, p) => {
      const api = ctx.client.machines;
      if (p.revision !== undefined) {
        const r = await api.envRevision(p.machineId, p.revision);
        return ctx.show(
          r,
          () => `${detailView(r, ["log"])}\nlog:\n${r.log ? tail(r.log, Infinity) : "  -\n"}`,
        );
      }
      const [env, revisions] = await Promise.all([
        api.environment(p.machineId),
        api.envRevisions(p.machineId),
      ]);
      const newest = revisions.items[0];
      const latest = newest ? await api.envRevision(p.machineId, newest.revision) : undefined;
      return ctx.show({ ...env, revisions: revisions.items }, () =>
        environmentView(env, revisions.items, latest, p.lines),
      );
    },
  }),
  propose: defineCommand({
    summary:
      "propose Debian packages (and npm ones) for a machine's environment; an owner or admin decides, nothing is built before",
    args: ["machine"],
    options: [
      orgOption,
      { name: "packages", value: "<a,b>", repeatable: true, help: "Debian package names, comma-separated" },
      {
        name: "npm",
        value: "<name[@version],...>",
        repeatable: true,
        help: "npm packages, installed globally",
      },
      { name: "why", value: "<text>", help: "why they are needed, for the person who decides" },
    ],
    required: ["why"],
    parse: (i) => {
      const packages = commaList(i, "packages");
      const npm = npmSpecs(i);
      if (packages.length === 0 && npm.length === 0)
        throw i.error("name packages: --packages a,b (or --npm)");
      return {
        ...machineArg(i),
        body: { packages, ...(npm.length > 0 ? { npm } : {}), why: i.need("why") },
      };
    },
    run: async (ctx, p) => {
      const made = await ctx.client.machines.propose(p.machineId, p.body);
      return ctx.show(
        made,
        () =>
          `proposal ${made.id} (pending): ${packagesOf([...made.packages, ...made.npm])}\n` +
          `an owner or admin decides: warren machines approve ${made.machine_id} ${made.id}\n`,
      );
    },
  }),
  proposals: defineCommand({
    summary: "list a machine's environment proposals, newest first",
    args: ["machine"],
    options: [orgOption, { name: "state", value: "<state>", help: `${STATES.join(", ")} (default: all)` }],
    parse: (i) => {
      const state = i.str("state");
      if (state !== undefined && !(STATES as readonly string[]).includes(state))
        throw i.error(`--state must be one of ${STATES.join(", ")}, not "${state}"`);
      return { ...machineArg(i), state: state as (typeof STATES)[number] | undefined };
    },
    run: async (ctx, p) => {
      const list = await ctx.client.machines.proposals(p.machineId, p.state ? { state: p.state } : {});
      return ctx.show(list, () => listView("proposals", proposalColumns, list.items));
    },
  }),
  approve: decideCommand("approve"),
  refuse: decideCommand("refuse"),
  packages: defineCommand({
    summary:
      "set a machine's packages (owner, admin): name (apt's candidate now) or name=version; a new revision is built",
    args: ["machine"],
    options: [
      orgOption,
      { name: "packages", value: "<a,b=1.0>", repeatable: true, help: "Debian packages, comma-separated" },
      {
        name: "npm",
        value: "<name[@version],...>",
        repeatable: true,
        help: "npm packages, installed globally",
      },
    ],
    parse: (i) => {
      const npm = npmSpecs(i);
      return {
        ...machineArg(i),
        body: { packages: commaList(i, "packages"), ...(npm.length > 0 ? { npm } : {}) },
      };
    },
    run: async (ctx, p) => {
      const r = await ctx.client.machines.setEnvironment(p.machineId, p.body);
      return ctx.show(
        r,
        () =>
          `revision ${r.revision} building: ${packagesOf([...r.packages, ...r.npm])}\n` +
          `its state and log: warren machines environment ${r.machine_id}\n`,
      );
    },
  }),
};

function decideCommand(decision: "approve" | "refuse") {
  return defineCommand({
    summary:
      decision === "approve"
        ? "approve an environment proposal (owner, admin): the next revision is built with its packages"
        : "refuse an environment proposal (owner, admin): nothing is built",
    args: ["machine", "proposal"],
    options: [orgOption],
    parse: (i) => ({ ...machineArg(i), proposal: i.arg("proposal") }),
    run: async (ctx, p) => {
      const d = await ctx.client.machines.decide(p.machineId, p.proposal, decision);
      return ctx.show(d, () =>
        d.state === "approved"
          ? `proposal ${d.id} approved: revision ${d.revision ?? "-"} building (warren machines environment ${d.machine_id})\n`
          : `proposal ${d.id} refused: nothing is built\n`,
      );
    },
  });
}
