// The cost of OpenTelemetry: warm execs and throughput on a server exporting its traces and
// metrics over OTLP/HTTP to a receiver on loopback, and on one exporting nothing (no endpoint),
// timed from a client process of their own (bench/clients.ts). The two alternate (off, on, off,
// on: each a server of its own, its boxes started before the timing) so that a drift of the
// host weighs on both. Run alone: node --import tsx bench/tracing.ts [--quick]
import { fileURLToPath } from "node:url";
import { startOtlpReceiver } from "../test/support/otlp.js";
import { startTestServer } from "../test/support/server.js";
import { jsonClient, runClients } from "./clients.js";
import { summarize, type Sample } from "./stats.js";

export interface TracingSide {
  warm: Sample;
  /** Every warm exec's ms, in order. */
  ms: number[];
  execsPerS: number;
  errors: number;
}

export interface TracingBench {
  off: TracingSide;
  on: TracingSide;
  /** Spans the receiver got while export was on (box.exec among them). */
  spans: number;
  execSpans: number;
  /** (on - off) / off of the warm exec p50 and of the throughput. */
  warmDelta: number;
  throughputDelta: number;
}

/** One server, export on or off: `n` warm execs of one agent, then `clients` agents driven for `seconds`. */
async function side(
  endpoint: string | null,
  o: { n: number; clients: number; seconds: number },
): Promise<{ ms: number[]; done: number; seconds: number; errors: number }> {
  const t = await startTestServer({
    listen: true,
    env: { BOX_IDLE_S: "3600", ...(endpoint ? { OTEL_EXPORTER_OTLP_ENDPOINT: endpoint } : {}) },
  });
  try {
    const api = jsonClient(t.url!, 64);
    const { ok } = api;
    const org = await ok("POST", "/api/orgs", { name: "otel" });
    const m = await ok("POST", "/api/machines", { org_id: org.id, name: "m" });
    const agents: string[] = [];
    for (let i = 0; i < o.clients; i++)
      agents.push(
        (
          await ok("POST", "/api/agents", {
            org_id: org.id,
            machine_id: m.id,
            name: `a${i}`,
            max_workspace_mib: 64,
          })
        ).id,
      );
    const warm = await runClients({ kind: "warm", url: t.url!, agent: agents[0]!, n: o.n, warmup: 20 });
    if (warm.kind !== "warm") throw new Error("the clients answered another job");
    const load = await runClients({ kind: "throughput", url: t.url!, agents, seconds: o.seconds });
    if (load.kind !== "throughput") throw new Error("the clients answered another job");
    api.close();
    return { ms: warm.ms, done: load.done, seconds: load.seconds, errors: load.failures.length };
  } finally {
    await t.close();
  }
}

export async function benchTracing(
  o: { n: number; clients: number; seconds: number; rounds?: number },
  log: (line: string) => void,
): Promise<TracingBench> {
  const otlp = await startOtlpReceiver();
  try {
    const acc = {
      off: { ms: [] as number[], done: 0, seconds: 0, errors: 0 },
      on: { ms: [] as number[], done: 0, seconds: 0, errors: 0 },
    };
    const rounds = o.rounds ?? 2;
    const per = { n: Math.ceil(o.n / rounds), clients: o.clients, seconds: o.seconds / rounds };
    for (let r = 0; r < rounds; r++)
      for (const mode of ["off", "on"] as const) {
        log(
          `tracing: round ${r + 1} of ${rounds}, export ${mode}: ${per.n} warm execs, ${per.clients} clients`,
        );
        const s = await side(mode === "on" ? otlp.url : null, per);
        const a = acc[mode];
        a.ms.push(...s.ms);
        a.done += s.done;
        a.seconds += s.seconds;
        a.errors += s.errors;
      }
    const of = (a: (typeof acc)["off"]): TracingSide => ({
      warm: summarize(a.ms),
      ms: a.ms,
      execsPerS: a.done / a.seconds,
      errors: a.errors,
    });
    const off = of(acc.off);
    const on = of(acc.on);
    return {
      off,
      on,
      spans: otlp.spans.length,
      execSpans: otlp.spans.filter((s) => s.name === "box.exec").length,
      warmDelta: (on.warm.p50 - off.warm.p50) / off.warm.p50,
      throughputDelta: (on.execsPerS - off.execsPerS) / off.execsPerS,
    };
  } finally {
    await otlp.close();
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const quick = process.argv.includes("--quick");
  const r = await benchTracing(
    { n: quick ? 200 : 1000, clients: quick ? 10 : 50, seconds: quick ? 10 : 60 },
    (line) => process.stderr.write(`${line}\n`),
  );
  const pct = (x: number) => `${(x * 100).toFixed(1)}%`;
  for (const [mode, s] of [
    ["off", r.off],
    ["on", r.on],
  ] as const)
    console.log(
      `export ${mode}: warm exec p50 ${s.warm.p50.toFixed(2)} ms p99 ${s.warm.p99.toFixed(2)} ms (n ${s.warm.n}); ` +
        `throughput ${s.execsPerS.toFixed(0)} execs/s (${s.errors} errors)`,
    );
  console.log(
    `on vs off: warm p50 ${pct(r.warmDelta)}, throughput ${pct(r.throughputDelta)}; spans exported ${r.spans} (box.exec ${r.execSpans})`,
  );
}
