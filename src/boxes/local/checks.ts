// What boxes need of this host, checked at the server's start (src/boot) and by
// `warren doctor`: bubblewrap able to make namespaces, writable cgroups, Landlock and
// seccomp in the kernel, fs.protected_symlinks (every box's /tmp is shared by its agents).
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import { WarrenError } from "../../errors.js";
import type { HostProbe } from "../types.js";
import { cgroupPlan, detectLayout } from "../kit/cgroups.js";

/** Isolated machines' network walls need Landlock ABI 4 (TCP) and 6 (abstract sockets). */
export const LANDLOCK_ABI_NEEDED = 6;

export interface LocalCheckOptions {
  bwrap: string;
  spawnHelper: string;
  cgroupParent: string;
  /** Set fs.protected_symlinks to 1 when it is not (the server, as root); doctor only looks. */
  repair: boolean;
}

const ok = (detail: string) => ({ ok: true, detail, fix: "" });
const missing = (detail: string, fix: string) => ({ ok: false, detail, fix });

function probeKernel(helper: string): { landlock: number; seccomp: boolean } | string {
  const r = spawnSync(helper, ["--probe"], { encoding: "utf8", timeout: 5000 });
  if (r.error) return `${helper}: ${r.error.message}`;
  if (r.status !== 0) return `${helper} --probe exited with ${r.status}: ${r.stderr.trim()}`;
  const landlock = /^landlock (\d+)$/m.exec(r.stdout);
  const seccomp = /^seccomp ([01])$/m.exec(r.stdout);
  if (!landlock?.[1] || !seccomp?.[1]) return `${helper} --probe said ${JSON.stringify(r.stdout)}`;
  return { landlock: Number(landlock[1]), seccomp: seccomp[1] === "1" };
}

export function localProbes(o: LocalCheckOptions): Record<string, HostProbe> {
  let kernel: ReturnType<typeof probeKernel> | undefined;
  const kernelFacts = () => (kernel ??= probeKernel(o.spawnHelper));
  return {
    bubblewrap: async () => {
      try {
        fs.accessSync(o.bwrap, fs.constants.X_OK);
        return ok(o.bwrap);
      } catch {
        return missing(
          `${o.bwrap} is not installed`,
          "install it with `apt-get install bubblewrap` as root (Debian), or run `make up`",
        );
      }
    },
    namespaces: async () => {
      const r = spawnSync(
        o.bwrap,
        [
          "--unshare-pid",
          "--unshare-net",
          "--unshare-ipc",
          "--unshare-uts",
          "--ro-bind",
          "/",
          "/",
          "--proc",
          "/proc",
          "--dev",
          "/dev",
          "--",
          "/bin/true",
        ],
        { encoding: "utf8", timeout: 10_000 },
      );
      if (r.status === 0) return ok("bubblewrap made pid, network, IPC and UTS namespaces");
      const why = r.error ? r.error.message : r.stderr.trim() || `exit ${r.status}`;
      return missing(
        `bubblewrap cannot make namespaces: ${why}`,
        "run warren as root on a kernel with namespaces, outside a container that forbids them (or with --privileged)",
      );
    },
    cgroups: async () => {
      const layout = detectLayout();
      if (!layout)
        return missing(
          "no usable cgroups: neither cgroup v2 with memory, pids and cpu nor v1 memory, pids and cpu hierarchies",
          "mount the cgroup v1 memory, pids and cpu hierarchies, or cgroup v2 with those controllers delegated",
        );
      const probeId = `probe-${process.pid}`;
      const plan = cgroupPlan({ memoryMib: 64, cpus: 1, pids: 64, tmpMib: 1 }, layout, {
        parent: o.cgroupParent,
        boxId: probeId,
      });
      try {
        for (const dir of plan.boxDirs) {
          fs.mkdirSync(dir, { recursive: true });
          fs.rmdirSync(dir);
        }
        return ok(`cgroup v${layout.version}, writable under ${o.cgroupParent}/`);
      } catch (err) {
        return missing(
          `cgroups are not writable: ${(err as Error).message}`,
          "run warren as root with the cgroup hierarchies mounted read-write",
        );
      }
    },
    landlock: async () => {
      const k = kernelFacts();
      if (typeof k === "string") return missing(`cannot probe Landlock: ${k}`, "run `npm run build`");
      if (k.landlock >= LANDLOCK_ABI_NEEDED) return ok(`Landlock ABI ${k.landlock}`);
      return missing(
        k.landlock === 0
          ? "the kernel has no Landlock: commands would run without file confinement"
          : `Landlock ABI ${k.landlock}: isolated machines need ABI ${LANDLOCK_ABI_NEEDED}`,
        `use a kernel of 6.7 or later with Landlock enabled (CONFIG_SECURITY_LANDLOCK=y, "landlock" in the lsm= boot option)`,
      );
    },
    seccomp: async () => {
      const k = kernelFacts();
      if (typeof k === "string") return missing(`cannot probe seccomp: ${k}`, "run `npm run build`");
      if (k.seccomp) return ok("seccomp filters");
      return missing(
        "the kernel cannot load seccomp filters",
        "use a kernel built with CONFIG_SECCOMP_FILTER=y",
      );
    },
    protected_symlinks: async () => protectedSymlinks(o.repair),
  };
}

/**
 * fs.protected_symlinks must be 1: agents of one machine share the box's /tmp (sticky,
 * world-writable), where a symlink planted by one agent must not be followed by another.
 * As root the server sets it; otherwise it says how.
 */
export function protectedSymlinks(
  repair: boolean,
  file = "/proc/sys/fs/protected_symlinks",
): ReturnType<HostProbe> {
  const fix = "run `sysctl -w fs.protected_symlinks=1` as root (and keep it in /etc/sysctl.d/)";
  let value: string;
  try {
    value = fs.readFileSync(file, "utf8").trim();
  } catch (err) {
    return Promise.resolve(missing(`cannot read ${file}: ${(err as Error).message}`, fix));
  }
  if (value === "1") return Promise.resolve(ok("fs.protected_symlinks = 1"));
  if (!repair)
    return Promise.resolve(
      missing(`fs.protected_symlinks is ${value} (the server sets it to 1 when it runs as root)`, fix),
    );
  try {
    fs.writeFileSync(file, "1");
    return Promise.resolve(ok(`fs.protected_symlinks was ${value}; set to 1`));
  } catch {
    return Promise.resolve(missing(`fs.protected_symlinks is ${value}`, fix));
  }
}

/** Refuses, naming the fix, when bubblewrap or one of the built helpers a box needs is missing. */
export function requireLaunchParts(bwrap: string, parts: [what: string, file: string][]): void {
  if (!fs.existsSync(bwrap))
    throw new WarrenError(
      "box.unavailable",
      `bubblewrap (${bwrap}) is not installed; install it with \`apt-get install bubblewrap\` as root (Debian), or run \`make up\`, which installs what is missing`,
    );
  for (const [what, file] of parts) {
    if (!fs.existsSync(file))
      throw new WarrenError("box.unavailable", `the ${what} ${file} is missing; run \`npm run build\``);
  }
}
