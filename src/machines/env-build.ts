// Building a machine's environment layer on the host, outside every agent's box: Debian's
// packages resolved against what the host's base has (its dpkg database: the boxes of local
// and oci run the host's /usr), downloaded with apt and unpacked with dpkg-deb into a folder of
// their own, then npm packages installed globally into the same folder. No maintainer script
// runs: a layer is files only. The box sees the layer read-only (BOX_PATHS.env), its bin
// folders first on PATH and its lib folders on the loader's path (envVariables).
import { execFile } from "node:child_process";
import { chmod, mkdir, readdir, rename, rm } from "node:fs/promises";
import path from "node:path";
import { WarrenError } from "../errors.js";

/** One package of a layer: its name and its exact version. */
export interface EnvPackage {
  name: string;
  version: string;
}

/** A Debian package name, and an npm one (scoped or not). */
const DEB_NAME = /^[a-z0-9][a-z0-9+.-]{0,99}$/;
const NPM_NAME = /^(@[a-z0-9][a-z0-9._-]{0,99}\/)?[a-z0-9][a-z0-9._-]{0,99}$/;
/** Versions as Debian and npm spell them (no shell and no option ever sees one unchecked). */
const VERSION = /^[A-Za-z0-9][A-Za-z0-9.+~:_-]{0,99}$/;

const BUILD_MS = 15 * 60_000;
const LOG_MAX = 256 * 1024;

interface Ran {
  code: number;
  out: string;
}

function run(cmd: string, args: string[], opts: { cwd?: string; timeoutMs?: number } = {}): Promise<Ran> {
  return new Promise((resolve) => {
    execFile(
      cmd,
      args,
      {
        cwd: opts.cwd,
        timeout: opts.timeoutMs ?? BUILD_MS,
        maxBuffer: 16 * 1024 * 1024,
        env: {
          PATH: process.env.PATH ?? "/usr/bin:/bin",
          LANG: "C.UTF-8",
          DEBIAN_FRONTEND: "noninteractive",
        },
      },
      (err, stdout, stderr) => {
        const code = err ? (typeof err.code === "number" ? err.code : 1) : 0;
        const out = `${stdout}${stderr}${err && code === 1 && !stderr ? err.message : ""}`;
        resolve({ code, out });
      },
    );
  });
}

/**
 * The exact version of each Debian package as apt would install it now (its candidate).
 * An unknown name is refused (400 env.package_unknown), naming it.
 */
export async function resolveDebian(names: readonly string[]): Promise<EnvPackage[]> {
  // every name checked before apt is asked anything
  for (const name of names) checkDebian(name);
  const out: EnvPackage[] = [];
  for (const name of names) {
    const r = await run("apt-cache", ["policy", "--", name], { timeoutMs: 60_000 });
    const candidate = /^\s*Candidate:\s*(\S+)/m.exec(r.out)?.[1];
    if (r.code !== 0 || !candidate || candidate === "(none)")
      throw new WarrenError("env.package_unknown", `no Debian package ${name} can be installed on this host`);
    out.push({ name, version: candidate });
  }
  return out;
}

/**
 * A Debian package name (and its exact version, when given) as Debian spells them, else 400
 * request.invalid naming it: nothing that could be read as an option, a path or a shell word.
 */
export function checkDebian(name: string, version?: string): void {
  if (!DEB_NAME.test(name))
    throw new WarrenError(
      "request.invalid",
      `packages: ${JSON.stringify(name)} is not a Debian package name`,
    );
  if (version !== undefined && !VERSION.test(version))
    throw new WarrenError("request.invalid", `packages: ${JSON.stringify(version)} is not a package version`);
}

/** An npm package name (and its version, when given), else 400 request.invalid naming it. */
export function checkNpm(name: string, version?: string): void {
  if (!NPM_NAME.test(name))
    throw new WarrenError("request.invalid", `npm: ${JSON.stringify(name)} is not an npm package name`);
  if (version !== undefined && !VERSION.test(version))
    throw new WarrenError("request.invalid", `npm: ${JSON.stringify(version)} is not a version`);
}

/** The npm packages' exact versions (the registry's latest when none is given). */
export async function resolveNpm(
  specs: readonly { name: string; version?: string }[],
): Promise<EnvPackage[]> {
  for (const s of specs) checkNpm(s.name, s.version || undefined);
  const out: EnvPackage[] = [];
  for (const s of specs) {
    if (s.version) {
      out.push({ name: s.name, version: s.version });
      continue;
    }
    const r = await run("npm", ["view", "--json", `${s.name}@latest`, "version"], { timeoutMs: 120_000 });
    const version = r.code === 0 ? (JSON.parse(r.out.trim() || "null") as unknown) : null;
    if (typeof version !== "string")
      throw new WarrenError("env.package_unknown", `no npm package ${s.name} was found`);
    out.push({ name: s.name, version });
  }
  return out;
}

/** What `apt-get install --simulate` would install that the host lacks: names and versions. */
function simulated(out: string): EnvPackage[] {
  const found: EnvPackage[] = [];
  for (const m of out.matchAll(/^Inst (\S+) (?:\[[^\]]*\] )?\((\S+)/gm))
    found.push({ name: m[1]!, version: m[2]! });
  return found;
}

/**
 * Builds one revision's layer into `dir` (made afresh; a folder beside it holds the work
 * until it is whole, so `dir` exists only when the build succeeded). Answers the build's
 * log; throws with the log when it fails.
 */
export async function buildLayer(
  dir: string,
  debs: readonly EnvPackage[],
  npm: readonly EnvPackage[],
): Promise<string> {
  const log: string[] = [];
  const note = (s: string) => {
    log.push(s.endsWith("\n") ? s : `${s}\n`);
  };
  const text = () => {
    const t = log.join("");
    return t.length > LOG_MAX ? `[... ${t.length - LOG_MAX} bytes cut]\n${t.slice(-LOG_MAX)}` : t;
  };
  const work = `${dir}.building`;
  const debDir = `${dir}.debs`;
  await rm(work, { recursive: true, force: true });
  await rm(debDir, { recursive: true, force: true });
  await mkdir(work, { recursive: true });
  // every agent of the machine reads and runs the layer, whatever the server's umask
  await chmod(work, 0o755);
  await mkdir(debDir, { recursive: true, mode: 0o755 });
  const fail = async (why: string): Promise<never> => {
    note(`build failed: ${why}`);
    await rm(work, { recursive: true, force: true });
    await rm(debDir, { recursive: true, force: true });
    throw new EnvBuildFailed(why, text());
  };
  try {
    // a layer's packages were checked when asked for; checked again here, whatever stored them
    for (const p of debs) checkDebian(p.name, p.version);
    for (const p of npm) checkNpm(p.name, p.version);
    if (debs.length > 0) {
      const wanted = debs.map((p) => `${p.name}=${p.version}`);
      note(`$ apt-get install --simulate --no-install-recommends ${wanted.join(" ")}`);
      const sim = await run("apt-get", [
        "install",
        "--simulate",
        "--no-install-recommends",
        "-o",
        "Debug::NoLocking=1",
        "--",
        ...wanted,
      ]);
      note(sim.out);
      if (sim.code !== 0) await fail("apt could not resolve the packages");
      const missing = simulated(sim.out);
      note(`the host's base lacks ${missing.length} package(s): ${missing.map((p) => p.name).join(" ")}`);
      if (missing.length > 0) {
        const dl = await run(
          "apt-get",
          [
            "download",
            "-o",
            "APT::Sandbox::User=root",
            "--",
            ...missing.map((p) => `${p.name}=${p.version}`),
          ],
          { cwd: debDir },
        );
        note(`$ apt-get download ...\n${dl.out}`);
        if (dl.code !== 0) await fail("apt could not download the packages");
        for (const file of (await readdir(debDir)).filter((f) => f.endsWith(".deb")).sort()) {
          const x = await run("dpkg-deb", ["-x", path.join(debDir, file), work]);
          note(`$ dpkg-deb -x ${file}${x.out ? `\n${x.out}` : ""}`);
          if (x.code !== 0) await fail(`${file} could not be unpacked`);
        }
      }
    }
    if (npm.length > 0) {
      const specs = npm.map((p) => `${p.name}@${p.version}`);
      const prefix = path.join(work, "usr", "local");
      note(`$ npm install --global --prefix /usr/local ${specs.join(" ")}`);
      const r = await run("npm", [
        "install",
        "--global",
        "--no-fund",
        "--no-audit",
        "--prefix",
        prefix,
        "--",
        ...specs,
      ]);
      note(r.out);
      if (r.code !== 0) await fail("npm could not install the packages");
    }
    await rm(debDir, { recursive: true, force: true });
    await rm(dir, { recursive: true, force: true });
    await rename(work, dir);
    note("the layer is ready");
    return text();
  } catch (err) {
    if (err instanceof EnvBuildFailed) throw err;
    return fail(err instanceof Error ? err.message : String(err));
  }
}

export class EnvBuildFailed extends Error {
  constructor(
    message: string,
    readonly log: string,
  ) {
    super(message);
  }
}
