// One state root: `make up` (scripts/env.sh) writes `.env` in the checkout with an absolute
// STATE_ROOT, and every start reads it, wherever it is started from, so the same state tree
// and master key are found. A variable already set wins over the file.
import { readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

/** The checkout (or installed package) the server runs from: its `.env` is read. */
const checkoutEnvFile = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../.env");

/** The `.env` a start reads: WARREN_ENV_FILE when set, else the checkout's. */
export function envFileOf(env: Record<string, string | undefined>): string {
  return env.WARREN_ENV_FILE || checkoutEnvFile;
}

/** `NAME=value` lines; `#` comments, blank lines, `export ` and one pair of quotes allowed. */
export function parseDotEnv(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const raw of text.split("\n")) {
    const line = raw.trim();
    if (line === "" || line.startsWith("#")) continue;
    const m = /^(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.*)$/.exec(line);
    if (!m) continue;
    let value = m[2] ?? "";
    if (/^(["']).*\1$/.test(value)) value = value.slice(1, -1);
    out[m[1] as string] = value;
  }
  return out;
}

/**
 * `env` with the file's variables under it (a variable set in `env` is kept); no file: `env`.
 * The file: WARREN_ENV_FILE when set, else the checkout's `.env`.
 */
export function withDotEnv(env: Record<string, string | undefined>): Record<string, string | undefined> {
  const file = envFileOf(env);
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch {
    return env;
  }
  const fromFile = parseDotEnv(text);
  const merged: Record<string, string | undefined> = { ...fromFile };
  for (const [k, v] of Object.entries(env)) if (v !== undefined) merged[k] = v;
  return merged;
}
