// /etc/passwd and /etc/group of a box: root, nobody and one line per agent, so that
// `id`, `ls -l` and shells show agents' names, read from the homes in its /home mount.
// Every provider writes the files in place (same inode), so a running box sees changes
// through its bind mounts (kubernetes: its sub-path mounts).
import fs from "node:fs";
import path from "node:path";
import type { BoxSpec } from "../types.js";
import type { BoxRecord } from "./record.js";
import { refreshRuntimeDirs } from "./runtime-dirs.js";

export interface BoxUser {
  /** The agent's id: its user name and /home/<name>. */
  name: string;
  uid: number;
  gid: number;
}

/** The group agents of a trust: shared machine share (reads each other's homes). */
export const SHARED_GID = 9999;
export const SHARED_GROUP = "agents";

function checkName(name: string): void {
  if (!/^[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}$/.test(name))
    throw new Error(`bad user name ${JSON.stringify(name)}`);
}

export function passwdText(users: BoxUser[]): string {
  const lines = [
    "root:x:0:0:box root:/root:/usr/sbin/nologin",
    "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin",
  ];
  for (const u of users) {
    checkName(u.name);
    lines.push(`${u.name}:x:${u.uid}:${u.gid}:agent ${u.name}:/home/${u.name}:/bin/bash`);
  }
  return `${lines.join("\n")}\n`;
}

export function groupText(users: BoxUser[], shared: boolean): string {
  const lines = ["root:x:0:", "nogroup:x:65534:"];
  const seen = new Set<number>([0, 65534, SHARED_GID]);
  for (const u of users) {
    checkName(u.name);
    if (seen.has(u.gid)) continue;
    seen.add(u.gid);
    lines.push(`${u.name}:x:${u.gid}:`);
  }
  if (shared) lines.push(`${SHARED_GROUP}:x:${SHARED_GID}:${users.map((u) => u.name).join(",")}`);
  return `${lines.join("\n")}\n`;
}

/** A folder found in the machine's folder (the box's /home): its name and owner. */
export interface HomeEntry {
  name: string;
  uid: number;
  gid: number;
  isDirectory: boolean;
}

/**
 * The box's users, read from the homes in the machine's folder: every folder owned by
 * an agent uid is an agent (name = folder name). Shared when a home belongs to SHARED_GID.
 */
export function usersFromHomes(entries: HomeEntry[], minUid = 1000): { users: BoxUser[]; shared: boolean } {
  const users: BoxUser[] = [];
  let shared = false;
  for (const e of entries) {
    if (!e.isDirectory || e.uid < minUid || !/^[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}$/.test(e.name)) continue;
    users.push({ name: e.name, uid: e.uid, gid: e.uid });
    if (e.gid === SHARED_GID) shared = true;
  }
  users.sort((a, b) => a.uid - b.uid || a.name.localeCompare(b.name));
  return { users, shared };
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
 * its record's /home mount, and makes the agents' runtime folders (./runtime-dirs.ts). Files are rewritten in place (same inode), because a running
 * box has them bound at /etc/passwd and /etc/group.
 */
export function refreshBoxUsers(boxDir: string): { passwd: string; group: string } {
  const rec = JSON.parse(fs.readFileSync(path.join(boxDir, "box.json"), "utf8")) as BoxRecord;
  const found = usersFromHomes(homeEntries(rec.spec));
  const text = { passwd: passwdText(found.users), group: groupText(found.users, found.shared) };
  // each agent's runtime folder (/run/warren/<agent id>) follows the homes too
  refreshRuntimeDirs(boxDir, found.users);
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
