// What the browser tests share: the built app and CLI checked, a real `warren serve` (the
// built CLI, trusted-header mode) in a STATE_ROOT of its own, a JSON helper for its API as
// the owner, and Debian's chromium driven by playwright-core.
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { mkdir, mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { chromium, type BrowserContext, type Page } from "playwright-core";
import { builtCli, startServe, type Served } from "../support/serve.js";

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
export const shots = path.join(repo, "test-results", "web");
const CHROMIUM = "/usr/bin/chromium";
export const OWNER = "owner@example.com";

export interface WebRig {
  base: string;
  stateRoot: string;
  page: Page;
  /** A JSON call as the owner; anything but 2xx fails the test with the answer. */
  json: (method: string, url: string, body?: object) => Promise<any>;
  close: () => Promise<void>;
}

/** The server (given `prepare` to write STATE_ROOT files before it starts) and a browser. */
export async function startWebRig(
  o: { prepare?: (stateRoot: string) => Promise<void> } = {},
): Promise<WebRig> {
  assert.ok(existsSync(builtCli), "run `npm run build` before the browser tests");
  assert.ok(existsSync(path.join(repo, "dist/web/index.html")), "the app is not built: run `npm run build`");
  assert.ok(existsSync(CHROMIUM), "chromium is missing: scripts/setup.sh installs it");
  await mkdir(shots, { recursive: true });
  const stateRoot = await mkdtemp(path.join(os.tmpdir(), "warren-web-"));
  let serve: Served | undefined;
  let ctx: BrowserContext | undefined;
  let profile = "";
  const close = async () => {
    await ctx?.close().catch(() => {});
    await serve?.stop();
    for (const d of [profile, stateRoot]) if (d) await rm(d, { recursive: true, force: true, maxRetries: 3 });
  };
  try {
    await o.prepare?.(stateRoot);
    serve = await startServe({ stateRoot });
    const base = serve.base;
    profile = await mkdtemp(path.join(os.tmpdir(), "warren-web-profile-"));
    ctx = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM,
      headless: true,
      args: [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        "--disable-background-networking",
      ],
      viewport: { width: 1280, height: 800 },
      extraHTTPHeaders: { "x-forwarded-email": OWNER },
    });
    const page = ctx.pages()[0] ?? (await ctx.newPage());
    page.setDefaultTimeout(30_000);
    const json = async (method: string, url: string, body?: object) => {
      const r = await fetch(`${base}${url}`, {
        method,
        headers: { "x-forwarded-email": OWNER, ...(body ? { "content-type": "application/json" } : {}) },
        body: body ? JSON.stringify(body) : undefined,
      });
      const text = await r.text();
      assert.ok(r.status < 300, `${method} ${url}: ${r.status} ${text}`);
      return text ? JSON.parse(text) : undefined;
    };
    return { base, stateRoot, page, json, close };
  } catch (err) {
    await close();
    throw err;
  }
}
