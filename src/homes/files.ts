// Host-side access to files in an agent's home, for the tools that run on the server.
//
// Node has no openat(2), so every step goes through the magic link /proc/self/fd/<fd>/<name>:
// the folder reached so far is held open, and the next name is looked up inside that very
// folder, whatever happens to the path that led to it meanwhile. Folders are opened with
// O_DIRECTORY | O_NOFOLLOW and checked against what lstat saw, so a component swapped for a
// link mid-way is never followed.

import { randomBytes } from "node:crypto";
import { constants } from "node:fs";
import fs from "node:fs/promises";
import type { FileHandle } from "node:fs/promises";
import type { ErrorCode } from "../contract/errors.js";
import { WarrenError } from "../errors.js";
import { checkComponents, parseHomePath, showPath } from "./paths.js";

/** At most this many links are followed while resolving one read (Linux's own limit). */
const MAX_LINKS = 40;
const READ_CHUNK = 1024 * 1024;

const { O_RDONLY, O_WRONLY, O_CREAT, O_EXCL, O_DIRECTORY, O_NOFOLLOW, O_NONBLOCK, O_NOCTTY } = constants;
const DIR_FLAGS = O_RDONLY | O_DIRECTORY | O_NOFOLLOW;

function fileError(code: ErrorCode, message: string, cause?: unknown): WarrenError {
  return new WarrenError(code, message, undefined, cause === undefined ? undefined : { cause });
}

function errno(err: unknown): string | undefined {
  return (err as NodeJS.ErrnoException | undefined)?.code;
}

/** The magic link to an open descriptor, and to a name inside an open folder: openat by path. */
const fdPath = (fd: number): string => `/proc/self/fd/${fd}`;
const within = (fd: number, name: string): string => `${fdPath(fd)}/${name}`;

function changed(shown: string): WarrenError {
  return fileError(
    "file.link",
    `${shown} changed while it was being opened (a link may have been put on the way); try again`,
  );
}

/** An error from a step on the way; those not about the path itself pass through unchanged. */
function stepError(err: unknown, shown: string): unknown {
  switch (errno(err)) {
    case "ENOENT":
      return fileError("file.not_found", `${shown} does not exist in the home`, err);
    case "ENAMETOOLONG":
      return fileError("file.invalid_path", `${shown} has a name longer than the filesystem allows`, err);
    case "ELOOP":
      return changed(shown);
    default:
      return err;
  }
}

interface Home {
  handle: FileHandle;
  /** The home's path as the kernel reports it for the open folder: links on the way resolved. */
  path: string;
}

/** Opens the home itself, which must be a real folder, not a link. */
async function openHome(homeDir: string): Promise<Home> {
  let handle: FileHandle;
  try {
    handle = await fs.open(homeDir, DIR_FLAGS);
  } catch (err) {
    if (errno(err) === "ENOENT") throw fileError("file.not_found", "the home does not exist yet", err);
    if (errno(err) === "ENOTDIR" || errno(err) === "ELOOP") {
      const link = (await fs.lstat(homeDir).catch(() => undefined))?.isSymbolicLink() === true;
      throw fileError(
        link ? "file.link" : "file.not_regular",
        `the home is ${link ? "a link" : "not a folder"}`,
        err,
      );
    }
    throw err;
  }
  try {
    return { handle, path: await fs.readlink(fdPath(handle.fd)) };
  } catch (err) {
    await handle.close();
    throw err;
  }
}

/**
 * Opens `name` inside the open folder `dir` as a folder, without following a link at the name.
 * Returns undefined when nothing has that name; refuses a link (file.link) and anything that is
 * not a folder (file.not_found for a read, where a file on the way means no such path;
 * file.not_regular for a write, which would need a folder there).
 */
async function openFolder(
  dir: FileHandle,
  name: string,
  shown: string,
  onFile: ErrorCode,
): Promise<FileHandle | undefined> {
  const at = within(dir.fd, name);
  try {
    return await fs.open(at, DIR_FLAGS);
  } catch (err) {
    if (errno(err) === "ENOENT") return undefined;
    if (errno(err) !== "ENOTDIR" && errno(err) !== "ELOOP") throw stepError(err, shown);
    const st = await fs.lstat(at).catch(() => undefined);
    if (st?.isSymbolicLink() === true)
      throw fileError("file.link", `${shown} is a link; links are not accepted here`, err);
    if (st === undefined) return undefined;
    if (st.isDirectory()) throw changed(shown); // it was a link a moment ago
    throw fileError(onFile, `${shown} is not a folder`, err);
  }
}

async function closeAll(handles: FileHandle[]): Promise<void> {
  await Promise.all(handles.splice(0).map((h) => h.close()));
}

export interface ReadOptions {
  /** The caller's size limit in bytes; a larger file is refused with file.too_large. */
  maxBytes: number;
  /** Refuse any link on the way, even one that stays in the home (file.link). */
  noLinks?: boolean;
  /**
   * Where the reader may be (a member's fence): every path a link leads to, and the file as
   * opened, must be one it allows; else `refusal()` is thrown before anything past the link is
   * looked at, so the answer is the same whether the target exists.
   */
  fence?: { allows: (components: readonly string[]) => boolean; refusal: () => Error };
}

/** `components` with each ".." taking away the name before it (null: it climbs above the start). */
function normalized(components: readonly string[]): string[] | null {
  const out: string[] = [];
  for (const c of components) {
    if (c === "..") {
      if (out.pop() === undefined) return null;
    } else if (c !== "" && c !== ".") out.push(c);
  }
  return out;
}

/**
 * Reads a file in the home (components from parseHomePath). Follows every link, each resolved
 * against the host's filesystem, but every step must stay inside the home: a link that leads out
 * (absolute elsewhere, or `..` above the home), even one that a later link would bring back, is
 * refused with file.link. The result must be a regular file (else file.not_regular); it is opened
 * with O_NOFOLLOW | O_NONBLOCK (a FIFO never blocks the read), must be the very inode that was
 * checked, and must still lie in the home once open (else file.link). Over maxBytes: file.too_large.
 * A hard link inside the home to a file elsewhere is a regular file in the home and is read.
 */
/** A regular file of an agent's home by its path (parseHomePath's rules), no link followed. */
export function readAgentFile(
  homeDir: string,
  agentId: string,
  path: string,
  maxBytes: number,
): Promise<Buffer> {
  return readHomeFile(homeDir, parseHomePath(agentId, path), { maxBytes, noLinks: true });
}

export async function readHomeFile(
  homeDir: string,
  components: readonly string[],
  options: ReadOptions,
): Promise<Buffer> {
  checkComponents(components);
  const shown = showPath(components);
  const home = await openHome(homeDir);
  // The folders from the home down to where the resolution stands, each held open, and their names.
  const chain: FileHandle[] = [home.handle];
  const names: string[] = [];
  const fence = options.fence;
  try {
    const queue = [...components];
    let links = 0;
    for (;;) {
      const name = queue.shift();
      const dir = chain.at(-1) ?? home.handle;
      if (name === undefined) throw fileError("file.not_regular", `${shown} is a folder, not a file`);
      if (name === "..") {
        if (chain.length === 1)
          throw fileError("file.link", `${shown} goes through a link that leads out of the home`);
        await chain.pop()?.close();
        names.pop();
        continue;
      }

      const at = within(dir.fd, name);
      const st = await fs.lstat(at, { bigint: true }).catch((err: unknown) => {
        throw stepError(err, shown);
      });

      if (st.isSymbolicLink()) {
        if (options.noLinks === true)
          throw fileError("file.link", `${shown} goes through a link; name the file itself`);
        if (++links > MAX_LINKS)
          throw fileError("file.link", `${shown} goes through more than ${MAX_LINKS} links`);
        const target = await fs.readlink(at).catch((err: unknown) => {
          throw errno(err) === "EINVAL" ? changed(shown) : stepError(err, shown);
        });
        if (target.startsWith("/")) {
          if (target !== home.path && !target.startsWith(`${home.path}/`)) {
            throw fileError("file.link", `${shown} goes through a link that leads out of the home`);
          }
          await closeAll(chain.splice(1));
          names.length = 0;
        }
        const rest = (target.startsWith("/") ? target.slice(home.path.length) : target).split("/");
        queue.unshift(...rest.filter((c) => c !== "" && c !== "."));
        // judged where it leads, before any step past it is looked at
        if (fence) {
          const whole = normalized([...names, ...queue]);
          if (whole !== null && !fence.allows(whole)) throw fence.refusal();
        }
        continue;
      }

      if (queue.length > 0) {
        if (!st.isDirectory())
          throw fileError("file.not_found", `${shown} does not exist: a step on the way is not a folder`);
        const next = await openFolder(dir, name, shown, "file.not_found");
        if (next === undefined) throw fileError("file.not_found", `${shown} does not exist in the home`);
        chain.push(next);
        names.push(name);
        const now = await next.stat({ bigint: true });
        if (now.dev !== st.dev || now.ino !== st.ino) throw changed(shown);
        continue;
      }

      if (st.isDirectory()) throw fileError("file.not_regular", `${shown} is a folder, not a file`);
      if (!st.isFile())
        throw fileError("file.not_regular", `${shown} is not a regular file (a FIFO, socket or device)`);
      if (st.size > BigInt(options.maxBytes)) throw tooLarge(shown, options.maxBytes);
      return await readChecked(at, st, home.path, shown, options.maxBytes, fence);
    }
  } finally {
    await closeAll(chain);
  }
}

function tooLarge(shown: string, maxBytes: number): WarrenError {
  return fileError("file.too_large", `${shown} is larger than the ${maxBytes} bytes allowed here`);
}

/** Opens the checked file without following a link or blocking, and reads it if it is still that file. */
async function readChecked(
  at: string,
  checked: { dev: bigint; ino: bigint },
  home: string,
  shown: string,
  maxBytes: number,
  fence?: ReadOptions["fence"],
): Promise<Buffer> {
  let file: FileHandle;
  try {
    file = await fs.open(at, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY);
  } catch (err) {
    throw errno(err) === "ENXIO" ? changed(shown) : stepError(err, shown);
  }
  try {
    const st = await file.stat({ bigint: true });
    if (!st.isFile() || st.dev !== checked.dev || st.ino !== checked.ino) throw changed(shown);
    // The folders on the way may have been moved since they were opened: ask where the file is now.
    const where = await fs.readlink(fdPath(file.fd));
    if (!where.startsWith(`${home}/`)) throw changed(shown);
    if (fence && !fence.allows(where.slice(home.length + 1).split("/"))) throw fence.refusal();
    if (st.size > BigInt(maxBytes)) throw tooLarge(shown, maxBytes);

    // Read to the end: the file may have grown since fstat, and the limit still holds.
    const chunks: Buffer[] = [];
    let length = 0;
    for (;;) {
      const chunk = Buffer.allocUnsafe(Math.min(READ_CHUNK, maxBytes - length + 1));
      const { bytesRead } = await file.read(chunk, 0, chunk.length, null);
      if (bytesRead === 0) break;
      length += bytesRead;
      if (length > maxBytes) throw tooLarge(shown, maxBytes);
      chunks.push(chunk.subarray(0, bytesRead));
    }
    return Buffer.concat(chunks, length);
  } finally {
    await file.close();
  }
}

export interface WriteOptions {
  /** The caller's size limit in bytes; more data is refused with file.too_large. */
  maxBytes: number;
  /** Owner given to the file and to every folder created on the way: the agent's uid and gid. */
  uid: number;
  gid: number;
  /** The file's mode; 0o600 when not given. Created folders are always 0o700. */
  mode?: number;
}

/**
 * Writes a file in the home (components from parseHomePath), accepting no link anywhere: the home
 * must be a real folder, each existing folder on the way a real folder (a link: file.link; a file:
 * file.not_regular), missing folders are made one at a time (0700, owned by uid/gid) inside the
 * folder opened before them, and the file is written under a temporary name in its folder and
 * renamed over its name, which replaces a link there instead of following it. A link at the name
 * when the write starts is refused (file.link); a folder, FIFO or socket there is file.not_regular.
 * Replacing also means a hard link to a file elsewhere is cut, never written through.
 */
export async function writeHomeFile(
  homeDir: string,
  components: readonly string[],
  data: Uint8Array,
  options: WriteOptions,
): Promise<void> {
  checkComponents(components);
  const shown = showPath(components);
  if (data.byteLength > options.maxBytes) throw tooLarge(shown, options.maxBytes);
  const home = await openHome(homeDir);
  const held: FileHandle[] = [home.handle];
  try {
    let dir = home.handle;
    for (const [i, name] of components.slice(0, -1).entries()) {
      const step = showPath(components.slice(0, i + 1));
      let next = await openFolder(dir, name, step, "file.not_regular");
      if (next === undefined) next = await makeFolder(dir, name, step, options);
      held.push(next);
      dir = next;
    }

    const name = components.at(-1) ?? "";
    const at = within(dir.fd, name);
    const st = await fs.lstat(at).catch((err: unknown) => {
      if (errno(err) === "ENOENT") return undefined;
      throw stepError(err, shown);
    });
    if (st?.isSymbolicLink() === true)
      throw fileError("file.link", `${shown} is a link; links are not accepted here`);
    if (st !== undefined && !st.isFile())
      throw fileError("file.not_regular", `${shown} exists and is not a regular file`);
    await replaceFile(dir, name, data, options, shown);
  } finally {
    await closeAll(held);
  }
}

/** Makes one missing folder inside `dir`, then opens it as a folder (never through a link) and hands it to the agent. */
async function makeFolder(
  dir: FileHandle,
  name: string,
  shown: string,
  options: WriteOptions,
): Promise<FileHandle> {
  try {
    await fs.mkdir(within(dir.fd, name), 0o700);
  } catch (err) {
    if (errno(err) !== "EEXIST") throw stepError(err, shown);
  }
  const made = await openFolder(dir, name, shown, "file.not_regular");
  if (made === undefined)
    throw fileError("file.not_found", `${shown} vanished while it was being made; try again`);
  try {
    await made.chown(options.uid, options.gid);
    await made.chmod(0o700);
  } catch (err) {
    await made.close();
    throw err;
  }
  return made;
}

/** Writes `data` to a fresh temporary file in `dir`, then renames it over `name`. */
async function replaceFile(
  dir: FileHandle,
  name: string,
  data: Uint8Array,
  options: WriteOptions,
  shown: string,
): Promise<void> {
  const temp = within(dir.fd, `.warren-write-${randomBytes(8).toString("hex")}`);
  const file = await fs.open(temp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0o600).catch((err: unknown) => {
    throw stepError(err, shown); // ENOENT: the folder was removed while it was held open
  });
  let renamed = false;
  try {
    await file.writeFile(data);
    await file.chown(options.uid, options.gid);
    await file.chmod(options.mode ?? 0o600);
    await file.close();
    await fs.rename(temp, within(dir.fd, name));
    renamed = true;
  } catch (err) {
    if (errno(err) === "EISDIR" || errno(err) === "ENOTEMPTY" || errno(err) === "EEXIST") {
      throw fileError("file.not_regular", `${shown} is a folder; it cannot be replaced by a file`, err);
    }
    throw stepError(err, shown);
  } finally {
    await file.close().catch(() => undefined);
    if (!renamed) await fs.unlink(temp).catch(() => undefined);
  }
}

/** One entry of a folder in the home, as listHomeFolder gives it. */
export interface HomeEntry {
  name: string;
  type: "file" | "folder" | "link" | "other";
  /** Bytes, for a regular file; 0 otherwise. */
  size: number;
  /** When it last changed (its own mtime: a link's, not its target's). */
  modifiedAt: Date;
}

/**
 * Lists a folder of the home (components from parseHomePath; none: the home itself), accepting
 * no link on the way: each folder is opened inside the one before it with O_NOFOLLOW (a link:
 * file.link; a file: file.not_found). Entries are not followed: a link is listed as a link.
 * At most `maxEntries` are given, sorted by name; `truncated` says when there were more.
 */
export async function listHomeFolder(
  homeDir: string,
  components: readonly string[],
  maxEntries: number,
): Promise<{ entries: HomeEntry[]; truncated: boolean }> {
  if (components.length > 0) checkComponents(components);
  const home = await openHome(homeDir);
  const held: FileHandle[] = [home.handle];
  try {
    let dir = home.handle;
    for (const [i, name] of components.entries()) {
      const step = showPath(components.slice(0, i + 1));
      const next = await openFolder(dir, name, step, "file.not_found");
      if (next === undefined) throw fileError("file.not_found", `${step} does not exist in the home`);
      held.push(next);
      dir = next;
    }
    const names = (await fs.readdir(fdPath(dir.fd))).sort();
    // the folders on the way may have been moved since they were opened: ask where it is now
    if (components.length > 0) {
      const where = await fs.readlink(fdPath(dir.fd));
      if (!where.startsWith(`${home.path}/`)) throw changed(showPath(components));
    }
    const entries: HomeEntry[] = [];
    for (const name of names.slice(0, maxEntries)) {
      const st = await fs.lstat(within(dir.fd, name)).catch(() => undefined);
      if (st === undefined) continue; // removed meanwhile
      const type = st.isSymbolicLink()
        ? "link"
        : st.isDirectory()
          ? "folder"
          : st.isFile()
            ? "file"
            : "other";
      entries.push({ name, type, size: type === "file" ? st.size : 0, modifiedAt: st.mtime });
    }
    return { entries, truncated: names.length > maxEntries };
  } finally {
    await closeAll(held);
  }
}
