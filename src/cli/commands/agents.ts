// `warren agents ...`: a home, a slot and a port block on a machine.
import type { Agent, AgentCreateRequest, AgentUpdateRequest, SandboxPolicyInput } from "../../sdk/index.js";
import { defineCommand, defineGroup, type CommandSpec, type Input } from "../command.js";
import { LocalError } from "../context.js";
import { listView, mib, type Column } from "../format.js";
import { machineOption, maxWorkspaceOption, nameOption, orgOption } from "../options.js";
import { agentView, readSpecOptions, saysSpec, specBody, specOptions } from "./agent-spec.js";

export const agentColumns: Column<Agent>[] = [
  { header: "ID", value: (a) => a.id },
  { header: "NAME", value: (a) => a.name },
  { header: "MACHINE", value: (a) => a.machine_id },
  { header: "KIND", value: (a) => a.kind },
  { header: "SLOT", value: (a) => a.slot },
  { header: "PORTS", value: (a) => `${a.ports.first}-${a.ports.last}` },
  { header: "DISK", value: (a) => mib(a.workspace_mib, a.max_workspace_mib) },
];

// an agent by id, or by name in the organisation of --org (else $WARREN_ORG)
const inOrg = (i: Input) => {
  const org = i.str("org");
  return org === undefined ? {} : { orgId: org };
};
const agentArg = (i: Input) => ({ agentId: i.arg("agent"), ...inOrg(i) });

const getAgent: CommandSpec<ReturnType<typeof agentArg>> = {
  summary: "show an agent",
  args: ["agent"],
  options: [orgOption],
  parse: agentArg,
  run: async (ctx, p) => {
    const agent = await ctx.client.agents.get(p.agentId);
    return ctx.show(agent, () => agentView(agent));
  },
};

export const agents = defineGroup("agents", "agents: a home, a slot and a port block on a machine", {
  create: defineCommand({
    summary: "create an agent on a machine",
    args: ["name"],
    options: [orgOption, machineOption, maxWorkspaceOption, ...specOptions],
    required: ["org", "machine"],
    parse: (i) => {
      const body: AgentCreateRequest = {
        org_id: i.need("org"),
        machine_id: i.need("machine"),
        name: i.arg("name"),
      };
      const max = i.whole("max-workspace-mib");
      if (max !== undefined) body.max_workspace_mib = max;
      const spec = readSpecOptions(i);
      return { body, ...(saysSpec(spec) ? { spec } : {}) };
    },
    run: async (ctx, p) => {
      const agent = await ctx.client.agents.create({
        ...p.body,
        ...(p.spec ? await specBody(ctx, p.spec) : {}),
      });
      return ctx.show(agent, () => agentView(agent));
    },
  }),
  list: defineCommand({
    summary: "list agents (of one organisation or machine)",
    options: [orgOption, machineOption],
    parse: (i) => ({ orgId: i.str("org"), machineId: i.str("machine") }),
    run: async (ctx, p) => {
      const list = await ctx.client.agents.list({ org_id: p.orgId, machine_id: p.machineId });
      return ctx.show(list, () => listView("agents", agentColumns, list.items));
    },
  }),
  get: defineCommand(getAgent),
  // the same as get, under the name people reach for when they want the spec
  show: defineCommand({
    ...getAgent,
    summary: "show an agent with its spec: kind, model, instructions, tools, tool policy, limits",
  }),
  update: defineCommand({
    summary: "rename an agent, change its disk cap, its sandbox policy or its spec (a new version)",
    args: ["agent"],
    options: [
      orgOption,
      nameOption,
      maxWorkspaceOption,
      { name: "policy-file", value: "<file>", help: "a JSON file holding the sandbox policy" },
      ...specOptions,
    ],
    parse: (i) => {
      const body: AgentUpdateRequest = {};
      const name = i.str("name");
      const max = i.whole("max-workspace-mib");
      const policyFile = i.str("policy-file");
      if (name !== undefined) body.name = name;
      if (max !== undefined) body.max_workspace_mib = max;
      const spec = readSpecOptions(i);
      if (Object.keys(body).length === 0 && policyFile === undefined && !saysSpec(spec)) {
        throw i.error("say what to change: --name, --max-workspace-mib, --policy-file or a spec option");
      }
      return { agentId: i.arg("agent"), ...inOrg(i), body, policyFile, ...(saysSpec(spec) ? { spec } : {}) };
    },
    run: async (ctx, p) => {
      // limits and the model's parts change what the agent has now
      const current = p.spec ? await ctx.client.agents.get(p.agentId) : undefined;
      const body = { ...p.body, ...(p.spec ? await specBody(ctx, p.spec, current) : {}) };
      if (p.policyFile !== undefined) {
        const text = (await ctx.readLocal(p.policyFile, "the policy file")).toString("utf8");
        try {
          body.sandbox_policy = JSON.parse(text) as SandboxPolicyInput;
        } catch (err) {
          throw new LocalError(
            "local.policy",
            `${p.policyFile} is not JSON (${(err as Error).message}); the server checks the rest`,
          );
        }
      }
      const agent = await ctx.client.agents.update(p.agentId, body);
      return ctx.show(agent, () => agentView(agent));
    },
  }),
  delete: defineCommand({
    summary: "delete an agent and its home",
    args: ["agent"],
    options: [orgOption],
    parse: agentArg,
    run: async (ctx, p) => {
      await ctx.client.agents.delete(p.agentId);
      return ctx.show(undefined, () => `deleted ${p.agentId}\n`);
    },
  }),
});
