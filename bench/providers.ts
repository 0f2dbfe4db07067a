// Providers, side by side: resume from pause and a claim from the warm pool on `local`, and
// cold start and warm exec on `oci` (Podman) beside `local`'s warm exec; each through the
// API, as an operator sees it. Run alone: node --import tsx bench/providers.ts
// (WARREN_OCI_SOCKET: an engine for the oci rows, `scripts/oci.sh service`; else skipped).
import { pathToFileURL } from "node:url";
import { startTestServer, type TestServer } from "../test/support/server.js";
import { summarize, timeMany, type Sample } from "./stats.js";

export interface ProviderRow {
  what: string;
  sample: Sample | null;
  target: string;
  met: string;
  skipped?: string;
  samples_ms?: number[];
}

async function until(what: string, fn: () => boolean, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!fn()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

async function machineWithAgent(t: TestServer, name: string): Promise<{ machine: string; agent: string }> {
  const org = (await t.call("POST", "/api/orgs", { name })).body;
  const machine = (await t.call("POST", "/api/machines", { org_id: org.id, name, memory_mib: 512 })).body;
  const agent = (await t.call("POST", "/api/agents", { org_id: org.id, machine_id: machine.id, name: "a" }))
    .body;
  return { machine: machine.id as string, agent: agent.id as string };
}

async function exec(t: TestServer, agent: string): Promise<void> {
  const r = await t.call("POST", `/api/agents/${agent}/exec`, { argv: ["/bin/true"] });
  if (r.status !== 200 || r.body.exit_code !== 0) throw new Error(`exec failed: ${JSON.stringify(r.body)}`);
}

const timed = async (fn: () => Promise<void>): Promise<number> => {
  const t0 = performance.now();
  await fn();
  return performance.now() - t0;
};

export async function benchProviders(o: { n: number; log: (s: string) => void }): Promise<ProviderRow[]> {
  const rows: ProviderRow[] = [];
  const local = await startTestServer({
    listen: true,
    env: { BOX_IDLE_S: "3600", BOX_PAUSE_S: "0", BOX_WARM_POOL: "1" },
  });
  let localExec: Sample;
  try {
    const { machine, agent } = await machineWithAgent(local, "resume");
    await exec(local, agent);
    o.log(`providers: local warm exec, ${o.n * 5} execs`);
    localExec = await timeMany(o.n * 5, () => exec(local, agent));
    rows.push({
      what: "local warm exec (/bin/true through the API)",
      sample: localExec,
      target: "",
      met: "",
    });

    o.log(`providers: ${o.n} resumes from pause`);
    const resumes: number[] = [];
    for (let i = 0; i < o.n; i++) {
      await local.call("POST", `/api/machines/${machine}/pause`);
      resumes.push(await timed(() => exec(local, agent)));
    }
    const resume = summarize(resumes);
    // the resume itself is what the first exec costs beyond a warm one
    const extra = resume.p50 - localExec.p50;
    rows.push({
      what: `resume from pause: paused machine to first exec returning (resume itself ≈ ${extra.toFixed(1)} ms)`,
      sample: resume,
      target: "resume ≤ 10 ms",
      met: extra <= 10 ? "yes" : "no",
      samples_ms: resumes,
    });

    o.log(`providers: ${o.n} claims from the warm pool`);
    const claims: number[] = [];
    for (let i = 0; i < o.n; i++) {
      await until("a warm box", () => local.server.runtime.warmReady === 1);
      const m = await machineWithAgent(local, `claim${i}`);
      claims.push(await timed(() => exec(local, m.agent)));
      await local.call("POST", `/api/machines/${m.machine}/stop`);
    }
    const claim = summarize(claims);
    rows.push({
      what: "claim from the warm pool: a new machine's first exec returning",
      sample: claim,
      target: "≤ 30 ms",
      met: claim.p50 <= 30 ? "yes" : "no",
      samples_ms: claims,
    });
  } finally {
    await local.close();
  }

  const socket = process.env.WARREN_OCI_SOCKET;
  if (!socket) {
    const why = "WARREN_OCI_SOCKET is unset (scripts/oci.sh service)";
    for (const what of ["oci cold start", "oci warm exec"])
      rows.push({ what, sample: null, target: "", met: "", skipped: why });
    return rows;
  }
  const oci = await startTestServer({
    listen: true,
    env: { BOX_IDLE_S: "3600", BOX_PAUSE_S: "0", WARREN_PROVIDER: "oci", WARREN_OCI_SOCKET: socket },
  });
  try {
    const { machine, agent } = await machineWithAgent(oci, "oci");
    o.log(`providers: ${o.n} oci cold starts`);
    const colds: number[] = [];
    for (let i = 0; i < o.n; i++) {
      await oci.call("POST", `/api/machines/${machine}/stop`);
      colds.push(await timed(() => exec(oci, agent)));
    }
    rows.push({
      what: "oci cold start (Podman): stopped machine to first exec returning",
      sample: summarize(colds),
      target: "",
      met: "",
      samples_ms: colds,
    });
    o.log(`providers: oci warm exec, ${o.n * 5} execs`);
    const warm = await timeMany(o.n * 5, () => exec(oci, agent));
    rows.push({
      what: "oci warm exec (/bin/true through the API)",
      sample: warm,
      target: "within 2× of local",
      met: warm.p50 <= 2 * localExec.p50 ? "yes" : "no",
    });
  } finally {
    await oci.close();
  }
  return rows;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  const rows = await benchProviders({ n: 10, log: (s) => process.stderr.write(`${s}\n`) });
  for (const r of rows)
    process.stdout.write(
      r.sample
        ? `${r.what}: p50 ${r.sample.p50.toFixed(2)} ms, p99 ${r.sample.p99.toFixed(2)} ms${r.target ? ` (target ${r.target}: ${r.met})` : ""}\n`
        : `${r.what}: skipped, ${r.skipped}\n`,
    );
  process.exit(0);
}
