// Providers, side by side in one run, each through the API as an operator sees it: cold
// start on `local`, on `oci` (Podman) and a bare `podman run` of the same image (the peer);
// resume from pause and a claim from the warm pool on each provider; warm exec on each, with
// oci's ratio to local's. Run alone, or only some rows:
//   node --import tsx bench/providers.ts [row ...]      rows: ROW_NAMES below
// WARREN_OCI_SOCKET names an engine for the oci rows; unset, Podman's service is started for
// the run (scripts/oci.sh service, and the image built: scripts/oci.sh image) and ended after
// it; without podman the oci rows are skipped. WARREN_OCI_IMAGE: default warren-box:latest.
import { spawn, spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { BOX_PATHS } from "../src/boxes/paths.js";
import { Engine } from "../src/boxes/oci/engine.js";
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

const ROW_NAMES = ["cold", "exec", "resume", "claim", "peer"] as const;
type RowName = (typeof ROW_NAMES)[number];
type Provider = "local" | "oci";

async function until(what: string, fn: () => boolean, timeoutMs = 60_000): Promise<void> {
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

const row = (what: string, samples: number[], target = "", met = ""): ProviderRow => ({
  what,
  sample: summarize(samples),
  target,
  met,
  samples_ms: samples,
});

interface Ctx {
  n: number;
  log: (s: string) => void;
  rows: ProviderRow[];
  want: (r: RowName) => boolean;
}

/** One provider's server (a warm pool of one) and a machine with an agent, started once. */
interface Side {
  p: Provider;
  t: TestServer;
  machine: string;
  agent: string;
}

async function side(p: Provider, env: Record<string, string>): Promise<Side> {
  const t = await startTestServer({
    listen: true,
    env: { BOX_IDLE_S: "3600", BOX_PAUSE_S: "0", BOX_WARM_POOL: "1", ...env },
  });
  const { machine, agent } = await machineWithAgent(t, `${p}-bench`);
  await exec(t, agent);
  return { p, t, machine, agent };
}

async function coldRow(c: Ctx, { p, t, machine, agent }: Side): Promise<void> {
  c.log(`providers: ${c.n} ${p} cold starts`);
  const colds: number[] = [];
  for (let i = 0; i < c.n; i++) {
    await t.call("POST", `/api/machines/${machine}/stop`);
    colds.push(await timed(() => exec(t, agent)));
  }
  c.rows.push(row(`${p} cold start: stopped machine to first exec returning`, colds));
}

/** Warm execs on every provider in turn, one of each after the other: the same host's load for all. */
async function execRows(c: Ctx, sides: Side[]): Promise<void> {
  c.log(`providers: warm exec, ${c.n * 5} execs on each of ${sides.map((s) => s.p).join(", ")}`);
  const samples = sides.map(() => [] as number[]);
  for (let i = 0; i < 10 + c.n * 5; i++)
    for (const [k, s] of sides.entries()) {
      const ms = await timed(() => exec(s.t, s.agent));
      if (i >= 10) samples[k]!.push(ms);
    }
  const local = summarize(samples[0]!).p50;
  for (const [k, s] of sides.entries()) {
    const sample = summarize(samples[k]!);
    const ratio = sample.p50 / local;
    c.rows.push({
      what: `${s.p} warm exec (/bin/true through the API)${k > 0 ? `, ${ratio.toFixed(2)}× local's` : ""}`,
      sample,
      target: k > 0 ? "within 2× of local" : "",
      met: k > 0 ? (ratio <= 2 ? "yes" : "no") : "",
    });
  }
}

async function resumeRow(c: Ctx, { p, t, machine, agent }: Side): Promise<void> {
  c.log(`providers: ${c.n} ${p} resumes from pause`);
  const warm = await timeMany(c.n, () => exec(t, agent));
  const resumes: number[] = [];
  for (let i = 0; i < c.n; i++) {
    const r = await t.call("POST", `/api/machines/${machine}/pause`);
    if (r.body.state !== "paused") throw new Error(`pause failed: ${JSON.stringify(r.body)}`);
    resumes.push(await timed(() => exec(t, agent)));
  }
  // the resume itself is what the first exec costs beyond a warm one
  const extra = summarize(resumes).p50 - warm.p50;
  c.rows.push(
    row(
      `${p} resume from pause: paused machine to first exec returning (resume itself ≈ ${extra.toFixed(1)} ms)`,
      resumes,
      "resume ≤ 10 ms",
      extra <= 10 ? "yes" : "no",
    ),
  );
}

async function claimRow(c: Ctx, { p, t }: Side): Promise<void> {
  c.log(`providers: ${c.n} ${p} claims from the warm pool`);
  const claims: number[] = [];
  for (let i = 0; i < c.n; i++) {
    await until("a warm box", () => t.server.runtime.warmReady === 1);
    const m = await machineWithAgent(t, `claim${i}`);
    claims.push(await timed(() => exec(t, m.agent)));
    await t.call("POST", `/api/machines/${m.machine}/stop`);
  }
  const p50 = summarize(claims).p50;
  c.rows.push(
    row(
      `${p} claim from the warm pool: a new machine's first exec returning`,
      claims,
      "≤ 30 ms",
      p50 <= 30 ? "yes" : "no",
    ),
  );
}

function run(argv: string[]): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(argv[0]!, argv.slice(1), { stdio: ["ignore", "ignore", "pipe"] });
    let err = "";
    child.stderr.on("data", (d: Buffer) => (err = (err + d.toString()).slice(-500)));
    child.on("error", reject);
    child.on("exit", (code) =>
      code === 0 ? resolve() : reject(new Error(`${argv.slice(0, 3).join(" ")} exited ${code}: ${err}`)),
    );
  });
}

/** The peer: a bare `podman run` of the boxes' image, its system folders bound as a box's. */
/** The OCI runtime the engine runs containers with (Podman's service: the one it started with). */
async function engineRuntime(socket: string): Promise<string | null> {
  const info = await new Engine(socket).request("GET", "/info", undefined, 10_000).catch(() => null);
  const rt = (info?.body as { DefaultRuntime?: unknown } | null)?.DefaultRuntime;
  return typeof rt === "string" && rt ? rt : null;
}

async function peerRow(c: Ctx, image: string, runtime: string | null): Promise<void> {
  // the host's system folders as a box binds them (usrmerge's links are the image's own)
  const binds = BOX_PATHS.system
    .filter((d) => fs.lstatSync(d, { throwIfNoEntry: false })?.isDirectory())
    .flatMap((d) => ["-v", `${d}:${d}:ro`]);
  // the limits a box container has (the engine refuses a container higher ones here)
  const ulimits = ["--ulimit", "nofile=8192:8192", "--ulimit", "nproc=16384:16384"];
  // with the runtime the boxes' engine runs (crun refuses hybrid cgroup hosts: scripts/oci.sh)
  const rt = runtime ? ["--runtime", runtime] : [];
  const argv = ["podman", ...rt, "run", "--rm", "--network=none", ...ulimits, ...binds, image, "/bin/true"];
  c.log(`providers: ${c.n} runs of podman ${rt.join(" ")} run ${image}`);
  try {
    const s = await timeMany(c.n, () => run(argv), 2);
    c.rows.push({
      what: `peer: podman ${rt.length ? `${rt.join(" ")} ` : ""}run --rm ${image} /bin/true (the oci image)`,
      sample: s,
      target: "",
      met: "",
    });
  } catch (err) {
    c.rows.push({
      what: "peer: podman run of the oci image",
      sample: null,
      target: "",
      met: "",
      skipped: String(err),
    });
  }
}

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");

/** An engine for the oci rows: WARREN_OCI_SOCKET's, or Podman's service started for the run. */
function ociEngine(image: string): { socket: string; end: () => void } | { skip: string } {
  const given = process.env.WARREN_OCI_SOCKET;
  if (given) return { socket: given, end: () => {} };
  const oci = path.join(repoRoot, "scripts", "oci.sh");
  const sock = path.join(repoRoot, ".state", "oci-bench", "podman.sock");
  if (!(process.env.PATH ?? "").split(":").some((d) => d && fs.existsSync(path.join(d, "podman"))))
    return { skip: "podman is not installed (scripts/setup.sh installs it)" };
  const started = spawnSync(oci, ["service", sock], { encoding: "utf8" });
  const [socket, pid] = started.stdout.trim().split(/\s+/);
  if (started.status !== 0 || !socket || !pid)
    return { skip: `Podman's service did not start: ${started.stderr.trim().slice(-300)}` };
  const end = () => {
    try {
      process.kill(Number(pid), "SIGTERM");
    } catch {
      // gone
    }
  };
  const built = spawnSync(oci, ["image", image], { encoding: "utf8" });
  if (built.status !== 0) {
    end();
    return { skip: `the image could not be built: ${built.stderr.trim().slice(-300)}` };
  }
  return { socket, end };
}

export async function benchProviders(o: {
  n: number;
  log: (s: string) => void;
  only?: readonly string[];
}): Promise<ProviderRow[]> {
  const only = new Set(o.only ?? []);
  const c: Ctx = { n: o.n, log: o.log, rows: [], want: (r) => only.size === 0 || only.has(r) };
  const image = process.env.WARREN_OCI_IMAGE ?? "warren-box:latest";
  const engine = ociEngine(image);
  const socket = "socket" in engine ? engine.socket : undefined;
  const sides: Side[] = [];
  try {
    if (ROW_NAMES.some((r) => r !== "peer" && c.want(r))) {
      sides.push(await side("local", {}));
      if (socket)
        sides.push(
          await side("oci", { WARREN_PROVIDER: "oci", WARREN_OCI_SOCKET: socket, WARREN_OCI_IMAGE: image }),
        );
    }
    if (c.want("cold")) for (const s of sides) await coldRow(c, s);
    if (c.want("exec") && sides.length > 0) await execRows(c, sides);
    if (c.want("resume")) for (const s of sides) await resumeRow(c, s);
    if (c.want("claim")) for (const s of sides) await claimRow(c, s);
    if (socket && c.want("peer")) await peerRow(c, image, await engineRuntime(socket));
  } finally {
    for (const s of sides) await s.t.close();
    if ("end" in engine) engine.end();
  }
  if ("skip" in engine)
    for (const what of ROW_NAMES.filter((r) => c.want(r)))
      c.rows.push({ what: `oci ${what}`, sample: null, target: "", met: "", skipped: engine.skip });
  return c.rows;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  const only = process.argv.slice(2);
  const unknown = only.filter((r) => !(ROW_NAMES as readonly string[]).includes(r));
  if (unknown.length > 0) {
    process.stderr.write(`unknown rows ${unknown.join(", ")}; the rows: ${ROW_NAMES.join(", ")}\n`);
    process.exit(2);
  }
  const rows = await benchProviders({ n: 10, log: (s) => process.stderr.write(`${s}\n`), only });
  for (const r of rows)
    process.stdout.write(
      r.sample
        ? `${r.what}: p50 ${r.sample.p50.toFixed(2)} ms, p99 ${r.sample.p99.toFixed(2)} ms${r.target ? ` (target ${r.target}: ${r.met})` : ""}\n`
        : `${r.what}: skipped, ${r.skipped}\n`,
    );
  process.exit(0);
}
