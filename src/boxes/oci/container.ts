// The container of a box, as a pure function from the box's spec and its host parts to a
// Docker Engine API create body (POST /containers/create). boxd is the container's first
// process, entered through box-userns exactly as in a local box (boxdArgv); the system
// folders of this host (Debian's packages) are bound read-only over the image's skeleton,
// as `local` binds them, unless the machine names an image of its own (its folders are the
// image's); the host's GPU devices of a `gpu` machine are the container's devices; the machine's folder, /data, the contracts and the harness CLIs
// are the spec's mounts.
import path from "node:path";
import { boxdArgv, BOXD_CAPS, IN_BOX, type SystemDir } from "../kit/boxd.js";
import { BOX_PATHS } from "../paths.js";
import type { BoxMount, BoxSpec } from "../types.js";

export interface ContainerParts {
  image: string;
  systemDirs: SystemDir[];
  /** Host /etc entries the box sees (names), read-only; generated ones by file. */
  etcNames: string[];
  etcFiles: Record<string, string>;
  boxdBinary: string;
  spawnHelper: string;
  userns: string;
  warrenSecret: string;
  seccompFile: string;
  socketDir: string;
  callsDir: string;
  /** The agents' runtime folders (kit/runtime-dirs.ts), bound at /run/warren when given. */
  runtimeDir?: string | undefined;
  /** The OCI runtime (./runtime.ts), asked for by name: Docker honours it, Podman's service runs its own. */
  runtime?: string | undefined;
  cgroups: { name: string; dir: string }[];
  cgroupVersion: 1 | 2;
  boxRootId: number;
  orphanAfterS: number;
  /** Host rlimits the engine may set (it must stay under this process's hard limits). */
  nofile: number;
  nproc: number;
}

/** /etc names the box does not take from the host (mtab is the engine's link to /proc). */
const ENGINE_ETC = new Set(["mtab"]);

export interface EngineMount {
  Type: "bind" | "tmpfs";
  Target: string;
  Source?: string;
  ReadOnly?: boolean;
  BindOptions?: { Propagation: "rprivate" };
  TmpfsOptions?: { SizeBytes: number; Mode: number };
}

export interface ContainerCreate {
  Image: string;
  Entrypoint: string[];
  Cmd: string[];
  Env: string[];
  Hostname: string;
  WorkingDir: string;
  Labels: Record<string, string>;
  NetworkDisabled: boolean;
  HostConfig: {
    Runtime?: string;
    NetworkMode: "none";
    CapDrop: string[];
    CapAdd: string[];
    SecurityOpt: string[];
    ReadonlyRootfs: boolean;
    Memory: number;
    NanoCpus: number;
    PidsLimit: number;
    IpcMode: "private";
    CgroupnsMode: "private";
    Init: boolean;
    RestartPolicy: { Name: "no" };
    Ulimits: { Name: string; Soft: number; Hard: number }[];
    Mounts: EngineMount[];
    Devices?: { PathOnHost: string; PathInContainer: string; CgroupPermissions: string }[];
  };
}

const bind = (source: string, target: string, readOnly: boolean): EngineMount => ({
  Type: "bind",
  Source: source,
  Target: target,
  ReadOnly: readOnly,
  BindOptions: { Propagation: "rprivate" },
});

function specMount(m: BoxMount): EngineMount {
  if (m.kind === "bind") return bind(m.source, m.target, m.readOnly);
  return {
    Type: "tmpfs",
    Target: m.target,
    TmpfsOptions: { SizeBytes: m.sizeMib * 1024 * 1024, Mode: m.mode ?? 0o755 },
  };
}

/** What the engine mounts that a box must not see: box-userns unmounts it and removes its folder. */
const HIDDEN = ["/sys/fs/cgroup"];

/** box-userns's argv with `--hide` for each of `dirs` (before its `--`). */
function withHidden(argv: string[], dirs: readonly string[]): string[] {
  const sep = argv.indexOf("--");
  return [...argv.slice(0, sep), ...dirs.flatMap((d) => ["--hide", d]), ...argv.slice(sep)];
}

/** The container name of a box. */
export const containerName = (boxId: string): string => `warren-box-${boxId}`;

export function containerConfig(spec: BoxSpec, p: ContainerParts): ContainerCreate {
  const mounts: EngineMount[] = [];
  // a machine's own image brings its system folders and /etc; warren's generated files stay
  const own = spec.image !== undefined;
  if (!own) for (const d of p.systemDirs) if (d.kind === "dir") mounts.push(bind(d.path, d.path, true));
  const generated = new Map(Object.entries(p.etcFiles));
  if (!own)
    for (const name of p.etcNames)
      if (!generated.has(name) && !ENGINE_ETC.has(name))
        mounts.push(bind(`/etc/${name}`, `/etc/${name}`, true));
  for (const [name, file] of generated)
    if (!ENGINE_ETC.has(name)) mounts.push(bind(file, `/etc/${name}`, true));
  const targets = new Set(spec.mounts.map((m) => path.posix.normalize(m.target)));
  for (const m of spec.mounts) mounts.push(specMount(m));
  if (!targets.has("/tmp"))
    mounts.push(specMount({ kind: "tmpfs", target: "/tmp", sizeMib: spec.limits.tmpMib, mode: 0o1777 }));
  // an image of one's own lacks the skeleton's mount points of each command's /agent and
  // /workspace (bound there by boxd's helper): empty read-only folders stand in for them
  if (own)
    for (const target of [BOX_PATHS.agent, BOX_PATHS.workspace])
      if (!targets.has(target))
        mounts.push({ Type: "tmpfs", Target: target, TmpfsOptions: { SizeBytes: 4096, Mode: 0o555 } });
  // nothing of the host's sysfs (its cgroups, devices): an empty folder, as in a local box
  mounts.push({ Type: "tmpfs", Target: "/sys", TmpfsOptions: { SizeBytes: 4096, Mode: 0o555 } });
  if (p.runtimeDir) mounts.push(bind(p.runtimeDir, IN_BOX.privDir, false));
  mounts.push(bind(p.boxdBinary, IN_BOX.boxd, true));
  mounts.push(bind(p.spawnHelper, IN_BOX.spawnHelper, true));
  mounts.push(bind(p.userns, IN_BOX.userns, true));
  mounts.push(bind(p.seccompFile, IN_BOX.seccomp, true));
  for (const cg of p.cgroups) {
    if (!/^[a-z_,]+$/.test(cg.name)) throw new Error(`bad cgroup name ${cg.name}`);
    mounts.push(bind(cg.dir, `${IN_BOX.cgroupDir}/${cg.name}`, false));
  }
  mounts.push(bind(p.socketDir, IN_BOX.socketDir, false));
  mounts.push(bind(p.callsDir, IN_BOX.callsDir, false));
  mounts.push(bind(p.warrenSecret, `${IN_BOX.binDir}/warren-secret`, true));
  return {
    Image: spec.image ?? p.image,
    // box-userns, then boxd: the first command of a local box
    // the engine's cgroup tree at /sys/fs/cgroup hidden before boxd starts (a local box has none)
    Entrypoint: withHidden(
      boxdArgv(spec, {
        boxRootId: p.boxRootId,
        callsDir: p.callsDir,
        cgroupVersion: p.cgroupVersion,
        cgroups: p.cgroups,
        orphanAfterS: p.orphanAfterS,
      }),
      HIDDEN,
    ),
    Cmd: [],
    Env: [],
    Hostname: IN_BOX.hostname,
    WorkingDir: "/",
    Labels: { ...spec.labels },
    NetworkDisabled: true,
    HostConfig: {
      ...(p.runtime ? { Runtime: p.runtime } : {}),
      NetworkMode: "none",
      CapDrop: ["ALL"],
      CapAdd: [...BOXD_CAPS],
      SecurityOpt: ["no-new-privileges"],
      ReadonlyRootfs: true,
      Memory: spec.limits.memoryMib * 1024 * 1024,
      NanoCpus: Math.round(spec.limits.cpus * 1e9),
      PidsLimit: spec.limits.pids,
      IpcMode: "private",
      CgroupnsMode: "private",
      Init: false,
      RestartPolicy: { Name: "no" },
      Ulimits: [
        { Name: "nofile", Soft: p.nofile, Hard: p.nofile },
        { Name: "nproc", Soft: p.nproc, Hard: p.nproc },
      ],
      Mounts: mounts,
      ...(spec.devices?.length
        ? {
            Devices: spec.devices.map((d) => ({
              PathOnHost: d,
              PathInContainer: d,
              CgroupPermissions: "rw",
            })),
          }
        : {}),
    },
  };
}
