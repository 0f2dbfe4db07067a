// The synchronous part of measurement: walks directories and adds up allocated blocks.
// It runs inside the measurement workers (measure-worker.ts), never on the server's event loop.

import fs from "node:fs";

/** A hard-linked file's identity on the measured device: its inode number (bigint past 2^53). */
export type InodeKey = number | bigint;

export interface WalkTask {
  /** Absolute, canonical paths of directories to list (each already counted by its parent). */
  dirs: string[];
  /** The canonical path of the measured root; every listed directory must lie under it. */
  root: string;
  /** st_dev of the root: entries on any other device are neither counted nor entered. */
  dev: number;
}

export interface WalkResult {
  /** Allocated bytes of entries with a single link. */
  bytes: number;
  /** Allocated bytes of each multiply-linked non-directory, once per inode. */
  linked: Map<InodeKey, number>;
  /** Entries that could not be looked at or listed (EACCES, EPERM, ENAMETOOLONG): skipped, not counted. */
  skipped: number;
}

export interface WalkHooks {
  /** Called with each directory's entries once listed, before they are looked at (tests change the tree here). */
  listed?: (dir: string, names: readonly string[]) => void;
  /**
   * Called between directories. Returning true asks the walker to give away half of its pending
   * directories (the shallowest, so the largest pieces) through `give`.
   */
  hungry?: () => boolean;
  give?: (dirs: string[]) => void;
  /** Returning true stops the walk early (the result is then incomplete and must be discarded). */
  aborted?: () => boolean;
}

export class WalkError extends Error {
  constructor(
    readonly path: string,
    readonly errno: string,
    options?: ErrorOptions,
  ) {
    super(`cannot measure ${path}: ${errno}`, options);
    this.name = "WalkError";
  }
}

const DIR_FLAGS = fs.constants.O_RDONLY | fs.constants.O_DIRECTORY | fs.constants.O_NOFOLLOW;

/** Errors that mean "this entry vanished or changed kind while we looked": skip it. */
function vanished(err: unknown): boolean {
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  return code === "ENOENT" || code === "ENOTDIR" || code === "ELOOP";
}

/**
 * Errors that mean "this one entry cannot be looked at" (a folder the walker may not list, a
 * path longer than the kernel takes): the entry is skipped and counted, the walk goes on.
 */
function unreadable(err: unknown): boolean {
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  return code === "EACCES" || code === "EPERM" || code === "ENAMETOOLONG";
}

function fail(path: string, err: unknown): never {
  throw new WalkError(path, (err as NodeJS.ErrnoException | undefined)?.code ?? String(err), { cause: err });
}

/**
 * Lists one directory by descriptor. The directory is opened without following a link at its
 * name, must still be on the root's device, and its path as the kernel knows it must still lie
 * under the root: a directory swapped for a link, or moved out, is treated as vanished.
 * Returns undefined when it vanished, null when it cannot be listed (skipped).
 */
function listDir(dir: string, root: string, dev: number): string[] | undefined | null {
  let fd: number;
  try {
    fd = fs.openSync(dir, DIR_FLAGS);
  } catch (err) {
    if (vanished(err)) return undefined;
    if (unreadable(err)) return null;
    fail(dir, err);
  }
  try {
    const proc = `/proc/self/fd/${fd}`;
    if (fs.fstatSync(fd).dev !== dev) return undefined;
    const where = fs.readlinkSync(proc);
    if (where !== root && !where.startsWith(root === "/" ? "/" : `${root}/`)) return undefined;
    return fs.readdirSync(proc);
  } catch (err) {
    if (vanished(err)) return undefined;
    if (unreadable(err)) return null;
    fail(dir, err);
  } finally {
    fs.closeSync(fd);
  }
}

/**
 * Walks the task's directories depth first. Counts every entry's st_blocks * 512, never follows
 * a link, skips (and does not enter) anything on another device, counts a multiply-linked file
 * once per inode, and ignores entries that vanish mid-walk. An entry or folder that cannot be
 * looked at (EACCES, EPERM, ENAMETOOLONG) is skipped and counted in `skipped`, so one such
 * entry never fails the whole measurement. Other errors (EIO, ...) throw WalkError.
 */
export function walk(task: WalkTask, hooks: WalkHooks = {}): WalkResult {
  const { root, dev } = task;
  const stack = [...task.dirs];
  const linked = new Map<InodeKey, number>();
  let bytes = 0;
  let skipped = 0;

  while (stack.length > 0) {
    if (hooks.aborted?.() === true) break;
    if (stack.length > 1 && hooks.give !== undefined && hooks.hungry?.() === true) {
      hooks.give(stack.splice(0, Math.floor(stack.length / 2)));
    }
    const dir = stack.pop();
    if (dir === undefined) break;
    const names = listDir(dir, root, dev);
    if (names === null) skipped++;
    if (names === undefined || names === null) continue;
    hooks.listed?.(dir, names);
    const base = dir === "/" ? "" : dir;
    for (const name of names) {
      const path = `${base}/${name}`;
      let st: fs.Stats | undefined;
      try {
        st = fs.lstatSync(path, { throwIfNoEntry: false });
      } catch (err) {
        if (vanished(err)) continue;
        if (unreadable(err)) {
          skipped++;
          continue;
        }
        fail(path, err);
      }
      if (st === undefined || st.dev !== dev) continue;
      const size = st.blocks * 512;
      if (st.isDirectory()) {
        bytes += size;
        stack.push(path);
      } else if (st.nlink > 1) {
        const key = inodeKey(path, st);
        if (key !== undefined && !linked.has(key)) linked.set(key, size);
      } else {
        bytes += size;
      }
    }
  }
  return { bytes, linked, skipped };
}

/** The inode number as an exact key: a number while it fits, else a bigint from a second lstat. */
function inodeKey(path: string, st: fs.Stats): InodeKey | undefined {
  if (st.ino <= Number.MAX_SAFE_INTEGER) return st.ino;
  try {
    return fs.lstatSync(path, { bigint: true, throwIfNoEntry: false })?.ino;
  } catch (err) {
    if (vanished(err) || unreadable(err)) return undefined;
    fail(path, err);
  }
}
