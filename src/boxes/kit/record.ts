// A box's record on the host, as every provider keeps it (box.json in the box's state
// folder): its spec's shape, checked when a box is created, its state and its cgroups; and
// what a box is made of on the host: the system folders and /etc entries it sees, its
// socket folders.
import fs from "node:fs";
import path from "node:path";
import { z } from "zod";
import { BOX_PATHS } from "../paths.js";
import type { BoxSpec } from "../types.js";
import { WarrenError } from "../../errors.js";
import { etcAllowed, type EtcEntry, type SystemDir } from "./boxd.js";

export const BOX_ID = /^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/;

export const labelsSchema = z
  .object({
    "warren.kind": z.literal("machine"),
    "warren.org": z.string().min(1),
    "warren.machine": z.string().min(1),
    "warren.provider": z.enum(["local", "oci", "kubernetes"]),
  })
  .catchall(z.string());

export const mountSchema = z.discriminatedUnion("kind", [
  z.object({
    kind: z.literal("bind"),
    source: z.string().startsWith("/"),
    target: z.string().startsWith("/"),
    readOnly: z.boolean(),
  }),
  z.object({
    kind: z.literal("tmpfs"),
    target: z.string().startsWith("/"),
    sizeMib: z.number().int().positive(),
    mode: z.number().int().min(0).max(0o7777).optional(),
  }),
]);

export const boxSpecSchema = z.object({
  id: z.string().regex(BOX_ID, "a box id is 1-64 letters, digits, _ or -, starting with a letter or digit"),
  labels: labelsSchema,
  mounts: z.array(mountSchema),
  limits: z.object({
    memoryMib: z.number().int().min(16),
    cpus: z.number().positive().max(1024),
    pids: z
      .number()
      .int()
      .min(16)
      .max(1 << 22),
    tmpMib: z.number().int().min(1),
  }),
  image: z.string().min(1).optional(),
  devices: z
    .array(z.string().regex(/^\/dev\/[A-Za-z0-9_.-]+(\/[A-Za-z0-9_.-]+)?$/, "a device is a file under /dev"))
    .optional(),
});

export interface BoxRecord {
  version: 1;
  spec: BoxSpec;
  state: "created" | "running" | "paused" | "stopped";
  pid: number | null;
  pidStart: string | null;
  startedAt: string | null;
  cgroupDirs: string[];
  /** oci: the box's container when it is not the box's own name (a claimed warm box keeps its own). */
  container?: string;
  /** oci: the container's own freezer folders on this host, when the provider paused it there. */
  containerCgroups?: string[];
}

/** The host's system folders as they exist (folders, or usrmerge symlinks). */
export function systemDirs(candidates: readonly string[] = BOX_PATHS.system): SystemDir[] {
  const out: SystemDir[] = [];
  for (const p of candidates) {
    let st: fs.Stats;
    try {
      st = fs.lstatSync(p);
    } catch {
      continue;
    }
    if (st.isSymbolicLink()) out.push({ path: p, kind: "symlink", target: fs.readlinkSync(p) });
    else if (st.isDirectory()) out.push({ path: p, kind: "dir" });
  }
  return out;
}

/** The allowed entries of the host's /etc (etcAllowed), as they exist there. */
export function etcEntries(etcDir = "/etc"): EtcEntry[] {
  const out: EtcEntry[] = [];
  let names: string[];
  try {
    names = fs.readdirSync(etcDir).sort();
  } catch {
    return out;
  }
  for (const name of names) {
    if (!etcAllowed(name)) continue;
    let st: fs.Stats;
    try {
      st = fs.lstatSync(path.join(etcDir, name));
    } catch {
      continue;
    }
    if (st.isSymbolicLink())
      out.push({ name, kind: "symlink", target: fs.readlinkSync(path.join(etcDir, name)) });
    else if (st.isDirectory() || st.isFile()) out.push({ name, kind: "bind" });
  }
  return out;
}

/** The spec, checked: a bad one is refused (request.invalid) with what is wrong in it. */
export function checkSpec(spec: BoxSpec): void {
  const parsed = boxSpecSchema.safeParse(spec);
  if (!parsed.success)
    throw new WarrenError(
      "request.invalid",
      `bad box spec: ${parsed.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`).join("; ")}`,
    );
}

/** Records the spec in the box's folder (made 0700 if new): the record kept, or a new one. */
export async function recordSpec(dir: string, spec: BoxSpec): Promise<BoxRecord> {
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  const old = readBoxRecord(dir);
  const rec: BoxRecord = old
    ? { ...old, spec }
    : { version: 1, spec, state: "created", pid: null, pidStart: null, startedAt: null, cgroupDirs: [] };
  await writeBoxRecord(dir, rec);
  return rec;
}

/** The box's record in its folder, or null when it has none. */
export function readBoxRecord(dir: string): BoxRecord | null {
  try {
    return JSON.parse(fs.readFileSync(path.join(dir, "box.json"), "utf8")) as BoxRecord;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return null;
    throw err;
  }
}

/** Replaces the record whole (a rename), off the event loop: ext4 flushes a file renamed over another. */
export async function writeBoxRecord(dir: string, rec: BoxRecord): Promise<void> {
  const file = path.join(dir, "box.json");
  const tmp = `${file}.${process.pid}.tmp`;
  await fs.promises.writeFile(tmp, JSON.stringify(rec, null, 2), { mode: 0o600 });
  await fs.promises.rename(tmp, file);
}

/**
 * The box's socket folders, made afresh for box root (`root` on the host): boxd/ (0700) for
 * boxd's socket, calls/ (0755: agents may pass through) for its calls socket.
 */
export function socketDirs(dir: string, root: number): { socketDir: string; callsDir: string } {
  const made = (name: string, mode: number, sock: string): string => {
    const d = path.join(dir, name);
    fs.mkdirSync(d, { recursive: true, mode });
    fs.chmodSync(d, mode);
    fs.chownSync(d, root, root);
    fs.rmSync(path.join(d, sock), { force: true });
    return d;
  };
  return { socketDir: made("boxd", 0o700, "boxd.sock"), callsDir: made("calls", 0o755, "calls.sock") };
}
