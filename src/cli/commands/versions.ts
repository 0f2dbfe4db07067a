// `warren versions`, `warren canary` and `warren approvals`: an agent's versions (listed,
// read whole, made current), its canary (started, changed, ended, with each version's runs,
// failures and cost), and the tool calls waiting for a person's decision.
import type { Approval, Canary } from "../../sdk/index.js";
import { defineCommand, defineGroup, type Input } from "../command.js";
import { detailView, listView, short, type Column } from "../format.js";

const versionNumber = (i: Input): number => {
  const raw = i.arg("n");
  if (!/^\d+$/.test(raw) || Number(raw) < 1)
    throw i.error(`N must be a version number (1 or more), not "${raw}"`);
  return Number(raw);
};

function canaryView(c: Canary): string {
  const head = c.canary
    ? `canary: version ${c.canary.version} takes ${c.canary.share} of runs (started by ${c.canary.started_by} at ${c.canary.started_at}); current: ${c.current ?? "-"}\n`
    : `no canary; current: ${c.current ?? "-"}\n`;
  return (
    head +
    listView(
      "runs yet",
      [
        { header: "VERSION", value: (s) => s.version },
        { header: "RUNS", value: (s) => s.runs },
        { header: "FAILURES", value: (s) => s.failures },
        { header: "USD", value: (s) => s.usd.toFixed(4) },
      ],
      c.stats,
    )
  );
}

export const versions = defineGroup("versions", "an agent's versions: list, read, make current", {
  list: defineCommand({
    summary: "list the agent's versions, oldest first",
    args: ["agent"],
    parse: (i) => ({ agentId: i.arg("agent") }),
    run: async (ctx, p) => {
      const list = await ctx.client.agent(p.agentId).versions.list();
      return ctx.show(list, () =>
        listView(
          "versions",
          [
            { header: "VERSION", value: (v) => v.version },
            { header: "CREATED", value: (v) => v.created_at },
            { header: "BY", value: (v) => v.created_by ?? "-" },
            { header: "CURRENT", value: (v) => (v.current ? "yes" : "-") },
            { header: "CANARY", value: (v) => v.canary_share ?? "-" },
          ],
          list.items,
        ),
      );
    },
  }),
  show: defineCommand({
    summary: "show one version whole, sandbox policy included",
    args: ["agent", "n"],
    parse: (i) => ({ agentId: i.arg("agent"), version: versionNumber(i) }),
    run: async (ctx, p) => {
      const v = await ctx.client.agent(p.agentId).versions.get(p.version);
      return ctx.show(v, () => {
        const { instructions, tool_policy: policy, ...rest } = v;
        let text = detailView(rest);
        if (instructions) text += `\ninstructions:\n${instructions}\n`;
        if (policy) text += `\ntool_policy:\n${policy}\n`;
        return text;
      });
    },
  }),
  current: defineCommand({
    summary: "make a version current (promote or roll back); refused by the gate without a passed evaluation",
    args: ["agent", "n"],
    parse: (i) => ({ agentId: i.arg("agent"), version: versionNumber(i) }),
    run: async (ctx, p) => {
      const v = await ctx.client.agent(p.agentId).versions.makeCurrent(p.version);
      return ctx.show(v, () => `version ${v.version} is current\n`);
    },
  }),
});

export const canary = defineGroup("canary", "an agent's canary: a share of runs sent to another version", {
  show: defineCommand({
    summary: "the canary and each version's runs, failures and cost side by side",
    args: ["agent"],
    parse: (i) => ({ agentId: i.arg("agent") }),
    run: async (ctx, p) => {
      const c = await ctx.client.agent(p.agentId).versions.canary();
      return ctx.show(c, () => canaryView(c));
    },
  }),
  set: defineCommand({
    summary: "send a share of runs and new conversations to a version, sticky by routing key",
    args: ["agent"],
    options: [
      { name: "version", value: "<n>", help: "the version to canary" },
      { name: "share", value: "<0..1>", help: "the share of runs it takes, above 0 and below 1" },
    ],
    required: ["version", "share"],
    parse: (i) => {
      const version = i.whole("version");
      if (version === undefined || version < 1)
        throw i.error("--version must be a version number (1 or more)");
      const share = i.decimal("share");
      if (share === undefined || share <= 0 || share >= 1)
        throw i.error("--share must be above 0 and below 1 (to send every run, make the version current)");
      return { agentId: i.arg("agent"), version, share };
    },
    run: async (ctx, p) => {
      const c = await ctx.client.agent(p.agentId).versions.setCanary({ version: p.version, share: p.share });
      return ctx.show(c, () => canaryView(c));
    },
  }),
  end: defineCommand({
    summary: "end the canary: every run goes to the current version",
    args: ["agent"],
    parse: (i) => ({ agentId: i.arg("agent") }),
    run: async (ctx, p) => {
      const c = await ctx.client.agent(p.agentId).versions.setCanary({});
      return ctx.show(c, () => canaryView(c));
    },
  }),
});

const approvalColumns: Column<Approval>[] = [
  { header: "ID", value: (a) => a.id },
  { header: "STATUS", value: (a) => a.status },
  { header: "RUN", value: (a) => a.run_id },
  { header: "TOOL", value: (a) => a.tool },
  { header: "ARGUMENTS", value: (a) => short(JSON.stringify(a.arguments) ?? "", 60) },
  { header: "POLICY V", value: (a) => a.policy_version ?? "-" },
  { header: "SHA256", value: (a) => a.args_sha256 },
];

const STATUSES = ["waiting", "allowed", "denied", "expired"] as const;

export const approvals = defineGroup("approvals", "tool calls that wait for a person's decision", {
  list: defineCommand({
    summary: "list the organisation's approvals, newest first (default: those waiting)",
    args: ["org"],
    options: [
      { name: "status", value: "<status>", help: "waiting (default), allowed, denied, expired or all" },
      { name: "mine", help: "only those waiting for your decision" },
    ],
    parse: (i) => {
      const status = i.str("status") ?? "waiting";
      if (status !== "all" && !(STATUSES as readonly string[]).includes(status))
        throw i.error(`--status must be one of ${STATUSES.join(", ")} or all, not "${status}"`);
      const mine = i.flag("mine");
      if (mine && status !== "waiting") throw i.error("--mine lists waiting approvals only; drop --status");
      return {
        orgId: i.arg("org"),
        status: status === "all" ? undefined : (status as Approval["status"]),
        ...(mine ? { mine } : {}),
      };
    },
    run: async (ctx, p) => {
      const list = await ctx.client.approvals.ofOrg(p.orgId, p.status, p.mine ? { mine: true } : {});
      return ctx.show(list, () => listView("approvals", approvalColumns, list.items));
    },
  }),
  decide: defineCommand({
    summary: "allow or deny a waiting call, naming its arguments' SHA-256 (as listed)",
    args: ["id", "decision"],
    options: [
      { name: "sha256", value: "<hex>", help: "the approval's args_sha256: the call you decide on" },
      { name: "message", value: "<text>", help: "why (a denial's message is the model's answer)" },
      {
        name: "add-to-policy",
        help: "with allow, on an egress approval: also add its host:port to the agent's network allow list",
      },
    ],
    required: ["sha256"],
    parse: (i) => {
      const given = i.arg("decision");
      if (given !== "allow" && given !== "deny")
        throw i.error(`the decision is allow or deny, not "${given}"`);
      const decision: "allow" | "deny" = given;
      const sha = i.need("sha256");
      if (!/^[0-9a-fA-F]{64}$/.test(sha)) throw i.error("--sha256 must be the approval's 64 hex digits");
      const add = i.flag("add-to-policy");
      if (add && decision !== "allow") throw i.error("--add-to-policy goes with allow");
      return { id: i.arg("id"), decision, sha, message: i.str("message"), add };
    },
    run: async (ctx, p) => {
      const a = await ctx.client.approvals.decide(p.id, {
        decision: p.decision,
        args_sha256: p.sha,
        ...(p.message !== undefined ? { message: p.message } : {}),
        ...(p.add ? { add_to_policy: true } : {}),
      });
      return ctx.show(a, () => `approval ${a.id}: ${a.status} by ${a.decided_by ?? "-"} (${a.tool})\n`);
    },
  }),
});
