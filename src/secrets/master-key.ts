// The master key that encrypts secrets at rest: WARREN_MASTER_KEY, or in development a key
// generated once under STATE_ROOT/run/ (0600, outside every home and every box) and read
// back at every start. The key itself is never logged or answered.
import { randomBytes } from "node:crypto";
import { constants } from "node:fs";
import { lstat, open, readFile } from "node:fs/promises";
import path from "node:path";

export interface MasterKey {
  /** 32 bytes. */
  key: Buffer;
  /** Where it came from: the environment, or the development key file. */
  source: "env" | "file" | "generated";
  /** The development key file, when the key is one. */
  file?: string;
}

export class MasterKeyError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "MasterKeyError";
  }
}

export const MASTER_KEY_FILE = "master.key";

const HEX_KEY = /^[0-9a-fA-F]{64}$/;

function fromHex(hex: string, where: string, allowZero: boolean): Buffer {
  if (!HEX_KEY.test(hex)) throw new MasterKeyError(`${where} must hold 64 hex characters (32 bytes)`);
  if (/^0{64}$/.test(hex) && !allowZero)
    throw new MasterKeyError(`${where} is the all-zero key; set a random key or ALLOW_ZERO_MASTER_KEY=1`);
  return Buffer.from(hex, "hex");
}

async function readKeyFile(file: string, allowZero: boolean): Promise<Buffer> {
  const st = await lstat(file);
  if (!st.isFile()) throw new MasterKeyError(`${file} is not a regular file`);
  if ((st.mode & 0o077) !== 0)
    throw new MasterKeyError(
      `${file} is readable by others (mode ${(st.mode & 0o777).toString(8)}); chmod 600 it`,
    );
  return fromHex((await readFile(file, "utf8")).trim(), file, allowZero);
}

/**
 * The key from `WARREN_MASTER_KEY` when set; else the development key in `runDir`,
 * created at the first start (exclusively, so two starts agree on one key).
 */
export async function resolveMasterKey(
  env: { WARREN_MASTER_KEY?: string | undefined; ALLOW_ZERO_MASTER_KEY?: boolean },
  runDir: string,
): Promise<MasterKey> {
  const allowZero = env.ALLOW_ZERO_MASTER_KEY === true;
  if (env.WARREN_MASTER_KEY !== undefined)
    return { key: fromHex(env.WARREN_MASTER_KEY, "WARREN_MASTER_KEY", allowZero), source: "env" };
  const file = path.join(runDir, MASTER_KEY_FILE);
  try {
    return { key: await readKeyFile(file, allowZero), source: "file", file };
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw err;
  }
  const key = randomBytes(32);
  let handle;
  try {
    handle = await open(
      file,
      constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW,
      0o600,
    );
  } catch (err) {
    // another start made it first: use that one
    if ((err as NodeJS.ErrnoException).code === "EEXIST")
      return { key: await readKeyFile(file, allowZero), source: "file", file };
    throw err;
  }
  try {
    await handle.writeFile(`${key.toString("hex")}\n`);
    await handle.sync();
  } finally {
    await handle.close();
  }
  return { key, source: "generated", file };
}
