// What a local box is made of on the host: its record's shape (box.json), the host's system
// folders and /etc entries it sees, and its users (passwd and group from its homes). The
// provider (provider.ts) uses these.
import fs from "node:fs";
import path from "node:path";
import { z } from "zod";
import { BOX_PATHS } from "../paths.js";
import type { BoxSpec } from "../types.js";
import { etcAllowed, type EtcEntry, type SystemDir } from "./bwrap.js";
import { groupText, passwdText, usersFromHomes, type HomeEntry } from "./users.js";

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

/** Joins the box's cgroups with the shell's own pid, then becomes bwrap: nothing forks before. */
export const JOIN_AND_EXEC =
  'for f; do [ "$f" = -- ] && break; echo $$ > "$f" || exit 125; shift; done; shift; exec "$@"';

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

export function tail(file: string, bytes = 600): string {
  try {
    const text = fs.readFileSync(file, "utf8");
    return text.slice(-bytes).trim();
  } catch {
    return "";
  }
}

/** The homes in a box's /home mount, as the host sees them. */
function homeEntries(spec: BoxSpec): HomeEntry[] {
  const home = spec.mounts.find((m) => m.kind === "bind" && m.target === "/home");
  if (!home || home.kind !== "bind") return [];
  let names: string[];
  try {
    names = fs.readdirSync(home.source);
  } catch {
    return [];
  }
  const out: HomeEntry[] = [];
  for (const name of names) {
    try {
      const st = fs.lstatSync(path.join(home.source, name));
      out.push({ name, uid: st.uid, gid: st.gid, isDirectory: st.isDirectory() });
    } catch {
      // removed meanwhile
    }
  }
  return out;
}

/**
 * Writes `passwd` and `group` in a box's state folder (STATE_ROOT/run/boxes/<id>) from
 * its record's /home mount. Files are rewritten in place (same inode), because a running
 * box has them bound at /etc/passwd and /etc/group.
 */
export function refreshBoxUsers(boxDir: string): { passwd: string; group: string } {
  const rec = JSON.parse(fs.readFileSync(path.join(boxDir, "box.json"), "utf8")) as BoxRecord;
  const text = usersText(rec.spec);
  const files = { passwd: path.join(boxDir, "passwd"), group: path.join(boxDir, "group") };
  fs.writeFileSync(files.passwd, text.passwd, { mode: 0o644 });
  fs.writeFileSync(files.group, text.group, { mode: 0o644 });
  return files;
}

/** The box's passwd and group, from the homes in its /home (each home owned by an agent uid is a user). */
export function usersText(spec: BoxSpec): { passwd: string; group: string } {
  const { users, shared } = usersFromHomes(homeEntries(spec));
  return { passwd: passwdText(users), group: groupText(users, shared) };
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
