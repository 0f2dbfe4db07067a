// A Cedar tool-policy decision: one agent's policy of 8 policies (permits by tool and by
// server, forbids by argument pattern), asked for a mix of calls that allow and deny, timed
// one decision at a time (each a round trip to a Cedar worker thread). Run alone: node --import tsx bench/cedar.ts
import { pathToFileURL } from "node:url";
import { ToolPolicy, type ToolRequest } from "../src/policy/tool-policy.js";
import { summarize, type Sample } from "./stats.js";

const POLICY = `
@id("reads") permit(principal, action == Action::"call", resource == Tool::"read_file");
@id("lists") permit(principal, action == Action::"call", resource == Tool::"list_files");
@id("writes") permit(principal, action == Action::"call", resource == Tool::"write_file")
  when { context.arguments has path && context.arguments.path like "notes/*" };
@id("commands") permit(principal, action, resource == Tool::"run_command") when { context.run.via == "loop" };
@id("docs") permit(principal, action, resource in Server::"docs");
@id("api") permit(principal is Agent, action, resource) when { resource.kind == "http" && principal.org == "org_bench" };
@id("no-secrets") forbid(principal, action, resource)
  when { context.arguments has path && context.arguments.path like "*secret*" };
@id("no-rm") forbid(principal, action, resource == Tool::"run_command")
  when { context.arguments_json like "*rm -rf*" };
`;

function request(i: number): ToolRequest {
  const calls: [ToolRequest["tool"], unknown][] = [
    [{ name: "read_file", kind: "builtin" }, { path: "notes/today.md" }],
    [
      { name: "write_file", kind: "builtin" },
      { path: "notes/x.md", content: "a line of text\n".repeat(20) },
    ],
    [
      { name: "write_file", kind: "builtin" },
      { path: "src/main.ts", content: "x" },
    ],
    [{ name: "read_file", kind: "builtin" }, { path: "keys/secret.pem" }],
    [{ name: "run_command", kind: "builtin" }, { command: "ls -la && make test" }],
    [{ name: "run_command", kind: "builtin" }, { command: "rm -rf /home" }],
    [
      { name: "docs__search", kind: "mcp", server: "docs" },
      { query: "cedar", limit: 5 },
    ],
    [
      { name: "api", kind: "http" },
      { method: "GET", path: "items", query: { page: "2" } },
    ],
  ];
  const [tool, args] = calls[i % calls.length]!;
  return {
    agent: { id: "agt_bench", orgId: "org_bench" },
    tool,
    run: { id: "run_bench", via: "loop" },
    arguments: args,
  };
}

export interface CedarResult {
  policies: number;
  sample: Sample;
  allowed: number;
  denied: number;
}

export async function benchCedar(n = 20_000): Promise<CedarResult> {
  const policy = await ToolPolicy.compile(POLICY);
  if (policy.problem) throw new Error(`the bench policy does not validate: ${policy.problem}`);
  for (let i = 0; i < 500; i++) await policy.decide(request(i)); // warm up
  const ms: number[] = [];
  let allowed = 0;
  for (let i = 0; i < n; i++) {
    const req = request(i);
    const t = performance.now();
    const d = await policy.decide(req);
    ms.push(performance.now() - t);
    if (d.decision === "allow") allowed++;
  }
  return { policies: 8, sample: summarize(ms), allowed, denied: n - allowed };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  const r = await benchCedar();
  process.stdout.write(
    `cedar decision (${r.policies} policies): p50 ${(r.sample.p50 * 1000).toFixed(0)} µs, p99 ${(r.sample.p99 * 1000).toFixed(0)} µs over ${r.sample.n} decisions (${r.allowed} allowed, ${r.denied} denied)\n`,
  );
}
