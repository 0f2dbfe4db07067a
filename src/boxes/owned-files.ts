// The one writer of the files the server puts in an agent's runtime folder (/run/warren/<agent
// id>, kit/runtime-dirs.ts): each file is its uid's alone (chowned and chmodded through the
// open descriptor), never opened through a link (the folder is the agent's: a name in it may
// be a link it made), and either replaced whole (a rename: never half a file) or appended to
// through one descriptor the server keeps (a log).
import { randomBytes } from "node:crypto";
import { constants } from "node:fs";
import fs, { type FileHandle } from "node:fs/promises";
import path from "node:path";

const NEW = constants.O_WRONLY | constants.O_CREAT | constants.O_NOFOLLOW;

/** Opens `file` with `flags` (never through a link), its uid's with `mode`. */
async function openOwned(file: string, flags: number, uid: number, mode: number): Promise<FileHandle> {
  const fh = await fs.open(file, flags | NEW, mode);
  try {
    const st = await fh.stat();
    if (!st.isFile() || st.nlink !== 1) throw new Error(`${file} is not a file of its own`);
    await fh.chown(uid, uid);
    await fh.chmod(mode);
    return fh;
  } catch (err) {
    await fh.close();
    throw err;
  }
}

/** Writes a file `uid` alone reads, in place of the one before (a rename: never half a file). */
export async function writeOwned(
  dir: string,
  name: string,
  text: string,
  uid: number,
  mode: number,
): Promise<void> {
  // a name of its own (two writes of one file may overlap), never one the agent made (O_EXCL)
  const tmp = path.join(dir, `.${name}.${randomBytes(6).toString("hex")}.tmp`);
  const fh = await openOwned(tmp, constants.O_EXCL, uid, mode);
  try {
    await fh.writeFile(text);
  } finally {
    await fh.close();
  }
  await fs.rename(tmp, path.join(dir, name)).catch(async (err: unknown) => {
    await fs.rm(tmp, { force: true });
    throw err;
  });
}

/**
 * A file `uid` alone reads, under `sub` of `dir` (made `uid`'s with 0700 when absent; a link
 * there is refused), opened to be appended to: the caller keeps the descriptor and closes it.
 */
export async function appendOwned(
  dir: string,
  sub: string,
  name: string,
  uid: number,
  mode: number,
): Promise<FileHandle> {
  const folder = path.join(dir, sub);
  await fs.mkdir(folder, { mode: 0o700 }).catch((err: NodeJS.ErrnoException) => {
    if (err.code !== "EEXIST") throw err;
  });
  const st = await fs.lstat(folder);
  if (!st.isDirectory() || (st.uid !== uid && st.uid !== process.getuid?.()))
    throw new Error(`${folder} is not a folder of the agent's`);
  await fs.chown(folder, uid, uid);
  await fs.chmod(folder, 0o700);
  const fh = await openOwned(path.join(folder, name), constants.O_APPEND, uid, mode);
  // the folder was the one checked when the file was made (not swapped for a link between)
  const real = await fs.readlink(`/proc/self/fd/${fh.fd}`).catch(() => null);
  if (real !== null && real !== path.join(await fs.realpath(dir), sub, name)) {
    await fh.close();
    throw new Error(`${folder} changed while its file was opened`);
  }
  return fh;
}
