// `warren evals`: an agent's evaluation suites, and `evals run AGENT --version N`, which
// evaluates a version and exits non-zero when it does not pass (for CI).
import type { EvalRun } from "../../sdk/index.js";
import { defineCommand, defineGroup } from "../command.js";
import { EXIT_FAILED, EXIT_OK } from "../context.js";
import { listView, short, type Column } from "../format.js";

const caseColumns: Column<EvalRun["cases"][number]>[] = [
  { header: "PASSED", value: (c) => (c.passed === null ? "-" : c.passed ? "yes" : "no") },
  { header: "RUN", value: (c) => c.run_id ?? "-" },
  { header: "STATUS", value: (c) => c.status },
  { header: "INPUT", value: (c) => short(c.input, 40) },
  { header: "WHY", value: (c) => short(c.reasons.join("; "), 60) },
];

/** How often an evaluation is looked at while it runs. */
const POLL_MS = 500;

export const evals = defineGroup("evals", "an agent's evaluation suites and runs", {
  list: defineCommand({
    summary: "list the agent's evaluation suites",
    args: ["agent"],
    parse: (i) => ({ agentId: i.arg("agent") }),
    run: async (ctx, p) => {
      const list = await ctx.client.agent(p.agentId).versions.suites();
      return ctx.show(list, () =>
        listView(
          "suites",
          [
            { header: "NAME", value: (s) => s.name },
            { header: "CASES", value: (s) => s.cases.length },
            { header: "PASS RATE", value: (s) => s.pass_rate },
          ],
          list.items,
        ),
      );
    },
  }),
  run: defineCommand({
    summary: "evaluate a version by a suite; exits 1 when it does not pass",
    args: ["agent"],
    options: [
      { name: "version", value: "<n>", help: "the version to evaluate" },
      { name: "suite", value: "<name>", help: "the suite (default: the agent's only suite)" },
    ],
    required: ["version"],
    parse: (i) => {
      const version = i.whole("version");
      if (version === undefined || version < 1)
        throw i.error("--version must be a version number (1 or more)");
      return { agentId: i.arg("agent"), version, suite: i.str("suite") };
    },
    run: async (ctx, p) => {
      const versions = ctx.client.agent(p.agentId).versions;
      let suite = p.suite;
      if (suite === undefined) {
        const all = (await versions.suites()).items;
        if (all.length !== 1)
          throw new Error(
            all.length === 0
              ? "the agent has no evaluation suite; write one first (POST /api/agents/:id/evals)"
              : `the agent has ${all.length} suites (${all.map((s) => s.name).join(", ")}); give --suite`,
          );
        suite = all[0]!.name;
      }
      const { eval_run_id: id } = await versions.evaluate(p.version, suite);
      let run = await versions.evalRun(id);
      while (run.status === "running") {
        await new Promise((r) => setTimeout(r, POLL_MS));
        run = await versions.evalRun(id);
      }
      await ctx.show(run, () => {
        const head = `evaluation ${run.id} of version ${run.version} by ${run.suite}: ${run.status} (pass rate ${run.pass_rate ?? "-"}, needs ${run.required_pass_rate})\n`;
        return head + listView("cases", caseColumns, run.cases);
      });
      return run.status === "passed" ? EXIT_OK : EXIT_FAILED;
    },
  }),
});
