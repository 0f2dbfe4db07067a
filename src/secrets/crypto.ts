// Secret values at rest: AES-256-GCM under the master key, a fresh 96-bit nonce for every
// value, and the secret's id as associated data (a sealed value copied onto another row does
// not open). Sealed form: "v1." + base64(nonce | ciphertext | 16-byte tag).
import { createCipheriv, createDecipheriv, randomBytes } from "node:crypto";

const VERSION = "v1.";
const NONCE_BYTES = 12;
const TAG_BYTES = 16;

export class SealError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "SealError";
  }
}

function checkKey(key: Buffer): void {
  if (key.length !== 32) throw new SealError("the master key must be 32 bytes");
}

export function seal(key: Buffer, secretId: string, value: Buffer): string {
  checkKey(key);
  const nonce = randomBytes(NONCE_BYTES);
  const c = createCipheriv("aes-256-gcm", key, nonce, { authTagLength: TAG_BYTES });
  c.setAAD(Buffer.from(secretId, "utf8"));
  const body = Buffer.concat([c.update(value), c.final()]);
  return VERSION + Buffer.concat([nonce, body, c.getAuthTag()]).toString("base64");
}

/** The value, or SealError when the key is not the one it was sealed under (or the row was changed). */
export function open(key: Buffer, secretId: string, sealed: string): Buffer {
  checkKey(key);
  if (!sealed.startsWith(VERSION)) throw new SealError("unknown sealed format");
  const raw = Buffer.from(sealed.slice(VERSION.length), "base64");
  if (raw.length < NONCE_BYTES + TAG_BYTES) throw new SealError("sealed value is too short");
  const nonce = raw.subarray(0, NONCE_BYTES);
  const tag = raw.subarray(raw.length - TAG_BYTES);
  const d = createDecipheriv("aes-256-gcm", key, nonce, { authTagLength: TAG_BYTES });
  d.setAAD(Buffer.from(secretId, "utf8"));
  d.setAuthTag(tag);
  try {
    return Buffer.concat([d.update(raw.subarray(NONCE_BYTES, raw.length - TAG_BYTES)), d.final()]);
  } catch {
    throw new SealError(`secret ${secretId} does not open under this master key`);
  }
}
