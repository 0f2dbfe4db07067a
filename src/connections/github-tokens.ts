// GitHub installation tokens: the App's JWT (RS256 with node:crypto, iat 60 s back, exp 9
// minutes on, iss the App's id), the token minted with it at the App's API through the
// guarded connector, and the files of the agent's runtime folder (/run/warren/<agent id>, its
// uid's alone): the token as {token, expires_at} (0600), a git credential helper that reads
// it, and the git configuration that names the helper for the App's git host only (the
// agent's commands include it: GIT_CONFIG_* in workloads/walls.ts). The private key never
// leaves the server; no token is stored anywhere else.
import { createPrivateKey, sign } from "node:crypto";
import fs from "node:fs/promises";
import path from "node:path";
import { BOX_PATHS, writeOwned } from "../boxes/index.js";
import { WarrenError } from "../errors.js";
import type { GuardedFetch } from "../net/connector.js";

/** The token's file in the agent's runtime folder. */
const TOKEN_FILE = "github-token.json";
/** The credential helper and the git configuration that names it, in the runtime folder. */
const HELPER_FILE = "git-credential-github";
const GITCONFIG_FILE = "gitconfig";

export interface Minted {
  token: string;
  expiresAt: Date;
}

const b64url = (b: Buffer | string) => Buffer.from(b).toString("base64url");

/** The App's JWT: RS256, issued 60 s back (clock drift), expiring within GitHub's 10 minutes. */
export function appJwt(appId: string, privateKeyPem: string, now = Date.now()): string {
  const iat = Math.floor(now / 1000) - 60;
  const head = b64url(JSON.stringify({ alg: "RS256", typ: "JWT" }));
  const body = b64url(JSON.stringify({ iat, exp: iat + 60 + 540, iss: appId }));
  let key;
  try {
    key = createPrivateKey(privateKeyPem);
  } catch {
    throw new WarrenError("request.invalid", "body.private_key: not a PEM private key");
  }
  if (key.asymmetricKeyType !== "rsa")
    throw new WarrenError("request.invalid", "body.private_key: a GitHub App's key is an RSA key");
  const sig = sign("sha256", Buffer.from(`${head}.${body}`), key);
  return `${head}.${body}.${b64url(sig)}`;
}

/** POST {api}/app/installations/{id}/access_tokens with the App's JWT: the token and its expiry. */
export async function mintInstallationToken(
  fetch: GuardedFetch,
  o: { apiUrl: string; appId: string; privateKeyPem: string; installationId: string },
): Promise<Minted> {
  const url = `${o.apiUrl.replace(/\/+$/, "")}/app/installations/${encodeURIComponent(o.installationId)}/access_tokens`;
  let res: Response;
  try {
    res = await fetch(url, {
      method: "POST",
      headers: {
        authorization: `Bearer ${appJwt(o.appId, o.privateKeyPem)}`,
        accept: "application/vnd.github+json",
        "x-github-api-version": "2022-11-28",
        "user-agent": "warren",
      },
      redirect: "manual",
    });
  } catch (err) {
    if (err instanceof WarrenError) throw err;
    throw new WarrenError(
      "connection.unusable",
      `the GitHub API could not be reached: ${(err as Error).message}`,
    );
  }
  const text = await res.text();
  if (res.status !== 201 && res.status !== 200)
    throw new WarrenError(
      "connection.unusable",
      `the GitHub API refused the installation token (${res.status}): ${messageOf(text)}`,
    );
  let body: { token?: unknown; expires_at?: unknown };
  try {
    body = JSON.parse(text) as typeof body;
  } catch {
    throw new WarrenError(
      "connection.unusable",
      "the GitHub API answered no JSON for the installation token",
    );
  }
  const expiresAt = typeof body.expires_at === "string" ? new Date(body.expires_at) : new Date(NaN);
  if (typeof body.token !== "string" || body.token === "" || Number.isNaN(expiresAt.getTime()))
    throw new WarrenError("connection.unusable", "the GitHub API's answer had no token or expires_at");
  return { token: body.token, expiresAt };
}

/** GitHub's `message` of a refusal (never the whole body). */
function messageOf(text: string): string {
  try {
    const m = (JSON.parse(text) as { message?: unknown }).message;
    return typeof m === "string" ? m.slice(0, 300) : "no message";
  } catch {
    return "no message";
  }
}

/** The git host the helper answers for: github.com for api.github.com, else the given origin. */
export function gitUrlOf(apiUrl: string, gitUrl?: string): string {
  if (gitUrl) return new URL(gitUrl).origin;
  const u = new URL(apiUrl);
  return u.host === "api.github.com" ? "https://github.com" : u.origin;
}

/**
 * The runtime folder's files for one agent (`dir` on the host; `agentId` names it in the
 * box): the token, the helper, and the git configuration naming the helper for `gitUrl`.
 */
export async function writeTokenFiles(
  dir: string,
  o: { agentId: string; uid: number; gitUrl: string; minted: Minted },
): Promise<void> {
  const inBox = `${BOX_PATHS.runtime}/${o.agentId}`;
  const helper = [
    "#!/bin/sh",
    "# git's credential helper: the installation token of this agent's runtime folder",
    'test "$1" = get || exit 0',
    `t=$(sed -n 's/.*"token":"\\([^"]*\\)".*/\\1/p' ${inBox}/${TOKEN_FILE} 2>/dev/null)`,
    'test -n "$t" || exit 0',
    "printf 'username=x-access-token\\npassword=%s\\n' \"$t\"",
    "",
  ].join("\n");
  const config = `[credential "${o.gitUrl}"]\n\thelper = ${inBox}/${HELPER_FILE}\n`;
  const token = JSON.stringify({ token: o.minted.token, expires_at: o.minted.expiresAt.toISOString() });
  await writeOwned(dir, HELPER_FILE, helper, o.uid, 0o700);
  await writeOwned(dir, TOKEN_FILE, `${token}\n`, o.uid, 0o600);
  await writeOwned(dir, GITCONFIG_FILE, config, o.uid, 0o600);
}

/** Removes the token and its helper's files (the binding was removed). */
export async function removeTokenFiles(dir: string): Promise<void> {
  await Promise.all(
    [TOKEN_FILE, HELPER_FILE, GITCONFIG_FILE].map((f) => fs.rm(path.join(dir, f), { force: true })),
  );
}
