// Rotating the master key: every value re-sealed under the new key in one transaction, with
// the server stopped. A development key file is replaced once the transaction is committed;
// a key from WARREN_MASTER_KEY is the operator's to replace.
import { randomBytes } from "node:crypto";
import { constants } from "node:fs";
import { open as openFile, readFile, rename, rm } from "node:fs/promises";
import path from "node:path";
import type { Db } from "../store/index.js";
import { MASTER_KEY_FILE, MasterKeyError, type MasterKey } from "./master-key.js";
import { eq, isNotNull } from "drizzle-orm";
import { schema } from "../store/index.js";
import { open, seal } from "./crypto.js";

const HEX_KEY = /^[0-9a-fA-F]{64}$/;

/** A new key from a file of 64 hex characters; the all-zero key only when allowed. */
export async function readNewKey(file: string, allowZero: boolean): Promise<Buffer> {
  const hex = (await readFile(file, "utf8")).trim();
  if (!HEX_KEY.test(hex)) throw new MasterKeyError(`${file} must hold 64 hex characters (32 bytes)`);
  if (/^0{64}$/.test(hex) && !allowZero)
    throw new MasterKeyError(`${file} holds the all-zero key; use a random key`);
  return Buffer.from(hex, "hex");
}

export interface Rotation {
  secrets: number;
  /** Where the new key now is: the development key file, or null (the caller sets WARREN_MASTER_KEY). */
  file: string | null;
}

export async function rotateMasterKey(
  db: Db,
  current: MasterKey,
  runDir: string,
  newKey: Buffer | undefined,
): Promise<Rotation> {
  if (current.source === "env" && newKey === undefined)
    throw new MasterKeyError(
      "the key is WARREN_MASTER_KEY: give the new one with --new-key-file, then set WARREN_MASTER_KEY to it",
    );
  const next = newKey ?? randomBytes(32);
  if (next.equals(current.key)) throw new MasterKeyError("the new key is the current key");
  if (current.source === "env") return { secrets: await rotateKey(db, current.key, next), file: null };
  // the development key file: the new key is written beside it first, so that a crash after
  // the commit leaves it on disk; it replaces the old file once the values moved
  const file = current.file ?? path.join(runDir, MASTER_KEY_FILE);
  const staged = `${file}.next`;
  await rm(staged, { force: true });
  const h = await openFile(
    staged,
    constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW,
    0o600,
  );
  try {
    await h.writeFile(`${next.toString("hex")}\n`);
    await h.sync();
  } finally {
    await h.close();
  }
  let count: number;
  try {
    count = await rotateKey(db, current.key, next);
  } catch (err) {
    await rm(staged, { force: true });
    throw err;
  }
  await rename(staged, file);
  return { secrets: count, file };
}

/**
 * Re-seals every value under a new key, in one transaction: all values move, or none.
 * Every value must open under the old key first.
 */
async function rotateKey(db: Db, oldKey: Buffer, newKey: Buffer): Promise<number> {
  return db.transaction(async (tx) => {
    const rows = await tx
      .select({ id: schema.secrets.id, sealed: schema.secrets.sealed })
      .from(schema.secrets)
      .where(isNotNull(schema.secrets.sealed))
      .for("update");
    for (const r of rows) {
      const value = open(oldKey, r.id, r.sealed!);
      await tx
        .update(schema.secrets)
        .set({ sealed: seal(newKey, r.id, value) })
        .where(eq(schema.secrets.id, r.id));
    }
    return rows.length;
  });
}
