// Host-side preparation of a machine's folder (the box's /home) and an agent's home.

import fs from "node:fs";
import path from "node:path";
import type { Trust } from "../types.js";
import { SHARED_GID } from "./users.js";

/** The machine's folder: root-owned 0755, so agents can enter /home but not write to it. */
export async function prepareMachineDir(dir: string): Promise<string> {
  if (!path.isAbsolute(dir)) throw new Error(`machine folder must be absolute: ${dir}`);
  await fs.promises.mkdir(dir, { recursive: true, mode: 0o755 });
  const st = await fs.promises.lstat(dir);
  if (!st.isDirectory()) throw new Error(`${dir} is not a folder`);
  await fs.promises.chown(dir, 0, 0);
  await fs.promises.chmod(dir, 0o755);
  return dir;
}

/** The group an agent's home belongs to and the groups its commands carry. */
export function agentGroups(uid: number, trust: Trust): { gid: number; groups: number[] } {
  return trust === "shared" ? { gid: uid, groups: [SHARED_GID] } : { gid: uid, groups: [] };
}

/**
 * An agent's home: `<machineDir>/<agentId>`, owned by uid. Isolated: uid:uid 0700.
 * Shared: uid:SHARED_GID 2750, so agents of the machine (all in SHARED_GID) read it.
 * Returns the host path. A link in place of the home is refused.
 */
export async function prepareHome(
  machineDir: string,
  agentId: string,
  uid: number,
  trust: Trust,
): Promise<string> {
  if (!/^[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}$/.test(agentId) || agentId === "..")
    throw new Error(`bad agent id ${agentId}`);
  if (!Number.isInteger(uid) || uid < 1000) throw new Error(`agent uid must be >= 1000, got ${uid}`);
  const home = path.join(machineDir, agentId);
  try {
    await fs.promises.mkdir(home, { mode: 0o700 });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
  }
  const st = await fs.promises.lstat(home);
  if (!st.isDirectory()) throw new Error(`${home} is not a folder (a link?)`);
  const gid = trust === "shared" ? SHARED_GID : uid;
  await fs.promises.chown(home, uid, gid);
  // Shared: setgid, so files made in the home belong to the shared group too.
  await fs.promises.chmod(home, trust === "shared" ? 0o2750 : 0o700);
  return home;
}
