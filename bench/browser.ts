// The agent's browser, timed on a real box: its cold start (the box warm, Chromium started in
// it and a first page loaded through the egress proxy) and a browser tool call's round trip
// (browser_read of a loaded page, through the tool policy).
//
//   node --import tsx bench/browser.ts          (this section alone)
import http from "node:http";
import type { AddressInfo } from "node:net";
import { fileURLToPath } from "node:url";
import { AgentSpec } from "../src/contract/spec.js";
import { newId } from "../src/ids.js";
import { startTestServer } from "../test/support/server.js";
import { summarize, type Sample } from "./stats.js";

interface BrowserFigures {
  /** Browser started and the first page loaded, the box already running (ms), per round. */
  cold: Sample;
  /** One browser_read call (ms). */
  call: Sample;
}

export async function benchBrowser(o: { rounds: number; calls: number; log: (line: string) => void }) {
  const site = http.createServer((_, res) =>
    res.writeHead(200, { "content-type": "text/html" }).end("<p>hello</p>"),
  );
  await new Promise<void>((r) => site.listen(0, "127.0.0.1", r));
  const port = (site.address() as AddressInfo).port;
  const t = await startTestServer({
    env: { BOX_IDLE_S: "600", WARREN_EGRESS_PRIVATE_ALLOW: `127.0.0.1:${port}` },
    egressHosts: { "site.test": ["127.0.0.1"] },
  });
  try {
    const org = (await t.call("POST", "/api/orgs", { name: "bench-browser" })).body;
    const m = (await t.call("POST", "/api/machines", { org_id: org.id, name: "m", memory_mib: 2048 })).body;
    const a = (await t.call("POST", "/api/agents", { org_id: org.id, machine_id: m.id, name: "a" })).body;
    await t.call("PATCH", `/api/agents/${a.id}`, {
      sandbox_policy: { network: { allow: [`site.test:${port}`] } },
    });
    await t.call("POST", `/api/agents/${a.id}/exec`, { argv: ["true"] }); // the box warm
    const runId = newId("run");
    const set = await t.server.tools.open({
      runId,
      workload: await t.server.workloads.openAgent(a.id, { run: { id: runId } }),
      spec: AgentSpec.parse({
        kind: "assistant",
        model: { provider: "script", name: "s.json" },
        tools: [
          { type: "builtin", name: "browser_open" },
          { type: "builtin", name: "browser_read" },
        ],
        tool_policy: `permit(principal, action, resource);`,
      }),
      signal: new AbortController().signal,
    });
    const cold: number[] = [];
    for (let i = 0; i < o.rounds; i++) {
      await t.server.browsers.stop(a.id);
      const t0 = performance.now();
      const r = await set.call("browser_open", { url: `http://site.test:${port}/` });
      if (!/hello/.test(r.output)) throw new Error(`the page did not load: ${r.output.slice(0, 300)}`);
      cold.push(performance.now() - t0);
      o.log(`browser cold start ${i + 1}/${o.rounds}: ${cold.at(-1)?.toFixed(0)} ms`);
    }
    const call: number[] = [];
    for (let i = 0; i < o.calls; i++) {
      const t0 = performance.now();
      await set.call("browser_read", {});
      call.push(performance.now() - t0);
    }
    await set.close();
    return { cold: summarize(cold), call: summarize(call) } satisfies BrowserFigures;
  } finally {
    t.server.browsers.close();
    await t.server.runtime.stopAll("bench over");
    await t.close();
    await new Promise((r) => site.close(r));
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const f = await benchBrowser({ rounds: 3, calls: 20, log: (l) => console.log(l) });
  console.log(`browser cold start (box warm, first page loaded): p50 ${f.cold.p50.toFixed(0)} ms`);
  console.log(`browser tool call (browser_read) round trip: p50 ${f.call.p50.toFixed(1)} ms`);
}
