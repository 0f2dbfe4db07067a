// The agents' runtime folders of a box (local, oci): `<box's state folder>/warren`, root's
// 0711, bound at /run/warren in the box (BOX_PATHS.runtime), with one folder per agent of
// the machine, `<agent id>`, its uid's alone (0700) whatever the machine's trust. Made when
// the box starts and whenever its agents change (with its users), gone when it stops.
import fs from "node:fs";
import path from "node:path";
import type { BoxUser } from "./users.js";

const RUNTIME = "warren";

/** The host folder bound at /run/warren in the box (made when absent). */
export function runtimeRoot(boxDir: string): string {
  const d = path.join(boxDir, RUNTIME);
  fs.mkdirSync(d, { recursive: true, mode: 0o711 });
  fs.chownSync(d, 0, 0);
  fs.chmodSync(d, 0o711);
  return d;
}

/** An agent's runtime folder on the host (whether or not it exists). */
export const agentRuntimeDir = (boxDir: string, agentId: string): string =>
  path.join(boxDir, RUNTIME, agentId);

/**
 * One folder per agent (uid:uid 0700); the folders of agents gone are removed. Names that
 * are not agents' (boxd's mount points, cg) are left alone: agent ids have a prefix.
 */
export function refreshRuntimeDirs(boxDir: string, users: BoxUser[]): void {
  const root = runtimeRoot(boxDir);
  const want = new Map(users.map((u) => [u.name, u]));
  for (const name of fs.readdirSync(root)) {
    const st = fs.lstatSync(path.join(root, name));
    if (st.isDirectory() && st.uid >= 1000 && !want.has(name))
      fs.rmSync(path.join(root, name), { recursive: true, force: true });
  }
  for (const u of users) {
    const d = path.join(root, u.name);
    try {
      fs.mkdirSync(d, { mode: 0o700 });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
    }
    if (!fs.lstatSync(d).isDirectory()) throw new Error(`${d} is not a folder (a link?)`);
    fs.chownSync(d, u.uid, u.uid);
    fs.chmodSync(d, 0o700);
  }
}

/** Removes the box's runtime folder and everything in it (the box stopped). */
export function removeRuntimeRoot(boxDir: string): void {
  fs.rmSync(path.join(boxDir, RUNTIME), { recursive: true, force: true });
}
