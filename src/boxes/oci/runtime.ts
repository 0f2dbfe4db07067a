// Which OCI runtime the engine runs boxes with, found by trying, not guessed: the engine's
// default (GET /info) first, then runc and crun, or only WARREN_OCI_RUNTIME's, each asked
// for by name (HostConfig.Runtime) in a container made like a box (its own cgroup
// namespace, no network, capped rlimits and limits, the host's system folders read-only)
// from the boxes' image that runs /bin/true and is removed. The first whose container the
// engine ran with it, and which exited 0, is the one boxes are made with.
//
// Docker honours HostConfig.Runtime; Podman's compatible service does not (4.x: a container
// runs with the runtime the service started with, `podman --runtime X system service`), so
// the runtime the engine actually used is read back (Docker: HostConfig.Runtime of the
// inspect; Podman: OCIRuntime of its own inspect) and a runtime the engine would not use is
// named as such: the fix is then to start the service with it (scripts/oci.sh service).
// crun refuses a host whose cgroups are hybrid (v1 controllers beside a cgroup2 mount that
// holds controllers); runc runs there.
import { randomBytes } from "node:crypto";
import { WarrenError } from "../../errors.js";
import { OCI_RUNTIMES, type OciRuntime } from "../../config/index.js";
import { systemDirs } from "../kit/record.js";
import type { Engine } from "./engine.js";
import type { EngineMount } from "./container.js";

export { OCI_RUNTIMES, type OciRuntime };

/** What the engine says of its runtimes (GET /info): its default and the names it offers. */
export interface EngineRuntimes {
  default: string | null;
  offered: string[];
}

export function readEngineRuntimes(info: unknown): EngineRuntimes {
  const i = (info && typeof info === "object" ? info : {}) as {
    DefaultRuntime?: unknown;
    Runtimes?: unknown;
  };
  const def = typeof i.DefaultRuntime === "string" && i.DefaultRuntime ? i.DefaultRuntime : null;
  const offered = i.Runtimes && typeof i.Runtimes === "object" ? Object.keys(i.Runtimes) : [];
  return { default: def, offered };
}

/**
 * The runtimes to try, in order: only the one wanted (WARREN_OCI_RUNTIME), else the engine's
 * default, then runc and crun (each once).
 */
export function runtimeCandidates(wanted: OciRuntime | undefined, engine: EngineRuntimes): string[] {
  if (wanted) return [wanted];
  return [...new Set([...(engine.default ? [engine.default] : []), ...OCI_RUNTIMES])];
}

export type FailureKind = "hybrid-cgroups" | "unknown-runtime" | "other";

/** A runtime's failure, read: what kind, and one short line of it. */
export function readRuntimeFailure(message: string): { kind: FailureKind; reason: string } {
  const text = message.replace(/\s+/g, " ").trim();
  if (/cgroups in hybrid mode not supported/i.test(text))
    return {
      kind: "hybrid-cgroups",
      reason:
        "it refuses this host's hybrid cgroups (v1 controllers beside a cgroup2 mount that holds controllers)",
    };
  if (
    /unknown or invalid runtime name|OCI runtime "?[\w./-]+"? not found|executable file not found/i.test(text)
  )
    return { kind: "unknown-runtime", reason: "the engine has no such runtime (is it installed?)" };
  return {
    kind: "other",
    reason: text.length > 300 ? `${text.slice(0, 297)}...` : text || "no reason given",
  };
}

/** One runtime tried. */
export interface RuntimeTrial {
  runtime: string;
  ok: boolean;
  /** The runtime the engine ran the container with, when it says. */
  used: string | null;
  kind?: FailureKind | "ignored";
  reason: string;
}

/** The outcome: the runtime boxes run with, or null with every trial's reason. */
export interface RuntimeChoice {
  runtime: string | null;
  wanted: OciRuntime | undefined;
  engineDefault: string | null;
  trials: RuntimeTrial[];
  /** Set when nothing could be tried (the image is missing): why. */
  untried?: string;
}

/**
 * How long the trial waits for each engine call: Podman's /info and a container's start take
 * seconds on a busy host (a 10 s wait for /info was seen to pass by under load).
 */
const PROBE_MS = 60_000;

/** Engines answer HostConfig.Runtime "oci" (Podman) or "" for their default: no name. */
const runtimeName = (v: unknown): string | null =>
  typeof v === "string" && v !== "" && v !== "oci" ? v : null;

/** The runtime the engine will run container `name` with, as it says (Docker's inspect, else Podman's). */
async function usedRuntime(engine: Engine, name: string): Promise<string | null> {
  const docker = await engine.request("GET", `/containers/${name}/json`, undefined, PROBE_MS);
  const own = runtimeName(
    (docker.body as { HostConfig?: { Runtime?: unknown } } | null)?.HostConfig?.Runtime,
  );
  if (own) return own;
  const podman = await engine.request("GET", `/libpod/containers/${name}/json`, undefined, PROBE_MS);
  if (podman.status !== 200) return null;
  return runtimeName((podman.body as { OCIRuntime?: unknown } | null)?.OCIRuntime);
}

const message = (body: unknown): string =>
  body && typeof body === "object" && "message" in body ? String(body.message) : String(body);

/** The probe's container: made as a box is where a runtime could refuse, running /bin/true. */
export function probeContainer(image: string, runtime: string): Record<string, unknown> {
  const mounts: EngineMount[] = systemDirs()
    .filter((d) => d.kind === "dir")
    .map((d) => ({ Type: "bind", Source: d.path, Target: d.path, ReadOnly: true }));
  return {
    Image: image,
    Entrypoint: ["/bin/true"],
    Cmd: [],
    Env: [],
    Labels: { "warren.probe": "runtime" },
    NetworkDisabled: true,
    HostConfig: {
      Runtime: runtime,
      NetworkMode: "none",
      CapDrop: ["ALL"],
      SecurityOpt: ["no-new-privileges"],
      ReadonlyRootfs: true,
      Memory: 64 * 1024 * 1024,
      PidsLimit: 64,
      IpcMode: "private",
      CgroupnsMode: "private",
      Init: false,
      RestartPolicy: { Name: "no" },
      Ulimits: [
        { Name: "nofile", Soft: 1024, Hard: 1024 },
        { Name: "nproc", Soft: 1024, Hard: 1024 },
      ],
      Mounts: mounts,
    },
  };
}

/** Runs the probe's container with `runtime` and removes it. */
export async function tryRuntime(engine: Engine, image: string, runtime: string): Promise<RuntimeTrial> {
  const name = `warren-probe-${process.pid}-${randomBytes(4).toString("hex")}`;
  const failed = (text: string, used: string | null = null): RuntimeTrial => {
    const f = readRuntimeFailure(text);
    return { runtime, ok: false, used, kind: f.kind, reason: f.reason };
  };
  const made = await engine.request(
    "POST",
    `/containers/create?name=${name}`,
    probeContainer(image, runtime),
    PROBE_MS,
  );
  if (made.status !== 201) return failed(message(made.body));
  try {
    const used = await usedRuntime(engine, name);
    if (used && used !== runtime)
      return {
        runtime,
        ok: false,
        used,
        kind: "ignored",
        reason: `the engine runs its own ${used} whatever a container asks (Podman's service takes its runtime when it starts)`,
      };
    const started = await engine.request("POST", `/containers/${name}/start`, undefined, PROBE_MS);
    if (started.status !== 204 && started.status !== 304) return failed(message(started.body), used);
    const waited = await engine.request("POST", `/containers/${name}/wait`, undefined, PROBE_MS);
    const code = (waited.body as { StatusCode?: unknown } | null)?.StatusCode;
    if (waited.status !== 200 || code !== 0)
      return failed(
        `the probe's /bin/true ended with ${typeof code === "number" ? code : `a wait answered ${waited.status}`}`,
        used,
      );
    return { runtime, ok: true, used: used ?? runtime, reason: "ran a container" };
  } finally {
    await engine
      .request("DELETE", `/containers/${name}?force=true`, undefined, PROBE_MS)
      .catch(() => undefined);
  }
}

/** Tries the candidates in order; the first that runs a box is the choice. */
export async function chooseRuntime(
  engine: Engine,
  image: string,
  wanted: OciRuntime | undefined,
): Promise<RuntimeChoice> {
  const info = await engine.request("GET", "/info", undefined, PROBE_MS);
  const rt = readEngineRuntimes(info.status === 200 ? info.body : null);
  const base = { wanted, engineDefault: rt.default };
  const img = await engine.request("GET", `/images/${encodeURIComponent(image)}/json`, undefined, PROBE_MS);
  if (img.status !== 200)
    return { ...base, runtime: null, trials: [], untried: `the image ${image} is missing` };
  const trials: RuntimeTrial[] = [];
  for (const r of runtimeCandidates(wanted, rt)) {
    const t = await tryRuntime(engine, image, r);
    trials.push(t);
    if (t.ok) return { ...base, runtime: r, trials };
  }
  return { ...base, runtime: null, trials };
}

/** Choices found in this process, by engine socket, image and wish: a box's start does not try again. */
const kept = new Map<string, Promise<RuntimeChoice>>();
const keyOf = (engine: Engine, image: string, wanted: OciRuntime | undefined) =>
  `${engine.socket}\0${image}\0${wanted ?? ""}`;

/**
 * The choice for this engine, image and wish: found once and kept while a runtime runs a
 * box; tried again at the next call while none does (or the engine did not answer).
 */
export function keptRuntime(
  engine: Engine,
  image: string,
  wanted: OciRuntime | undefined,
): Promise<RuntimeChoice> {
  const key = keyOf(engine, image, wanted);
  const known = kept.get(key);
  if (known) return known;
  const p = chooseRuntime(engine, image, wanted);
  kept.set(key, p);
  const drop = () => {
    if (kept.get(key) === p) kept.delete(key);
  };
  p.then((c) => {
    if (!c.runtime) drop();
  }, drop);
  return p;
}

/** Forgets the kept choice (a box's runtime failed: the engine may run another now). */
export function forgetRuntime(engine: Engine, image: string, wanted: OciRuntime | undefined): void {
  kept.delete(keyOf(engine, image, wanted));
}

/** The runtime to suggest when none worked: the one the trials did not refuse for cause. */
function suggestion(c: RuntimeChoice): string {
  const refused = new Set(
    c.trials.filter((t) => t.kind === "hybrid-cgroups" || t.kind === "unknown-runtime").map((t) => t.runtime),
  );
  if (c.wanted && !refused.has(c.wanted)) return c.wanted;
  return OCI_RUNTIMES.find((r) => !refused.has(r)) ?? "runc";
}

/** One line of what was found: the runtime in use, and why the others were not. */
export function describeChoice(c: RuntimeChoice): string {
  if (c.untried) return `not tried: ${c.untried}`;
  const others = c.trials
    .filter((t) => !t.ok)
    .map((t) => `${t.runtime}: ${t.reason}`)
    .join("; ");
  if (!c.runtime) return `no OCI runtime runs a box here (${others})`;
  const how = c.wanted ? "WARREN_OCI_RUNTIME" : c.runtime === c.engineDefault ? "the engine's default" : "";
  return `${c.runtime}${how ? ` (${how})` : ""} runs a box${others ? `; ${others}` : ""}`;
}

/** The fix, in one line, when no runtime runs a box. */
export function choiceFix(c: RuntimeChoice): string {
  if (c.untried) return "build the boxes' image with `scripts/oci.sh image`";
  const r = suggestion(c);
  return `set WARREN_OCI_RUNTIME=${r} and start the service with \`scripts/oci.sh service\` (it starts Podman's service with ${r})`;
}

/** The error of a box when no runtime runs one here. */
export function noRuntimeError(c: RuntimeChoice): WarrenError {
  return new WarrenError("box.unavailable", `${describeChoice(c)}; fix: ${choiceFix(c)}`);
}

/**
 * A box's start failure, read: when a runtime refused the host (crun and hybrid cgroups),
 * the fix is said with it.
 */
export function explainStartFailure(text: string): string | null {
  const f = readRuntimeFailure(text);
  if (f.kind !== "hybrid-cgroups") return null;
  return `crun ${f.reason}; fix: set WARREN_OCI_RUNTIME=runc and start the service with \`scripts/oci.sh service\``;
}
