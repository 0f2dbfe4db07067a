// What the browser tests share: a real `warren serve` of the built CLI (trusted-header mode),
// people's browsers (Debian's chromium driven by playwright-core, one fresh profile each, their
// email as the trusted header), the API as one person, screenshots, and a cleanup that stops
// the boxes, the browsers and the server and removes their folders.
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { mkdir, mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { chromium, type BrowserContext, type Page } from "playwright-core";
import { builtCli, startServe, type Served } from "./serve.js";

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const CHROMIUM = "/usr/bin/chromium";
const FLAGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];
/** Where screenshots go (test-results/web, not committed). */
const shotsDir = path.join(repo, "test-results", "web");

export interface WebFixture {
  base: string;
  stateRoot: string;
  serve: Served;
  /** One person's browser page: a fresh profile, their email sent as the trusted header. */
  personAt(email: string, size?: { width: number; height: number }): Promise<Page>;
  /** The API as one person: status and parsed body. */
  api(email: string, method: string, url: string, body?: unknown): Promise<{ status: number; body: any }>;
  shot(page: Page, name: string): Promise<void>;
  /** Stops every machine's box, closes the browsers, stops the server, removes the folders. */
  close(owner: string): Promise<void>;
}

/** Starts the server (the app must be built: `npm run build`) with `env` added to its own. */
export async function startWeb(o: { env?: Record<string, string> } = {}): Promise<WebFixture> {
  assert.ok(existsSync(builtCli), "run `npm run build` before the browser tests");
  assert.ok(existsSync(path.join(repo, "dist/web/index.html")), "the app is not built: run `npm run build`");
  assert.ok(existsSync(CHROMIUM), "chromium is missing: scripts/setup.sh installs it");
  await mkdir(shotsDir, { recursive: true });
  const stateRoot = await mkdtemp(path.join(os.tmpdir(), "warren-web-"));
  const dirs = [stateRoot];
  const contexts: BrowserContext[] = [];
  let serve: Served;
  try {
    serve = await startServe({ stateRoot, ...(o.env ? { env: o.env } : {}) });
  } catch (err) {
    await rm(stateRoot, { recursive: true, force: true, maxRetries: 3 });
    throw err;
  }
  const base = serve.base;
  const api: WebFixture["api"] = async (email, method, url, body) => {
    const r = await fetch(`${base}${url}`, {
      method,
      headers: {
        "x-forwarded-email": email,
        ...(body === undefined ? {} : { "content-type": "application/json" }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await r.text();
    return { status: r.status, body: text ? JSON.parse(text) : undefined };
  };
  return {
    base,
    stateRoot,
    serve,
    api,
    personAt: async (email, size = { width: 1280, height: 800 }) => {
      const dir = await mkdtemp(path.join(os.tmpdir(), "warren-web-profile-"));
      dirs.push(dir);
      const ctx = await chromium.launchPersistentContext(dir, {
        executablePath: CHROMIUM,
        headless: true,
        args: FLAGS,
        viewport: size,
        extraHTTPHeaders: { "x-forwarded-email": email },
      });
      contexts.push(ctx);
      const page = ctx.pages()[0] ?? (await ctx.newPage());
      page.setDefaultTimeout(30_000);
      return page;
    },
    shot: async (page, name) => {
      await page.screenshot({ path: path.join(shotsDir, `${name}.png`), fullPage: true });
    },
    close: async (owner) => {
      for (const ctx of contexts) await ctx.close().catch(() => {});
      const ms = await api(owner, "GET", "/api/machines").catch(() => undefined);
      for (const m of ms?.body?.items ?? [])
        await api(owner, "POST", `/api/machines/${m.id}/stop`).catch(() => {});
      await serve.stop();
      for (const d of dirs) await rm(d, { recursive: true, force: true, maxRetries: 3 });
    },
  };
}
