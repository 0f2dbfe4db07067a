// Boot checks that refuse instead of degrading: what boxes need of the host (the
// provider's probes) and what the server needs of its state tree. A part that is missing
// stops the server with one line per part, naming it and the fix, unless the operator
// accepts running without it (WARREN_ALLOW_DEGRADED=landlock,...); /health and the log
// then say so. `warren doctor` prints the same checks.
import fs from "node:fs";
import path from "node:path";
import type { BoxProvider, HostProbe } from "../boxes/index.js";
import { BOOT_CHECK_NAMES, type BootCheckName } from "../config/index.js";

export type Probe = HostProbe;
export type Probes = Partial<Record<BootCheckName, Probe>>;

export interface CheckResult {
  name: BootCheckName;
  ok: boolean;
  /** Failed, but the operator accepted it (WARREN_ALLOW_DEGRADED). */
  accepted: boolean;
  detail: string;
  fix: string;
}

export class BootCheckError extends Error {
  constructor(readonly failed: CheckResult[]) {
    super(failed.map(refusalLine).join("\n"));
    this.name = "BootCheckError";
  }
}

/** The one line that names a missing part and its fix. */
export function refusalLine(r: CheckResult): string {
  return `cannot start: ${r.name}: ${r.detail}; fix: ${r.fix} (or accept running without it: WARREN_ALLOW_DEGRADED=${r.name})`;
}

const ok = (detail: string) => ({ ok: true, detail, fix: "" });

/** The server's own folders: the state tree writable, /data and the contracts readable. */
export function stateProbes(paths: {
  root: string;
  run: string;
  workspaces: string;
  data: string;
  contracts: string;
}): {
  state: Probe;
  data: Probe;
  contracts: Probe;
} {
  const readable =
    (what: string, dir: string): Probe =>
    async () => {
      const later = willBeMade(dir);
      if (later) return later;
      try {
        fs.readdirSync(dir);
        fs.accessSync(dir, fs.constants.R_OK | fs.constants.X_OK);
        // agents read it under their own uids, neither its owner nor its group
        const mode = fs.statSync(dir).mode & 0o777;
        if ((mode & 0o005) !== 0o005)
          return {
            ok: false,
            detail: `${what} ${dir} is not readable by the boxes' agents (mode ${mode.toString(8).padStart(4, "0")})`,
            fix: `let every user read and enter ${dir} (chmod o+rx), or point STATE_ROOT at a readable tree`,
          };
        return ok(dir);
      } catch (err) {
        return {
          ok: false,
          detail: `${what} ${dir} is not readable: ${(err as Error).message}`,
          fix: `make ${dir} a folder the server can read (boxes mount it read-only)`,
        };
      }
    };
  return {
    state: async () => {
      for (const dir of [paths.root, paths.run, paths.workspaces]) {
        const later = willBeMade(dir);
        if (later) {
          if (!later.ok) return later;
          continue;
        }
        const probe = path.join(dir, `.warren-probe-${process.pid}`);
        try {
          fs.writeFileSync(probe, "");
          fs.rmSync(probe);
        } catch (err) {
          return {
            ok: false,
            detail: `the state tree is not writable at ${dir}: ${(err as Error).message}`,
            fix: `make STATE_ROOT (${paths.root}) a folder the server owns and can write`,
          };
        }
      }
      return ok(paths.root);
    },
    data: readable("the data folder", paths.data),
    contracts: readable("the contracts folder", paths.contracts),
  };
}

/** For a folder that does not exist yet (the server makes it): whether it can be made. */
function willBeMade(dir: string): Awaited<ReturnType<Probe>> | null {
  if (fs.existsSync(dir)) return null;
  let parent = path.dirname(dir);
  while (!fs.existsSync(parent) && parent !== path.dirname(parent)) parent = path.dirname(parent);
  try {
    fs.accessSync(parent, fs.constants.W_OK | fs.constants.X_OK);
    return ok(`${dir} (made at start)`);
  } catch {
    return {
      ok: false,
      detail: `${dir} does not exist and ${parent} is not writable`,
      fix: `make ${dir} a folder the server owns`,
    };
  }
}

/** Runs every check (in a stable order); those without a probe are skipped. */
export async function runChecks(probes: Probes, allowDegraded: readonly string[]): Promise<CheckResult[]> {
  const out: CheckResult[] = [];
  for (const name of BOOT_CHECK_NAMES) {
    const probe = probes[name];
    if (!probe) continue;
    let r: Awaited<ReturnType<Probe>>;
    try {
      r = await probe();
    } catch (err) {
      r = { ok: false, detail: `the check failed: ${(err as Error).message}`, fix: "see the server log" };
    }
    out.push({ name, ...r, accepted: !r.ok && allowDegraded.includes(name) });
  }
  return out;
}

/** Throws BootCheckError when a check failed that the operator did not accept. */
export function enforce(results: CheckResult[]): { degraded: BootCheckName[] } {
  const refused = results.filter((r) => !r.ok && !r.accepted);
  if (refused.length > 0) throw new BootCheckError(refused);
  return { degraded: results.filter((r) => r.accepted).map((r) => r.name) };
}

/** `warren doctor`'s table: one line per check. */
export function report(results: CheckResult[]): string {
  const width = Math.max(...results.map((r) => r.name.length));
  return results
    .map((r) => {
      const mark = r.ok ? "ok     " : r.accepted ? "ACCEPTED" : "MISSING";
      const line = `${mark.padEnd(8)} ${r.name.padEnd(width)}  ${r.detail}`;
      return r.ok ? line : `${line}\n${" ".repeat(9 + width + 2)}fix: ${r.fix}`;
    })
    .join("\n");
}

/** Whether the operator accepted a start without any of the provider's own parts (its engine, its API). */
export function providerMayBeDown(
  provider: Pick<BoxProvider, "hostProbes">,
  config: { WARREN_ALLOW_DEGRADED: readonly string[] },
): boolean {
  const allowed = config.WARREN_ALLOW_DEGRADED;
  return Object.keys(provider.hostProbes({ repair: false })).some((c) => allowed.includes(c));
}
