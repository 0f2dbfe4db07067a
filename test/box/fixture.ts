// Fixtures for real box tests: a throwaway STATE_ROOT, a machine folder with agents'
// homes, and a LocalProvider. Builds boxd and the helper on demand. Everything is
// removed in cleanup(); tests call it in `finally`/`after`.

import { execFileSync } from "node:child_process";
import crypto from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { BoxdClient, ExecOutcome, ExecRequest, PingResult } from "../../src/boxd/index.js";
import type { BoxBridge, BoxLimits, BoxSpec, Trust } from "../../src/boxes/index.js";
import { detectLayout } from "../../src/boxes/kit/cgroups.js";
import { agentGroups, prepareHome, prepareMachineDir } from "../../src/boxes/kit/homes.js";
import { LocalProvider } from "../../src/boxes/local/provider.js";
import { OciProvider } from "../../src/boxes/oci/provider.js";

/**
 * WARREN_PROVIDER=oci: the box tests' boxes are containers of the engine at
 * WARREN_OCI_SOCKET, from WARREN_OCI_IMAGE (scripts/oci.sh service and image).
 */
export const testProvider = process.env.WARREN_PROVIDER === "oci" ? "oci" : "local";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");

/** Why box tests cannot run here, or null when they can. */
export function boxSkipReason(): string | null {
  if (process.platform !== "linux") return "boxes need Linux";
  if (process.getuid?.() !== 0) return "box tests need root (bubblewrap without user namespaces, cgroups)";
  if (!fs.existsSync("/usr/bin/bwrap")) return "bubblewrap is not installed (/usr/bin/bwrap)";
  if (!detectLayout()) return "no usable cgroups on this host";
  if (testProvider === "oci" && !process.env.WARREN_OCI_SOCKET)
    return "WARREN_PROVIDER=oci needs WARREN_OCI_SOCKET (scripts/oci.sh service)";
  try {
    execFileSync("gcc", ["--version"], { stdio: "ignore" });
  } catch {
    return "gcc is missing (the exec helper is built on demand)";
  }
  return null;
}

/**
 * WARREN_TEST_SANITIZE=1: boxes run dist/native/boxd-asan, boxd built with AddressSanitizer
 * and UndefinedBehaviorSanitizer (scripts/test.sh does so once), and on local start
 * dist/native/boxd-spawn-asan for each command. A report aborts that boxd, and cleanup() then
 * fails the test with the report from the box's log; a report in the helper fails its command.
 */
const sanitize = process.env.WARREN_TEST_SANITIZE === "1";

/** The boxd binary the tests' boxes run. */
export const testBoxdBinary = path.join(root, "dist", "native", sanitize ? "boxd-asan" : "boxd");
/** The command helper they start (on local; the sanitized one beside boxd-asan). */
const testSpawnHelper = path.join(root, "dist", "native", sanitize ? "boxd-spawn-asan" : "boxd-spawn");

let built = false;
/** Builds dist/native/boxd-spawn and dist/native/boxd (and boxd-asan) when they are stale. */
export function ensureBuilt(): void {
  if (built) return;
  const args = [path.join(root, "scripts", "build-native.mjs"), ...(sanitize ? ["--sanitize"] : [])];
  execFileSync(process.execPath, args, { stdio: "inherit" });
  built = true;
}

/** A sanitizer's report in a box's log (bwrap's and boxd's stderr), or null. */
export function sanitizerReport(log: string): string | null {
  const at = log.search(/ERROR: \w+Sanitizer|runtime error:|SUMMARY: \w+Sanitizer/);
  return at < 0 ? null : log.slice(Math.max(0, log.lastIndexOf("\n", at) + 1), at + 4000);
}

export interface Agent {
  id: string;
  uid: number;
  gid: number;
  groups: number[];
  home: string;
  hostHome: string;
}

export interface TestBox {
  provider: LocalProvider | OciProvider;
  id: string;
  stateRoot: string;
  machineDir: string;
  agents: Agent[];
  spec: BoxSpec;
  client(): BoxdClient;
  /** Runs a command as agent `n` (default the first) and collects its output. */
  run(
    argv: string[],
    opts?: Partial<ExecRequest> & { agent?: number },
  ): Promise<ExecOutcome & { out: string; err: string }>;
  sh(
    script: string,
    opts?: Partial<ExecRequest> & { agent?: number },
  ): Promise<ExecOutcome & { out: string; err: string }>;
  cleanup(): Promise<void>;
}

export const PATH = "/usr/local/bin:/usr/bin:/bin";

export async function makeBox(
  opts: {
    agents?: number;
    trust?: Trust;
    limits?: Partial<BoxLimits>;
    cgroupParent?: string;
    start?: boolean;
    /** boxd stops the box after this long without a client (default: the provider's). */
    orphanAfterS?: number;
    /** Bridges boxd listens on (none by default). */
    bridges?: BoxBridge[];
  } = {},
): Promise<TestBox> {
  ensureBuilt();
  // Short paths: boxd's socket path must stay under 108 bytes.
  const stateRoot = fs.mkdtempSync(path.join(os.tmpdir(), "wb-"));
  const id = `t${crypto.randomBytes(4).toString("hex")}`;
  const trust = opts.trust ?? "isolated";
  // Agent uids of this box only (other tests and servers run boxes at the same time), so
  // "no process of the agent's uid is left on the host" means this box's agents.
  const uidBase = 40000 + 10 * crypto.randomInt(0, 2000);
  for (const d of ["data", "contracts"]) fs.mkdirSync(path.join(stateRoot, d), { mode: 0o755 });
  fs.writeFileSync(path.join(stateRoot, "data", "readme.txt"), "reference data\n");
  const machineDir = await prepareMachineDir(path.join(stateRoot, "workspaces", id));
  const agents: Agent[] = [];
  for (let i = 0; i < (opts.agents ?? 2); i++) {
    const agentId = `a${i + 1}`;
    const uid = uidBase + i;
    const hostHome = await prepareHome(machineDir, agentId, uid, trust);
    agents.push({ id: agentId, uid, ...agentGroups(uid, trust), home: `/home/${agentId}`, hostHome });
  }
  const provider =
    testProvider === "oci"
      ? new OciProvider({
          stateRoot,
          socket: process.env.WARREN_OCI_SOCKET ?? "",
          image: process.env.WARREN_OCI_IMAGE ?? "warren-box:latest",
          cgroupParent: opts.cgroupParent ?? "warren-test",
          boxdBinary: testBoxdBinary,
          ...(opts.orphanAfterS === undefined ? {} : { orphanAfterS: opts.orphanAfterS }),
        })
      : new LocalProvider({
          stateRoot,
          cgroupParent: opts.cgroupParent ?? "warren-test",
          boxdBinary: testBoxdBinary,
          spawnHelper: testSpawnHelper,
          ...(opts.orphanAfterS === undefined ? {} : { orphanAfterS: opts.orphanAfterS }),
        });
  const spec: BoxSpec = {
    id,
    labels: {
      "warren.kind": "machine",
      "warren.org": "org-test",
      "warren.machine": id,
      "warren.provider": testProvider,
    },
    mounts: [
      { kind: "bind", source: machineDir, target: "/home", readOnly: false },
      { kind: "bind", source: path.join(stateRoot, "data"), target: "/data", readOnly: true },
      {
        kind: "bind",
        source: path.join(stateRoot, "contracts"),
        target: "/opt/warren/contracts",
        readOnly: true,
      },
      { kind: "tmpfs", target: "/tmp", sizeMib: 64, mode: 0o1777 },
    ],
    limits: { memoryMib: 512, cpus: 1, pids: 4096, tmpMib: 64, ...opts.limits },
    ...(opts.bridges ? { bridges: opts.bridges } : {}),
  };
  await provider.create(spec);
  if (opts.start ?? true) await provider.start(id);

  const run: TestBox["run"] = async (argv, o = {}) => {
    const { agent: n = 0, ...rest } = o;
    const a = agents[n];
    if (!a) throw new Error(`no agent ${n}`);
    const r = await provider.client(id).exec({
      argv,
      env: { PATH, HOME: a.home },
      cwd: a.home,
      uid: a.uid,
      gid: a.gid,
      groups: a.groups,
      timeoutMs: 30_000,
      ...rest,
    });
    return { ...r, out: r.stdout.toString(), err: r.stderr.toString() };
  };
  return {
    provider,
    id,
    stateRoot,
    machineDir,
    agents,
    spec,
    client: () => provider.client(id),
    run,
    sh: (script, o) => run(["/bin/sh", "-c", script], o),
    cleanup: async () => {
      let report: string | null = null;
      try {
        // With the sanitizer build, boxd ends through exit() first, so that its leak check runs.
        if (sanitize) await endBoxd(id);
        const log = path.join(stateRoot, "run", "boxes", id, "box.log");
        report = fs.existsSync(log) ? sanitizerReport(fs.readFileSync(log, "utf8")) : null;
        await provider.remove(id);
      } finally {
        provider.close();
        fs.rmSync(stateRoot, { recursive: true, force: true });
      }
      if (report) throw new Error(`boxd's sanitizer reported in box ${id}:\n${report}`);
    },
  };
}

/**
 * The host pid of box id's boxd, or null when it is not running: a local boxd is in the
 * box's `boxd` cgroup; an oci boxd in the engine's container cgroup, known by the box's
 * socket folder bound at /run/boxd in its mounts.
 */
export function boxdHostPid(id: string): number | null {
  for (const name of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    try {
      if (!fs.readFileSync(`/proc/${name}/cmdline`, "utf8").startsWith("/run/warren/boxd\0")) continue;
      if (fs.readFileSync(`/proc/${name}/cgroup`, "utf8").includes(`/${id}/boxd\n`)) return Number(name);
      if (
        testProvider === "oci" &&
        fs.readFileSync(`/proc/${name}/mountinfo`, "utf8").includes(`/oci-boxes/${id}/boxd /run/boxd `)
      )
        return Number(name);
    } catch {
      // gone
    }
  }
  return null;
}

/** Sends boxd SIGTERM (it exits) and waits until it is gone. */
async function endBoxd(id: string): Promise<void> {
  const pid = boxdHostPid(id);
  if (pid === null) return;
  try {
    process.kill(pid, "SIGTERM");
  } catch {
    return;
  }
  await waitFor("boxd to exit", () => !fs.existsSync(`/proc/${pid}/cmdline`) || isZombie(pid), 10_000);
}

function isZombie(pid: number): boolean {
  try {
    return /^State:\s+Z/m.test(fs.readFileSync(`/proc/${pid}/status`, "utf8"));
  } catch {
    return true;
  }
}

/** Host pids whose real uid is `uid` (agents' uids exist only in boxes), but for boxd's ready helper named by `ready` (a ping). */
export function hostPidsOfUid(uid: number, ready?: PingResult): number[] {
  const out: number[] = [];
  for (const name of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const status = fs.readFileSync(`/proc/${name}/status`, "utf8");
      const m = /^Uid:\s+(\d+)/m.exec(status);
      const state = /^State:\s+(\S)/m.exec(status)?.[1];
      if (!m || Number(m[1]) !== uid || state === "Z") continue;
      // boxd's ready helper, walled ahead as the last command's agent: boxd's, not the agent's
      // (no agent's process can enter its cgroup)
      if (
        ready?.readyCgroup &&
        fs.readFileSync(`/proc/${name}/cgroup`, "utf8").includes(`/${ready.readyCgroup}\n`)
      )
        continue;
      out.push(Number(name));
    } catch {
      // gone
    }
  }
  return out;
}

export async function waitFor(
  what: string,
  fn: () => boolean | Promise<boolean>,
  timeoutMs = 5000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await fn()) return;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`timed out waiting for ${what}`);
}
