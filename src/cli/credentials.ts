// The personal tokens `warren login` stored, one per server: WARREN_CREDENTIALS, else
// $XDG_CONFIG_HOME/warren/credentials.json (else ~/.config/...), readable by its owner only.
// A command to a server with a stored token sends it (`Authorization: Bearer`) unless
// WARREN_HEADERS or --header already names an Authorization.
import { readFileSync } from "node:fs";
import { chmod, mkdir, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";

type Env = Record<string, string | undefined>;

function credentialsFile(env: Env): string {
  if (env.WARREN_CREDENTIALS) return path.resolve(env.WARREN_CREDENTIALS);
  const base = env.XDG_CONFIG_HOME || path.join(env.HOME || os.homedir(), ".config");
  return path.join(base, "warren", "credentials.json");
}

const keyOf = (url: string) => new URL(url).origin;

function readAll(file: string): Record<string, string> {
  try {
    const v: unknown = JSON.parse(readFileSync(file, "utf8"));
    return v && typeof v === "object" ? (v as Record<string, string>) : {};
  } catch {
    return {};
  }
}

/** The token stored for the server at `url`, if any. */
export function storedToken(env: Env, url: string): string | undefined {
  const t = readAll(credentialsFile(env))[keyOf(url)];
  return typeof t === "string" && t ? t : undefined;
}

/** Stores (or, with undefined, forgets) the token of the server at `url`; answers the file. */
export async function storeToken(env: Env, url: string, token: string | undefined): Promise<string> {
  const file = credentialsFile(env);
  const all = readAll(file);
  if (token === undefined) delete all[keyOf(url)];
  else all[keyOf(url)] = token;
  await mkdir(path.dirname(file), { recursive: true, mode: 0o700 });
  await writeFile(file, `${JSON.stringify(all, null, 2)}\n`, { mode: 0o600 });
  await chmod(file, 0o600);
  return file;
}
