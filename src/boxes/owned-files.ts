// The one writer of the files the server puts in an agent's runtime folder (/run/warren/<agent
// id>, kit/runtime-dirs.ts): each file is its uid's alone (chowned and chmodded through the
// open descriptor), never opened through a link (the folder is the agent's: a name in it may
// be a link it made), and either replaced whole (a rename: never half a file) or appended to
// through one descriptor the server keeps (a log).
import { randomBytes } from "node:crypto";
import { constants } from "node:fs";
import fs, { type FileHandle } from "node:fs/promises";
import path from "node:path";

// O_NONBLOCK: a FIFO the agent left at the name fails at once (no reader) or is refused as no
// file below, instead of holding one of the server's file threads until someone reads it
const NEW = constants.O_WRONLY | constants.O_CREAT | constants.O_NOFOLLOW | constants.O_NONBLOCK;

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
 * `dir` is the agent's, so `sub` may be swapped for a link at any moment: the folder is opened
 * once (never through a link), made the agent's through that descriptor, and the file is made
 * in that very folder (through /proc/self/fd, which names the opened folder, not a path that
 * could be resolved again), so nothing outside it is made, chowned or written.
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
  const dh = await fs
    .open(folder, constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW)
    .catch((err: NodeJS.ErrnoException) => {
      throw new Error(`${folder} is not a folder of the agent's (${err.code ?? err.message})`);
    });
  try {
    const st = await dh.stat();
    if (!st.isDirectory() || (st.uid !== uid && st.uid !== process.getuid?.()))
      throw new Error(`${folder} is not a folder of the agent's`);
    await dh.chown(uid, uid);
    await dh.chmod(0o700);
    return await openOwned(`/proc/self/fd/${dh.fd}/${name}`, constants.O_APPEND, uid, mode);
  } finally {
    await dh.close();
  }
}
