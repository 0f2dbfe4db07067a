// `warren flows ...`: flows (named sets of an organisation's agents) and their instances, each
// with a /workspace its agents share; runs inside an instance; ending one keeps its workspace.
import type { Flow, FlowInstance, Run } from "../../sdk/index.js";
import { defineCommand, defineGroup, type Input } from "../command.js";
import { detailView, listView, type Column } from "../format.js";
import { commandOption, readTarget } from "../options.js";
import { targetBody } from "./exec.js";
import { finished, runColumns, runView } from "./runs.js";

const flowColumns: Column<Flow>[] = [
  { header: "ID", value: (f) => f.id },
  { header: "NAME", value: (f) => f.name },
  { header: "AGENTS", value: (f) => f.agent_ids.join(",") },
  { header: "CREATED", value: (f) => f.created_at },
];

const instanceColumns: Column<FlowInstance>[] = [
  { header: "ID", value: (i) => i.id },
  { header: "NAME", value: (i) => i.name },
  { header: "STATUS", value: (i) => i.status },
  { header: "RUNS", value: (i) => i.run_ids.length },
  { header: "CREATED", value: (i) => i.created_at },
];

const agentOption = {
  name: "agent",
  value: "<id>",
  help: "an agent (create: each of the flow's agents; run: the one that runs)",
  repeatable: true,
} as const;

/** An instance: its fields, its workspace, then its runs as a table. */
function instanceView(i: FlowInstance, runs: readonly Run[]): string {
  const head = detailView(
    {
      id: i.id,
      flow_id: i.flow_id,
      name: i.name,
      status: i.status,
      agents: i.agent_ids,
      workspace: i.workspace.host_path,
      workspace_mib: i.workspace.mib,
      created_at: i.created_at,
      ended_at: i.ended_at,
    },
    [],
  );
  return `${head}\n${listView("runs", runColumns, runs)}`;
}

const instanceArg = (i: Input) => ({ id: i.arg("instance") });

export const flows = defineGroup("flows", "flows of agents and their instances (a shared /workspace each)", {
  create: defineCommand({
    summary: "create a flow: a named set of the organisation's agents (--agent for each)",
    args: ["org", "name"],
    options: [agentOption],
    parse: (i) => {
      const agents = i.list("agent") ?? [];
      if (agents.length === 0) throw i.error("name the flow's agents with --agent <id> (once for each)");
      return { body: { org_id: i.arg("org"), name: i.arg("name"), agent_ids: agents } };
    },
    run: async (ctx, p) => {
      const flow = await ctx.client.flows.create(p.body);
      return ctx.show(flow, () => detailView(flow));
    },
  }),
  list: defineCommand({
    summary: "list an organisation's flows, newest first",
    args: ["org"],
    parse: (i) => ({ orgId: i.arg("org") }),
    run: async (ctx, p) => {
      const list = await ctx.client.flows.list(p.orgId);
      return ctx.show(list, () => listView("flows", flowColumns, list.items));
    },
  }),
  instances: defineCommand({
    summary: "list a flow's instances, newest first",
    args: ["flow"],
    parse: (i) => ({ id: i.arg("flow") }),
    run: async (ctx, p) => {
      const list = await ctx.client.flows.instances(p.id);
      return ctx.show(list, () => listView("instances", instanceColumns, list.items));
    },
  }),
  start: defineCommand({
    summary: "start an instance of a flow, with a /workspace of its own",
    args: ["flow"],
    options: [{ name: "name", value: "<name>", help: "a new name" }],
    parse: (i) => ({ id: i.arg("flow"), name: i.str("name") }),
    run: async (ctx, p) => {
      const inst = await ctx.client.flows.start(p.id, p.name !== undefined ? { name: p.name } : {});
      return ctx.show(inst, () => instanceView(inst, []));
    },
  }),
  run: defineCommand({
    summary: "start a run of one of the flow's agents inside the instance (after -- or --command)",
    args: ["instance"],
    options: [
      agentOption,
      commandOption,
      { name: "wait", help: "wait for the run to end, print its output and exit with its code" },
    ],
    rest: true,
    parse: (i) => {
      const agents = i.list("agent") ?? [];
      if (agents.length !== 1) throw i.error("name the agent that runs with --agent <id> (once)");
      return { id: i.arg("instance"), agentId: agents[0] ?? "", target: readTarget(i), wait: i.flag("wait") };
    },
    run: async (ctx, p) => {
      const run = await ctx.client.flows.run(p.id, {
        agent_id: p.agentId,
        kind: "command",
        ...targetBody(p.target),
      });
      if (!p.wait) return ctx.show(run, () => runView(run));
      return finished(ctx, await ctx.waitFor(`waiting for ${run.id}`, ctx.client.runs.wait(run.id)));
    },
  }),
  show: defineCommand({
    summary: "show an instance: its agents, its workspace and its runs",
    args: ["instance"],
    parse: instanceArg,
    run: async (ctx, p) => {
      const inst = await ctx.client.flows.instance(p.id);
      const runs = await Promise.all(inst.run_ids.map((id) => ctx.client.runs.get(id)));
      return ctx.show({ ...inst, runs }, () => instanceView(inst, runs));
    },
  }),
  end: defineCommand({
    summary: "end an instance: no run starts in it any more; its workspace is kept where it says",
    args: ["instance"],
    parse: instanceArg,
    run: async (ctx, p) => {
      const inst = await ctx.client.flows.end(p.id);
      return ctx.show(
        inst,
        () => `${inst.id} ${inst.status}; its workspace is kept at ${inst.workspace.host_path}\n`,
      );
    },
  }),
});
