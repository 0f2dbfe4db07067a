// Run by web-fetch-https.test.ts in a child process that trusts the upstreams' certificate
// (NODE_EXTRA_CA_CERTS is read only at a process's start): one web_fetch over HTTPS through
// the egress proxy's CONNECT tunnel, its answer printed as JSON.
import { AgentSpec } from "../../src/contract/spec.js";
import { startTestServer } from "../support/server.js";

const [port, ...names] = process.argv.slice(2);
const t = await startTestServer({
  env: { WARREN_EGRESS_PRIVATE_ALLOW: `127.0.0.1:${port}` },
  egressHosts: Object.fromEntries(names.map((n) => [n, ["127.0.0.1"]])),
});
try {
  const org = (await t.call("POST", "/api/orgs", { name: "https" })).body;
  const m = (await t.call("POST", "/api/machines", { org_id: org.id, name: "m", memory_mib: 256 })).body;
  const a = (await t.call("POST", "/api/agents", { org_id: org.id, machine_id: m.id, name: "a" })).body;
  await t.call("PATCH", `/api/agents/${a.id}`, {
    sandbox_policy: { network: { allow: [`pkg.test:${port}`] } },
  });
  const set = await t.server.tools.open({
    runId: "run_https",
    workload: await t.server.workloads.openAgent(a.id, { run: { id: "run_https" } }),
    spec: AgentSpec.parse({
      kind: "assistant",
      model: { provider: "script", name: "s.json" },
      tools: [{ type: "builtin", name: "web_fetch" }],
      tool_policy: "permit(principal, action, resource);",
    }),
    signal: new AbortController().signal,
  });
  const out = await set.call("web_fetch", { url: `https://pkg.test:${port}/hello` });
  await set.close();
  process.stdout.write(JSON.stringify({ output: out.output }));
} finally {
  await t.close();
}
