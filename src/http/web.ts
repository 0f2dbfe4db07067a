// The operator app, served from its built folder (vite's output): a file of the build when the
// path names one, else index.html for every page address (the app routes itself). Paths under
// /api never reach this: an unknown one stays a JSON 404.
import { readFile, stat } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";

/** Where `npm run build` puts the app: dist/web beside dist/http (and beside src/ in a checkout). */
export const DEFAULT_WEB_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../dist/web");

const TYPES: Record<string, string> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".svg": "image/svg+xml",
  ".png": "image/png",
  ".ico": "image/x-icon",
  ".json": "application/json",
  ".woff2": "font/woff2",
  ".map": "application/json",
  ".txt": "text/plain; charset=utf-8",
};

export interface WebAsset {
  body: Buffer;
  type: string;
  /** Hashed build files never change; index.html is asked for again every time. */
  cache: string;
}

const NOT_BUILT = `<!doctype html><meta charset="utf-8"><title>warren</title>
<p>The operator app is not built. Run <code>npm run build</code> (or <code>make dev</code> while working on it);
the API is under <a href="/api/openapi.json">/api</a>.</p>`;

/** True for paths the app answers: everything but the API, /health and /metrics. */
export function isAppPath(url: string): boolean {
  const p = url.split("?")[0] ?? "";
  return !(p === "/api" || p.startsWith("/api/") || p === "/health" || p === "/metrics");
}

/** The asset for a GET of `url`: a file of the build, or index.html (the history fallback); null: none. */
export async function webAsset(root: string, url: string): Promise<WebAsset | null> {
  let p: string;
  try {
    p = decodeURIComponent(url.split("?")[0] ?? "/");
  } catch {
    p = "/";
  }
  const rel = path.posix.normalize(p).replace(/^(\.\.\/|\/)+/, "");
  const file = path.join(root, rel);
  if (rel !== "" && !rel.includes("\0") && file.startsWith(root + path.sep)) {
    const st = await stat(file).catch(() => undefined);
    if (st?.isFile()) {
      const ext = path.extname(file);
      return {
        body: await readFile(file),
        type: TYPES[ext] ?? "application/octet-stream",
        cache: rel.startsWith("assets/") ? "public, max-age=31536000, immutable" : "no-cache",
      };
    }
  }
  if (rel.startsWith("assets/")) return null; // a build file that is not there: a 404, not the page
  const index = await readFile(path.join(root, "index.html")).catch(() => Buffer.from(NOT_BUILT));
  return { body: index, type: TYPES[".html"] ?? "text/html", cache: "no-cache" };
}
