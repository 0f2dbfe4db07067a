// `make bench`: one table, measured in one run on this host.
//
//   node --import tsx bench/main.ts          (after `npm run build`; `make bench` does both)
//   WARREN_BENCH_QUICK=1 ...                 fewer repetitions, a smaller home (a smoke run)
//
// Rows: the floor (a bare posix_spawn of /bin/true from a C helper, bench/floor.ts; Node's
// own spawn beside it), bubblewrap alone, the peers of
// ../shared/peers (podman run, podman exec, sandbox-runtime), warren's warm exec through the
// HTTP API and the phases of one (bench/phases.ts), its cold start, reads of one resource,
// density (20 machines x 10 agents live at once, boxd's memory), throughput (50 clients
// driving 50 agents), a
// Cedar tool-policy decision, the home measurement against du, the egress proxy against a
// direct connection (added latency of a request, throughput of one CONNECT tunnel), and a
// conversation's live stream (bench/conversations.ts: a message to its first event, the
// model's first token to the first piece of text, reading the stream back), and the schedule
// ticker with 1,000 schedules (bench/schedules.ts: a fire's delay after its slot). Targets
// missed print "no"; they never fail the run. An error of warren itself (a failed request, an
// exec that does not succeed, a box that does
// not come up, measure() disagreeing with du) exits non-zero. A peer that cannot run is a
// "skipped: <reason>" row.
//
// The table is printed on stdout and written as JSON to bench/results/latest.json.

import { spawn, spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { BoxdClient } from "../src/boxd/client.js";
import type { PingResult } from "../src/boxd/protocol.js";
import { startTestServer, type TestServer } from "../test/support/server.js";
import { benchCedar } from "./cedar.js";
import { jsonClient, runClients } from "./clients.js";
import { benchConversations } from "./conversations.js";
import { benchBurst } from "./burst.js";
import { benchForks } from "./forks.js";
import { benchProviders } from "./providers.js";
import { buildFloor, floorCommand, floorSource, floorTimes, timeFloor } from "./floor.js";
import { tracePhases } from "./phases.js";
import { benchEgress, egressTable } from "./egress.js";
import { benchEgressAsk, egressAskTable } from "./egress-ask.js";
import { benchMeasure } from "./measure.js";
import { benchRedaction, median } from "./redact.js";
import { benchSchedules } from "./schedules.js";
import { benchBrowser } from "./browser.js";
import { benchTracing } from "./tracing.js";
import { fmt, percentile, summarize, table, timeMany, type Sample } from "./stats.js";

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
// ../shared/peers beside the checkout (or beside its worktrees' folder), or WARREN_PEERS_DIR
const peersDir =
  process.env.WARREN_PEERS_DIR ??
  [path.resolve(repoRoot, "../shared/peers"), path.resolve(repoRoot, "../../shared/peers")].find((d) =>
    fs.existsSync(d),
  ) ??
  path.resolve(repoRoot, "../shared/peers");
const resultsFile = path.join(repoRoot, "bench", "results", "latest.json");

const quick = process.env.WARREN_BENCH_QUICK === "1";
const N = {
  floor: quick ? 50 : 300,
  bwrap: quick ? 20 : 100,
  peer: quick ? 5 : 20,
  warm: quick ? 50 : 500,
  cold: quick ? 3 : 10,
  machines: quick ? 4 : 20,
  agentsPerMachine: 10,
  files: quick ? 10_000 : 100_000,
  measureRuns: quick ? 3 : 7,
  cedar: quick ? 2_000 : 20_000,
  traced: quick ? 20 : 100,
  gets: quick ? 200 : 1000,
  clients: 50,
  throughputS: quick ? 5 : 60,
};

/** The targets of a warm exec, in one run: against the real floor and against podman exec. */
const WARM_VS_FLOOR = 3;
/** The program's own phase in the box (execve to reaped) against the floor's whole spawn. */
const PROGRAM_VS_FLOOR = 1.5;
const WARM_VS_PODMAN_EXEC = 50;

const MiB = 1024 * 1024;
/** boxd's idle private memory per box before the exec path was reworked (RssAnon median, this
 * host, `make bench` of 2026-12-01), and the slack "unchanged" allows: four pages. */
const IDLE_ANON_BEFORE = 483_328;
const IDLE_ANON_SLACK = 16 * 1024;
const PEER_SETUP_TIMEOUT_MS = 20 * 60_000;
const PEER_RUN_TIMEOUT_MS = 60_000;
const PODMAN = ["podman", "--runtime", "runc", "--cgroup-manager", "cgroupfs"];
const BWRAP = [
  "bwrap",
  "--unshare-all",
  "--ro-bind",
  "/usr",
  "/usr",
  ...usrMergeLinks(),
  "--proc",
  "/proc",
  "--dev",
  "/dev",
  "/bin/true",
];

const log = (line: string): void => {
  process.stderr.write(`bench: ${line}\n`);
};

// ---- cleanup: every temp dir, box, server and container this run made ------------------

const cleanups: { what: string; fn: () => Promise<void> | void }[] = [];
/** Runs the cleanups registered so far, last first, each once. */
async function cleanup(): Promise<void> {
  for (let c = cleanups.pop(); c; c = cleanups.pop()) {
    try {
      await c.fn();
    } catch (err) {
      log(`cleanup of ${c.what} failed: ${messageOf(err)}`);
    }
  }
}
for (const sig of ["SIGINT", "SIGTERM"] as const) {
  process.once(sig, () => {
    log(`${sig}: cleaning up`);
    void cleanup().finally(() => process.exit(130));
  });
}

/** An error of warren itself: the run exits non-zero. */
class WarrenFailure extends Error {
  override name = "WarrenFailure";
}

const messageOf = (e: unknown): string => (e instanceof Error ? e.message : String(e));

// ---- the table ---------------------------------------------------------------------------

interface Row {
  what: string;
  p50: string;
  p99: string;
  vsFloor: string;
  target: string;
  met: string;
  /** The figures behind the cells, for the JSON. */
  data: Record<string, unknown>;
}

const rows: Row[] = [];
let floorP50 = NaN;
/** podman exec's p50, when the peer ran. */
let podmanExecP50 = NaN;

const ratio = (x: number): string => (Number.isFinite(x) ? `${x < 10 ? x.toFixed(1) : x.toFixed(0)}×` : "-");
const mib = (bytes: number): string => `${(bytes / MiB).toFixed(1)} MiB`;
const yesNo = (ok: boolean): string => (ok ? "yes" : "no");

function timeRow(what: string, s: Sample, extra: Partial<Row> = {}, data: Record<string, unknown> = {}): Row {
  const row: Row = {
    what,
    p50: fmt(s.p50),
    p99: fmt(s.p99),
    vsFloor: ratio(s.p50 / floorP50),
    target: "",
    met: "",
    ...extra,
    data: { n: s.n, p50_ms: s.p50, p99_ms: s.p99, vs_floor: s.p50 / floorP50, ...data },
  };
  rows.push(row);
  return row;
}

function skipRow(what: string, reason: string): void {
  rows.push({
    what,
    p50: `skipped: ${reason}`,
    p99: "",
    vsFloor: "",
    target: "",
    met: "",
    data: { skipped: reason },
  });
}

// ---- spawning ------------------------------------------------------------------------------

/** /bin, /lib, /lib64 as the host has them: symlinks on a usrmerged host (Debian 12), else binds. */
function usrMergeLinks(): string[] {
  const out: string[] = [];
  for (const dir of ["/bin", "/lib", "/lib64"]) {
    let st: fs.Stats;
    try {
      st = fs.lstatSync(dir);
    } catch {
      continue;
    }
    if (st.isSymbolicLink()) out.push("--symlink", fs.readlinkSync(dir), dir);
    else if (st.isDirectory()) out.push("--ro-bind", dir, dir);
  }
  return out;
}

/** Spawns argv with no stdio and resolves when it exits; rejects on a non-zero exit. */
function spawnQuiet(argv: string[], timeoutMs = PEER_RUN_TIMEOUT_MS): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(argv[0]!, argv.slice(1), { stdio: "ignore" });
    const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
    child.once("error", (err) => {
      clearTimeout(timer);
      reject(err);
    });
    child.once("exit", (code, signal) => {
      clearTimeout(timer);
      if (code === 0) resolve();
      else reject(new Error(`exited with ${code ?? signal}`));
    });
  });
}

/** Runs argv to the end, collecting its output (for setup and for diagnosing failures). */
function runCollect(
  argv: string[],
  timeoutMs: number,
  opts: { cwd?: string } = {},
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(argv[0]!, argv.slice(1), {
      cwd: opts.cwd,
      stdio: ["ignore", "pipe", "pipe"],
      env: { ...process.env, DEBIAN_FRONTEND: "noninteractive" },
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (c: Buffer) => (stdout += c.toString()));
    child.stderr.on("data", (c: Buffer) => (stderr = (stderr + c.toString()).slice(-4000)));
    const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
    child.once("error", (err) => {
      clearTimeout(timer);
      reject(err);
    });
    child.once("close", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/** Why argv fails, from one run with its stderr collected. */
async function whyFails(argv: string[]): Promise<string> {
  try {
    const r = await runCollect(argv, PEER_RUN_TIMEOUT_MS);
    const last = r.stderr.trim().split("\n").pop() ?? "";
    return `exit ${r.code}${last ? `: ${last.slice(0, 160)}` : ""}`;
  } catch (err) {
    return messageOf(err);
  }
}

/** Times argv spawned from Node; a failing command becomes a "skipped" row. */
async function timeCommand(
  what: string,
  argv: string[],
  n: number,
  warmup: number,
  data: Record<string, unknown> = {},
): Promise<Sample | undefined> {
  log(`${what}: ${n} runs of ${argv.join(" ")}`);
  try {
    const s = await timeMany(n, () => spawnQuiet(argv), warmup);
    timeRow(what, s, {}, { command: argv.join(" "), ...data });
    return s;
  } catch (err) {
    skipRow(what, `${argv[0]} failed (${await whyFails(argv)}; ${messageOf(err)})`);
    return undefined;
  }
}

/** Runs a peer's script; resolves to the argv to time, or the reason it is unavailable. */
async function preparePeer(script: string, args: string[]): Promise<{ argv: string[] } | { skip: string }> {
  const file = path.join(peersDir, script);
  if (!fs.existsSync(file)) return { skip: `${path.relative(repoRoot, file)} is missing` };
  const t = performance.now();
  let r: { code: number | null; stdout: string; stderr: string };
  try {
    r = await runCollect(["bash", file, ...args], PEER_SETUP_TIMEOUT_MS, { cwd: repoRoot });
  } catch (err) {
    return { skip: `${script} could not run: ${messageOf(err)}` };
  }
  log(`${script} ${args.join(" ")}: ready in ${Math.round(performance.now() - t)} ms`);
  const line =
    r.stdout
      .split("\n")
      .map((l) => l.trim())
      .filter(Boolean)
      .pop() ?? "";
  if (line.startsWith("unavailable:")) return { skip: line.slice("unavailable:".length).trim() };
  if (r.code !== 0 || !line) {
    const last = r.stderr.trim().split("\n").pop() ?? "";
    return { skip: `${script} ${args.join(" ")} exited ${r.code}${last ? `: ${last.slice(0, 160)}` : ""}` };
  }
  // The scripts print plain words (no quotes, no shell syntax); split them into an argv so that
  // no shell is timed. Anything fancier runs through /bin/sh -c.
  if (/["'`$\\|&;<>(){}*?]/.test(line)) return { argv: ["/bin/sh", "-c", line] };
  return { argv: line.split(/\s+/) };
}

const hasCommand = (name: string): boolean =>
  spawnSync("/bin/sh", ["-c", `command -v ${name}`], { stdio: "ignore" }).status === 0;

const podmanContainerExists = (name: string): boolean =>
  hasCommand("podman") &&
  spawnSync(PODMAN[0]!, [...PODMAN.slice(1), "container", "exists", name]).status === 0;

// ---- warren over HTTP ----------------------------------------------------------------------

interface Api {
  call(method: string, url: string, body?: unknown): Promise<{ status: number; body: any }>;
  /** A 2xx answer's body, else a WarrenFailure. */
  ok(method: string, url: string, body?: unknown): Promise<any>;
  /** Runs `argv` as the agent; a WarrenFailure unless it exits 0. */
  exec(agentId: string, argv?: string[]): Promise<void>;
  close(): void;
}

function httpApi(baseUrl: string, maxSockets: number): Api {
  const { call, close } = jsonClient(baseUrl, maxSockets);
  const ok = async (method: string, url: string, body?: unknown): Promise<any> => {
    const r = await call(method, url, body);
    if (r.status < 200 || r.status > 299)
      throw new WarrenFailure(`${method} ${url} answered ${r.status}: ${JSON.stringify(r.body)}`);
    return r.body;
  };
  return {
    call,
    ok,
    async exec(agentId, argv = ["/bin/true"]) {
      const r = await ok("POST", `/api/agents/${agentId}/exec`, { argv });
      if (r?.exit_code !== 0)
        throw new WarrenFailure(`exec ${argv.join(" ")} as ${agentId} did not succeed: ${JSON.stringify(r)}`);
    },
    close,
  };
}

/**
 * Providers side by side (bench/providers.ts): cold start on each and a bare podman run of
 * the oci image, warm exec, resume from pause, a claim from the warm pool.
 */
async function providerRows(): Promise<void> {
  for (const r of await benchProviders({ n: quick ? 3 : 20, log })) {
    if (!r.sample) skipRow(r.what, r.skipped ?? "not measured");
    else
      timeRow(
        r.what,
        r.sample,
        { target: r.target, met: r.met },
        r.samples_ms ? { samples_ms: r.samples_ms } : {},
      );
  }
}

async function egressRows(): Promise<void> {
  const e = await benchEgress({
    requests: quick ? 200 : 2000,
    megabytes: quick ? 256 : 1024,
    runs: quick ? 3 : 5,
    log,
  });
  for (const r of egressTable(e)) rows.push({ ...r, vsFloor: "" });
}

async function egressAskRows(): Promise<void> {
  const e = await benchEgressAsk({ requests: quick ? 200 : 1000, decisions: quick ? 5 : 20, log });
  for (const r of egressAskTable(e)) rows.push({ ...r, vsFloor: "" });
}

async function conversationRows(): Promise<void> {
  const c = await benchConversations({ turns: quick ? 3 : 20, tokens: 400, log });
  rows.push({
    what: `conversation: a message posted to its turn's first event on the stream (${c.turns} turns)`,
    p50: fmt(c.firstEvent.p50),
    p99: fmt(c.firstEvent.p99),
    vsFloor: "",
    target: "",
    met: "",
    data: { ...c.firstEvent },
  });
  rows.push({
    what: "conversation: the model's first token to the stream's first piece of text",
    p50: fmt(c.firstText.p50),
    p99: fmt(c.firstText.p99),
    vsFloor: "",
    target: "p50 ≤ 50",
    met: yesNo(c.firstText.p50 <= 50),
    data: { ...c.firstText },
  });
  rows.push({
    what: `conversation: a client reading the whole stream from its start (${c.events} events)`,
    p50: `${c.eventsPerS.toFixed(0)} events/s`,
    p99: "",
    vsFloor: "",
    target: "",
    met: "",
    data: { events_per_s: c.eventsPerS, events: c.events },
  });
}

async function forkRows(): Promise<void> {
  const f = await benchForks({ forks: quick ? 3 : 7, files: 20_000, changed: 500, log });
  const what = `${f.files.toLocaleString("en-US")} files, ${f.changed} changed`;
  rows.push({
    what: `conversation fork: POST .../fork to its 201 (${what})`,
    p50: fmt(f.fork.p50),
    p99: fmt(f.fork.p99),
    vsFloor: ratio(f.fork.p50 / f.checkout.p50),
    target: "p50 ≤ 500",
    met: yesNo(f.fork.p50 <= 500),
    data: { ...f.fork, checkout_floor: f.checkout },
  });
  rows.push({
    what: `conversation fork: the source's pause while it runs (a read of it beyond its idle ${fmt(f.idleRead)} ms)`,
    p50: fmt(f.pause.p50),
    p99: fmt(f.pause.p99),
    vsFloor: "",
    target: "p50 ≤ 20",
    met: yesNo(f.pause.p50 <= 20),
    data: { ...f.pause, idle_read_ms: f.idleRead, event_loop_max_ms: f.loopMax },
  });
}

/** Time to a first command (computesdk's method on loopback), without and with the warm pool. */
async function burstRows(): Promise<void> {
  for (const pool of [0, 64]) {
    const b = await benchBurst({ n: quick ? 10 : 100, serial: quick ? 3 : 20, pool, log });
    const with_ = pool ? `warm pool of ${pool}` : "no warm pool";
    rows.push({
      what: `new machine to its first node -v, one at a time (${with_})`,
      p50: fmt(b.serial.p50),
      p99: fmt(b.serial.p99),
      vsFloor: "",
      target: "p50 ≤ 150",
      met: yesNo(b.serial.p50 <= 150),
      data: { ...b.serial, pool },
    });
    rows.push({
      what: `  a burst of ${b.burst.n} at once (p95 ${fmt(b.burst.p95)} ms, wall ${fmt(b.wallMs)} ms)`,
      p50: fmt(b.burst.p50),
      p99: fmt(b.burst.p99),
      vsFloor: "",
      target: "p50 ≤ 300, p95 ≤ 600",
      met: yesNo(b.burst.p50 <= 300 && b.burst.p95 <= 600),
      data: { ...b.burst, wall_ms: b.wallMs, pool },
    });
    // what the burst costs the host, and the wall time that cost alone needs on its cores
    rows.push({
      what: `    its CPU: ${fmt(b.cpu.perMachineMs)} ms per machine, every process (diagnostic); ${b.cpu.cores} cores busy all along need ≥ ${fmt(b.cpu.wallFloorMs)} ms for the ${b.burst.n}`,
      p50: "",
      p99: "",
      vsFloor: "",
      target: "",
      met: "",
      data: {
        cpu_ms_per_machine: b.cpu.perMachineMs,
        cores: b.cpu.cores,
        wall_floor_ms: b.cpu.wallFloorMs,
        pool,
      },
    });
  }
}

/** The agent's browser: its cold start (box warm, first page loaded) and a tool call's round trip (bench/browser.ts). */
async function browserRows(): Promise<void> {
  const b = await benchBrowser({ rounds: quick ? 2 : 5, calls: quick ? 10 : 50, log });
  rows.push({
    what: "browser cold start (box warm, first page loaded)",
    p50: fmt(b.cold.p50),
    p99: fmt(b.cold.p99),
    vsFloor: "",
    target: "",
    met: "",
    data: { ...b.cold },
  });
  rows.push({
    what: "browser tool call round trip (browser_read)",
    p50: fmt(b.call.p50),
    p99: fmt(b.call.p99),
    vsFloor: "",
    target: "",
    met: "",
    data: { ...b.call },
  });
}

async function scheduleRows(): Promise<void> {
  const c = await benchSchedules({ schedules: 1000, agents: 50, windowS: quick ? 20 : 60, log });
  rows.push({
    what: `schedule ticker: a fire handed over after its slot (${c.schedules} schedules, ${c.windowS} s)`,
    p50: fmt(c.ticker.p50),
    p99: fmt(c.ticker.p99),
    vsFloor: "",
    target: "p99 ≤ 1000",
    met: yesNo(c.ticker.p99 <= 1000),
    data: { ...c.ticker },
  });
  rows.push({
    what: `schedule fire: its run made after its slot (${c.fired} runs, ${c.skipped} fires skipped)`,
    p50: fmt(c.delay.p50),
    p99: fmt(c.delay.p99),
    vsFloor: "",
    target: "p99 ≤ 1000",
    met: yesNo(c.delay.p99 <= 1000),
    data: { ...c.delay, fired: c.fired, skipped: c.skipped },
  });
}

/** What OpenTelemetry's export (to a receiver on loopback) costs a warm exec and the throughput (bench/tracing.ts). */
async function tracingRows(): Promise<void> {
  const clients = quick ? 10 : N.clients;
  const r = await benchTracing({ n: N.warm, clients, seconds: N.throughputS }, log);
  const pct = (x: number) => `${x >= 0 ? "+" : ""}${(x * 100).toFixed(1)}%`;
  if (r.execSpans === 0)
    throw new WarrenFailure("tracing: the receiver got no exec span while export was on");
  for (const [mode, side] of [
    ["off (no OTLP endpoint)", r.off],
    ["on (OTLP/HTTP to loopback)", r.on],
  ] as const) {
    timeRow(`tracing ${mode}: warm exec /bin/true via the API`, side.warm, {
      ...(side === r.on ? { target: "p50 within 3% of off", met: yesNo(Math.abs(r.warmDelta) <= 0.03) } : {}),
    });
    rows.push({
      what: `tracing ${mode}: throughput, ${clients} clients (execs/s, errors)`,
      p50: `${side.execsPerS.toFixed(0)} execs/s`,
      p99: `${side.errors} errors`,
      vsFloor: side === r.on ? `${pct(r.throughputDelta)} vs off` : "",
      target: side === r.on ? "within 3% of off" : "",
      met: side === r.on ? yesNo(Math.abs(r.throughputDelta) <= 0.03) : "",
      data: { execs_per_s: side.execsPerS, errors: side.errors, clients },
    });
  }
  log(
    `tracing: warm p50 ${pct(r.warmDelta)}, throughput ${pct(r.throughputDelta)} with export on; ${r.spans} spans`,
  );
}

async function warren(): Promise<void> {
  log("warren: starting a server on loopback");
  const t: TestServer = await startTestServer({ listen: true, env: { BOX_IDLE_S: "3600" } });
  cleanups.push({ what: "the warren server, its boxes and its state folder", fn: () => t.close() });
  if (!t.url) throw new WarrenFailure("the server did not listen");
  const api = httpApi(t.url, 256);
  cleanups.push({ what: "the HTTP agent", fn: () => api.close() });

  // Warm exec.
  const org = await api.ok("POST", "/api/orgs", { name: "bench" });
  const m = await api.ok("POST", "/api/machines", { org_id: org.id, name: "warm" });
  const a = await api.ok("POST", "/api/agents", {
    org_id: org.id,
    machine_id: m.id,
    name: "a",
    max_workspace_mib: 1024,
  });
  let t0 = performance.now();
  await api.exec(a.id);
  log(`warren: first exec (box start) ${fmt(performance.now() - t0)} ms; ${N.warm} warm execs`);
  // timed from a client process of its own (bench/clients.ts), as an operator's would be
  const warmAnswer = await runClients({ kind: "warm", url: t.url, agent: a.id, n: N.warm, warmup: 20 });
  if (warmAnswer.kind !== "warm") throw new WarrenFailure("the clients answered another job");
  const warm = summarize(warmAnswer.ms);
  const vsPodman = podmanExecP50 / warm.p50;
  timeRow(
    "warren warm exec /bin/true via the API (HTTP keep-alive)",
    warm,
    {
      target: `≤ ${WARM_VS_FLOOR}× floor, ≥ ${WARM_VS_PODMAN_EXEC}× faster than podman exec (${ratio(vsPodman)})`,
      met: yesNo(
        warm.p50 <= WARM_VS_FLOOR * floorP50 && Number.isFinite(vsPodman) && vsPodman >= WARM_VS_PODMAN_EXEC,
      ),
    },
    { target_vs_floor: WARM_VS_FLOOR, vs_podman_exec: vsPodman, target_vs_podman_exec: WARM_VS_PODMAN_EXEC },
  );

  log(`warren: the phases of ${N.traced} traced warm execs`);
  const phases = await tracePhases(N.traced, () => api.exec(a.id));
  for (const p of phases) {
    // the command's own part in the box, against the floor's whole spawn (issue target 1.5×)
    const program = p.what.startsWith("the program");
    rows.push({
      what: `  phase: ${p.what}`,
      p50: p.p50.toFixed(3),
      p99: p.p99.toFixed(3),
      vsFloor: program ? ratio(p.p50 / floorP50) : "",
      target: program ? `≤ ${PROGRAM_VS_FLOOR}× floor` : "",
      met: program ? yesNo(p.p50 <= PROGRAM_VS_FLOOR * floorP50) : "",
      data: { n: p.n, p50_ms: p.p50, p99_ms: p.p99 },
    });
  }

  // the floor again as the agent's own command: the same helper built and run in the box tells
  // what its walls (mounts, cgroups, Landlock, seccomp, the pid namespace) add to a spawn apart
  // from what warren's way to the box adds
  log(`warren: the floor inside the box, ${N.floor} spawns`);
  const inBox = await api.ok("POST", `/api/agents/${a.id}/exec`, {
    command: floorCommand(N.floor, 20),
    stdin: floorSource(),
    timeout_ms: 300_000,
  });
  if (inBox.exit_code !== 0)
    throw new WarrenFailure(`the floor in the box exited ${inBox.exit_code}: ${inBox.stderr}`);
  timeRow(
    "floor inside a box: the same helper, run as the agent's command",
    floorTimes(inBox.stdout, N.floor, 20),
  );

  log(`warren: ${N.gets} reads of one resource each`);
  for (const [what, url, target] of [
    ["GET /health", "/health", NaN],
    ["GET /api/agents/:id (PGlite)", `/api/agents/${a.id}`, 1.5],
    ["GET /api/machines/:id (PGlite)", `/api/machines/${m.id}`, 1.5],
  ] as const) {
    const g = await timeMany(N.gets, () => api.ok("GET", url), 20);
    timeRow(
      `warren ${what}, one connection`,
      g,
      Number.isNaN(target)
        ? { vsFloor: "" }
        : { vsFloor: "", target: `p50 ≤ ${target}`, met: yesNo(g.p50 <= target) },
      Number.isNaN(target) ? {} : { target_ms: target },
    );
  }

  // Cold start: stopped machine to first exec returning.
  log(`warren: ${N.cold} cold starts`);
  const colds: number[] = [];
  for (let i = 0; i < N.cold; i++) {
    const stopped = await api.ok("POST", `/api/machines/${m.id}/stop`);
    if (stopped?.state !== "stopped") throw new WarrenFailure(`stop answered ${JSON.stringify(stopped)}`);
    t0 = performance.now();
    await api.exec(a.id);
    colds.push(performance.now() - t0);
  }
  const cold = summarize(colds);
  timeRow(
    "warren cold start: stopped machine to first exec returning",
    cold,
    { target: "≤ 100 ms", met: yesNo(cold.p50 <= 100) },
    { target_ms: 100, samples_ms: colds },
  );
  await api.ok("POST", `/api/machines/${m.id}/stop`);

  await density(t, api);
  await duringBomb(api, org.id, warm.p50);
}

/** How long after a classic bomb's exec answers its machine must be back under 50 processes. */
const BOMB_AFTER_S = 20;
const BOMB_WITHIN_S = BOMB_AFTER_S + 15;

/**
 * The classic fork bomb in an exec's foreground on one machine (runaway_after_s 20, the
 * default 4096 pids): the time from the exec's answer until that machine is back under 50
 * processes with a runaway event, and meanwhile warm execs of another agent on another
 * machine, one after another (a bomb must not starve the server or the host's other boxes).
 */
async function duringBomb(api: Api, orgId: string, quietP50: number): Promise<void> {
  log(
    `bomb: the classic fork bomb on one machine (runaway_after_s ${BOMB_AFTER_S}), execs on another meanwhile`,
  );
  const bm = await api.ok("POST", "/api/machines", {
    org_id: orgId,
    name: "bomb",
    runaway_after_s: BOMB_AFTER_S,
  });
  const calm = await api.ok("POST", "/api/machines", { org_id: orgId, name: "calm" });
  const ba = await api.ok("POST", "/api/agents", {
    org_id: orgId,
    machine_id: bm.id,
    name: "bomber",
    max_workspace_mib: 64,
  });
  const ca = await api.ok("POST", "/api/agents", {
    org_id: orgId,
    machine_id: calm.id,
    name: "calm",
    max_workspace_mib: 64,
  });
  try {
    await api.exec(ba.id);
    await api.exec(ca.id);
    const bomb = api.ok("POST", `/api/agents/${ba.id}/exec`, {
      command: ":(){ :|:& };: ; sleep 2; echo survived",
      timeout_ms: 120_000,
    });
    let answeredAt = NaN;
    void bomb.then(() => (answeredAt = performance.now()));
    const during: number[] = [];
    let backAt = NaN;
    const deadline = performance.now() + 180_000;
    while (Number.isNaN(backAt) && performance.now() < deadline) {
      const t0 = performance.now();
      await api.exec(ca.id);
      during.push(performance.now() - t0);
      if (Number.isNaN(answeredAt)) continue;
      const x = await api.ok("GET", `/api/machines/${bm.id}`);
      const stopped = (x.box.events as { type: string }[]).some((e) => e.type === "runaway");
      if (stopped && x.box.usage && x.box.usage.pids < 50) backAt = performance.now();
    }
    await bomb;
    const back = (backAt - answeredAt) / 1000;
    const s = summarize(during);
    timeRow(
      "warren warm exec on another machine during a fork bomb",
      s,
      { target: `p50 ≤ 4× the quiet p50 (${fmt(quietP50)} ms)`, met: yesNo(s.p50 <= 4 * quietP50) },
      { quiet_p50_ms: quietP50 },
    );
    rows.push({
      what: "  the bomb's machine back under 50 processes after the exec answered (s)",
      p50: Number.isNaN(back) ? "never" : back.toFixed(1),
      p99: "",
      vsFloor: "",
      target: `≤ ${BOMB_WITHIN_S} s`,
      met: yesNo(back <= BOMB_WITHIN_S),
      data: { back_s: back, runaway_after_s: BOMB_AFTER_S, target_s: BOMB_WITHIN_S },
    });
  } finally {
    await api.call("POST", `/api/machines/${bm.id}/stop`);
    await api.call("POST", `/api/machines/${calm.id}/stop`);
  }
}

async function density(t: TestServer, api: Api): Promise<void> {
  const boxes = N.machines;
  const per = N.agentsPerMachine;
  log(`density: creating ${boxes} machines × ${per} agents`);
  const org = await api.ok("POST", "/api/orgs", { name: "density" });
  const machines: { id: string; agents: string[] }[] = [];
  for (let i = 0; i < boxes; i++) {
    const m = await api.ok("POST", "/api/machines", { org_id: org.id, name: `m${i}`, memory_mib: 256 });
    const agents: string[] = [];
    for (let j = 0; j < per; j++) {
      const a = await api.ok("POST", "/api/agents", {
        org_id: org.id,
        machine_id: m.id,
        name: `a${j}`,
        max_workspace_mib: 100,
      });
      agents.push(a.id as string);
    }
    machines.push({ id: m.id as string, agents });
  }
  // From here on, every box of this org is stopped at the end, whatever happens.
  cleanups.push({
    what: "the density machines",
    fn: async () => {
      for (const m of machines) await api.ok("POST", `/api/machines/${m.id}/stop`);
    },
  });

  log(`density: exec true as all ${boxes * per} agents at once, from a client process`);
  const dense = await runClients({ kind: "density", url: t.url!, machines: machines.map((m) => m.agents) });
  if (dense.kind !== "density") throw new WarrenFailure("the clients answered another job");
  const perBox = dense.perMachineMs;
  const allUp = dense.wallMs;
  const running = (await t.server.provider.list({ "warren.kind": "machine" })).filter(
    (b) => b.state === "running",
  );
  const ours = machines.filter((m) => t.server.runtime.isRunning(m.id) && running.some((b) => b.id === m.id));
  if (ours.length !== boxes)
    throw new WarrenFailure(`${ours.length} of ${boxes} boxes are running after the execs`);
  if (running.length !== boxes)
    throw new WarrenFailure(`${running.length} boxes are running, expected exactly ${boxes}`);

  const up = summarize(perBox);
  timeRow(
    `density: ${boxes} boxes up at once, each until its ${per} agents' execs returned`,
    up,
    { vsFloor: "" },
    { wall_ms: allUp },
  );
  rows.push({
    what: `density: all ${boxes} boxes up, ${boxes * per} execs answered (wall time)`,
    p50: fmt(allUp),
    p99: "",
    vsFloor: "",
    target: boxes === 20 ? "≤ 1500" : "",
    met: boxes === 20 ? yesNo(allUp <= 1500) : "",
    data: { wall_ms: allUp, boxes, agents: boxes * per, target_ms: 1500 },
  });

  // boxd collects its garbage one second after its last connection closes: wait for idle.
  await new Promise((r) => setTimeout(r, 2500));
  const pings: PingResult[] = [];
  for (const m of machines) {
    const box = await t.server.provider.inspect(m.id);
    if (!box || box.state !== "running") throw new WarrenFailure(`box ${m.id} is not running`);
    pings.push(await new BoxdClient(box.endpoint).ping());
  }
  const stat = (pick: (p: PingResult) => number) => {
    const v = pings.map(pick).sort((x, y) => x - y);
    return { median: percentile(v, 50), max: v[v.length - 1] ?? NaN, sum: v.reduce((s, x) => s + x, 0) };
  };
  const rss = stat((p) => p.rssBytes);
  const anon = stat((p) => p.anonBytes);
  const pss = stat((p) => p.pssBytes);
  const memRow = (what: string, s: { median: number; max: number; sum: number }, extra: Partial<Row> = {}) =>
    rows.push({
      what,
      p50: `${mib(s.median)} (median)`,
      p99: `${mib(s.max)} (max)`,
      vsFloor: "",
      target: "",
      met: "",
      ...extra,
      data: { median_bytes: s.median, max_bytes: s.max, sum_bytes: s.sum, boxes },
    });
  memRow(`boxd idle resident memory (VmRSS) per box, ${boxes} boxes`, rss, {
    target: "≤ 40 MiB",
    met: yesNo(rss.max <= 40 * MiB),
  });
  memRow(`boxd idle private memory (RssAnon) per box`, anon, {
    target: `≤ ${(IDLE_ANON_BEFORE / 1024).toFixed(0)} KiB + 16 (unchanged)`,
    met: yesNo(anon.median <= IDLE_ANON_BEFORE + IDLE_ANON_SLACK),
  });
  memRow(`boxd idle proportional memory (PSS) per box`, pss);
  rows.push({
    what: `boxd private memory of all ${boxes} boxes (sum of RssAnon; of PSS)`,
    p50: mib(anon.sum),
    p99: mib(pss.sum),
    vsFloor: "",
    target: "",
    met: "",
    data: { anon_sum_bytes: anon.sum, pss_sum_bytes: pss.sum, boxes },
  });
  log(
    `density: VmRSS median ${mib(rss.median)} max ${mib(rss.max)}; RssAnon median ${mib(anon.median)}; ` +
      `PSS median ${mib(pss.median)}; all ${boxes} private ${mib(anon.sum)}`,
  );

  await throughput(t.url!, machines);

  log(`density: stopping ${boxes} machines`);
  for (const m of machines) await api.ok("POST", `/api/machines/${m.id}/stop`);
  if ((await t.server.provider.list({ "warren.kind": "machine" })).some((b) => b.state === "running"))
    throw new WarrenFailure("boxes are still running after every machine was stopped");
}

/** N.clients clients, each driving one agent of its own with execs back to back, for N.throughputS. */
async function throughput(url: string, machines: { agents: string[] }[]): Promise<void> {
  const agents = machines.flatMap((m) => m.agents).slice(0, N.clients);
  log(`throughput: ${agents.length} clients, one agent each, for ${N.throughputS} s, from a client process`);
  const answer = await runClients({ kind: "throughput", url, agents, seconds: N.throughputS });
  if (answer.kind !== "throughput") throw new WarrenFailure("the clients answered another job");
  const { done, seconds, failures } = answer;
  const perS = done / seconds;
  rows.push({
    what: `throughput: ${agents.length} clients driving ${agents.length} agents, ${os.cpus().length} cores (execs/s, errors)`,
    p50: `${perS.toFixed(0)} execs/s`,
    p99: `${failures.length} errors`,
    vsFloor: "",
    target: "≥ 300 execs/s",
    met: yesNo(perS >= 300),
    data: { execs: done, seconds, execs_per_s: perS, errors: failures.length, clients: agents.length },
  });
  if (failures.length > 0)
    throw new WarrenFailure(`throughput: ${failures.length} execs failed: ${failures[0]}`);
}

// ---- the run -------------------------------------------------------------------------------

function readOr(file: string, otherwise: string): string {
  try {
    return fs.readFileSync(file, "utf8");
  } catch {
    return otherwise;
  }
}

/** The cgroup hierarchies mounted here: v2 alone, v1 alone, or both (hybrid), with v1's controllers. */
function cgroupLayout(): string {
  const mounts = readOr("/proc/self/mounts", "")
    .split("\n")
    .map((l) => l.split(" "))
    .filter((f) => f[2] === "cgroup" || f[2] === "cgroup2");
  const v2 = mounts.filter((f) => f[2] === "cgroup2").map((f) => f[1]);
  const v1 = mounts
    .filter((f) => f[2] === "cgroup")
    .flatMap((f) =>
      (f[3] ?? "")
        .split(",")
        .filter((o) => !["rw", "ro", "relatime", "nosuid", "nodev", "noexec"].includes(o)),
    );
  const kind = v1.length && v2.length ? "hybrid" : v2.length ? "v2" : v1.length ? "v1" : "none";
  const v2Controllers = v2.map((m) => readOr(`${m}/cgroup.controllers`, "").trim() || "no controllers");
  return [
    kind,
    v1.length ? `v1: ${v1.join(" ")}` : "",
    v2.length ? `v2 at ${v2.join(", ")} (${v2Controllers.join("; ")})` : "",
  ]
    .filter(Boolean)
    .join("; ");
}

/**
 * Whether the host is a virtual machine's guest, and what its kernel puts on every entry and
 * idle: page-table isolation (two page-table switches per system call; a hypercall each on a
 * paravirtualized guest) and the idle driver (none: an idle vCPU halts and the hypervisor
 * takes it back, so the next wake-up of a process on it pays the host's round trip).
 */
function guestFacts(): string {
  const flags = /^flags\s*:(.*)$/m.exec(readOr("/proc/cpuinfo", ""))?.[1] ?? "";
  const guest = flags.split(/\s+/).includes("hypervisor");
  const kind = readOr("/sys/hypervisor/type", "").trim();
  const pti = readOr("/sys/devices/system/cpu/vulnerabilities/meltdown", "unknown").trim();
  const idle = readOr("/sys/devices/system/cpu/cpuidle/current_driver", "unknown").trim();
  const governor = readOr("/sys/devices/system/cpu/cpuidle/current_governor_ro", "").trim();
  return [
    guest ? `a virtual machine's guest${kind ? ` (${kind})` : ""}` : "bare metal (no hypervisor flag)",
    `meltdown: ${pti}`,
    `cpuidle driver: ${idle}${governor ? ` (${governor})` : ""}`,
  ].join("; ");
}

function environment(): Record<string, string> {
  const cpus = os.cpus();
  let distro = "";
  try {
    distro = /^PRETTY_NAME="?([^"\n]*)"?/m.exec(fs.readFileSync("/etc/os-release", "utf8"))?.[1] ?? "";
  } catch {
    // not Linux, or no os-release
  }
  return {
    date: new Date().toISOString(),
    host: `${distro || os.type()}, kernel ${os.release()} (${os.arch()})`,
    cgroups: cgroupLayout(),
    "security modules": readOr("/sys/kernel/security/lsm", "unknown").trim(),
    // what makes every system call and process switch dearer on a guest (docs/operations.md)
    guest: guestFacts(),
    cores: `${cpus.length} × ${cpus[0]?.model.trim() ?? "?"}`,
    memory: `${(os.totalmem() / 1024 ** 3).toFixed(1)} GiB`,
    node: process.version,
    "load average at start": os
      .loadavg()
      .map((x) => x.toFixed(2))
      .join(" "),
  };
}

async function main(): Promise<number> {
  const started = performance.now();
  const env = environment();
  let failure: unknown = null;
  try {
    // Peers first: their scripts may install packages, which must not overlap any timing.
    log(`preparing the peers in ${peersDir}`);
    const podmanExisted = podmanContainerExists("warren-peer");
    const podmanRun = await preparePeer("podman.sh", ["run"]);
    const podmanExec = await preparePeer("podman.sh", ["exec"]);
    const floorBuild = buildFloor();
    cleanups.push({
      what: "the floor helper",
      fn: () => fs.rmSync(floorBuild.dir, { recursive: true, force: true }),
    });
    if (!podmanExisted && podmanContainerExists("warren-peer")) {
      cleanups.push({
        what: "the warren-peer container",
        fn: async () => {
          const r = await runCollect([...PODMAN, "rm", "-f", "-t", "0", "warren-peer"], 120_000);
          if (r.code !== 0) throw new Error(r.stderr.trim());
        },
      });
    }
    const srt = await preparePeer("srt.sh", []);

    log(`floor: ${N.floor} bare posix_spawns of /bin/true, and as many from Node`);
    const floor = timeFloor(floorBuild.binary, N.floor, 20);
    floorP50 = floor.p50;
    timeRow("floor: posix_spawn /bin/true and wait (C helper)", floor, {}, { samples_ms: floor.samples_ms });
    // a command comes after its request: the CPU that spawns it has usually rested. On a guest
    // whose idle vCPU the hypervisor takes back, that spawn costs more (docs/operations.md);
    // shown beside the floor, never instead of it (every ratio stays against the floor)
    const rested = timeFloor(floorBuild.binary, Math.min(N.floor, 100), 5, 20_000);
    timeRow(
      "floor after a 20 ms rest (the same spawn; diagnostic)",
      rested,
      {},
      { samples_ms: rested.samples_ms },
    );
    const nodeSpawn = await timeMany(N.floor, () => spawnQuiet(["/bin/true"]), 20);
    timeRow("Node child_process.spawn /bin/true", nodeSpawn);

    if (hasCommand("bwrap"))
      await timeCommand("bubblewrap alone: bwrap --unshare-all … /bin/true", BWRAP, N.bwrap, 10);
    else skipRow("bubblewrap alone", "bwrap is not installed");

    const peers: [string, { argv: string[] } | { skip: string }][] = [
      ["peer: podman run --rm (runc) /bin/true", podmanRun],
      ["peer: podman exec warren-peer /bin/true", podmanExec],
      ["peer: sandbox-runtime srt -c true", srt],
    ];
    for (const [what, p] of peers) {
      if ("skip" in p) skipRow(what, p.skip);
      else {
        const s = await timeCommand(what, p.argv, N.peer, 3);
        if (s && p === podmanExec) podmanExecP50 = s.p50;
      }
    }

    log("redaction: 20 secrets of mixed lengths over 64 MiB of output, streamed in 64 KiB chunks");
    const red = benchRedaction();
    if (red.replaced !== red.planted)
      throw new WarrenFailure(`redaction replaced ${red.replaced} of ${red.planted} planted values`);
    const mbps = median(red.mbPerS);
    rows.push({
      what: `redaction: ${red.secrets} secrets (${Math.min(...red.lengths)}-${Math.max(...red.lengths)} bytes), streamed in ${red.chunkBytes / 1024} KiB chunks`,
      p50: `${mbps.toFixed(0)} MB/s (median)`,
      p99: `${Math.min(...red.mbPerS).toFixed(0)} MB/s (slowest)`,
      vsFloor: "",
      target: "≥ 100 MB/s",
      met: yesNo(mbps >= 100),
      data: { mb_per_s: red.mbPerS, median_mb_per_s: mbps, bytes: red.bytes, lengths: red.lengths },
    });

    log(`cedar: ${N.cedar} tool-policy decisions, one at a time`);
    const ced = await benchCedar(N.cedar);
    timeRow(
      `cedar tool-policy decision (${ced.policies} policies, calls that allow and deny)`,
      ced.sample,
      {
        p50: ced.sample.p50.toFixed(3),
        p99: ced.sample.p99.toFixed(3),
        vsFloor:
          ced.sample.p50 / floorP50 < 1
            ? `${(ced.sample.p50 / floorP50).toFixed(3)}×`
            : ratio(ced.sample.p50 / floorP50),
        target: "p50 ≤ 0.200",
        met: yesNo(ced.sample.p50 <= 0.2),
      },
      { allowed: ced.allowed, denied: ced.denied },
    );

    await warren();
    await cleanup(); // server, boxes, container: before the disk-bound measurement

    await egressRows();
    await egressAskRows();
    await conversationRows();
    await forkRows();
    await burstRows();
    await scheduleRows();
    await browserRows();
    await providerRows();
    await tracingRows();

    log(`measurement: a home of ${N.files} files, ${N.measureRuns} runs each`);
    const r = await benchMeasure(N.files, N.measureRuns, log);
    const duS = summarize(r.duMs);
    const ourS = summarize(r.measureMs);
    const files = N.files.toLocaleString("en-US");
    rows.push({
      what: `du -s -B1 -x, a home of ${files} files`,
      p50: fmt(duS.p50),
      p99: fmt(duS.p99),
      vsFloor: "",
      target: "",
      met: "",
      data: { n: duS.n, p50_ms: duS.p50, p99_ms: duS.p99, samples_ms: r.duMs, bytes: r.bytes },
    });
    rows.push({
      what: `warren measure(), the same home (${r.ratio.toFixed(2)}× du)`,
      p50: fmt(ourS.p50),
      p99: fmt(ourS.p99),
      vsFloor: "",
      target: "≤ 1.5× du",
      met: yesNo(r.ratio <= 1.5),
      data: {
        n: ourS.n,
        p50_ms: ourS.p50,
        p99_ms: ourS.p99,
        samples_ms: r.measureMs,
        ratio_to_du: r.ratio,
        longest_event_loop_stall_ms: r.stallMs,
      },
    });
  } catch (err) {
    failure = err;
  } finally {
    await cleanup();
  }

  const seconds = (performance.now() - started) / 1000;
  const headers = ["what", "p50 ms", "p99 ms", "vs floor", "target", "met?"];
  const cells = rows.map((r) => [r.what, r.p50, r.p99, r.vsFloor, r.target, r.met]);
  const envLines = Object.entries(env).map(([k, v]) => `${k}: ${v}`);
  process.stdout.write(`\n${envLines.join("\n")}\n\n${table(headers, cells)}\n`);
  process.stdout.write(`\nwhole run: ${seconds.toFixed(0)} s${quick ? " (WARREN_BENCH_QUICK)" : ""}\n`);

  fs.mkdirSync(path.dirname(resultsFile), { recursive: true });
  // the table as printed, beside the JSON, under the host's name and the date: two hosts' runs
  // sit side by side in bench/results/ to be compared
  const stem = `${os.hostname().replace(/[^\w.-]/g, "_")}-${env.date!.slice(0, 19).replace(/[:T]/g, "-")}`;
  fs.writeFileSync(
    path.join(path.dirname(resultsFile), `${stem}.txt`),
    `${envLines.join("\n")}\n\n${table(headers, cells)}\n`,
  );
  const json =
    JSON.stringify(
      {
        environment: env,
        quick,
        seconds,
        columns: headers,
        rows: rows.map((r) => ({
          what: r.what,
          p50: r.p50,
          p99: r.p99,
          vs_floor: r.vsFloor,
          target: r.target,
          met: r.met,
          data: r.data,
        })),
        error: failure ? messageOf(failure) : null,
      },
      null,
      2,
    ) + "\n";
  fs.writeFileSync(resultsFile, json);
  fs.writeFileSync(path.join(path.dirname(resultsFile), `${stem}.json`), json);
  process.stdout.write(
    `written to ${path.relative(repoRoot, resultsFile)} and bench/results/${stem}.{json,txt}\n`,
  );

  if (failure) {
    process.stderr.write(
      `\nbench: warren failed: ${failure instanceof Error ? (failure.stack ?? failure.message) : messageOf(failure)}\n`,
    );
    return 1;
  }
  return 0;
}

process.exit(await main());
