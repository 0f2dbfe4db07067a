// The operator app as the browser tests use it: a real `warren serve` (the built CLI, trusted-
// header mode, real boxes) on a fresh state folder, and Debian's chromium driven by
// playwright-core, one fresh profile per person (their email sent as the trusted header).
// `stop` closes every browser, stops every machine's box the test started, then the server,
// and removes the folders, whatever the tests did.
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { mkdir, mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { chromium, type BrowserContext, type Page } from "playwright-core";
import { waitFor } from "../conversations/support.js";
import { TERMINAL_STATUSES } from "../support/agent-runs.js";
import { builtCli, startServe, type Answer, type Served } from "../support/serve.js";

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
/** Where the tests' screenshots go. */
export const shots = path.join(repo, "test-results", "web");
const CHROMIUM = "/usr/bin/chromium";
/** The organisation's first owner in every browser test. */
export const OWNER = "owner@example.com";
// the flags this closed network needs: nothing of chromium's own reaches out
const FLAGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--no-first-run",
  "--disable-background-networking",
];

export interface WebApp {
  base: string;
  stateRoot: string;
  /** The API as a person (OWNER unless `as`): a body is JSON, or sent as is with `type`. */
  api: (
    method: string,
    url: string,
    body?: object | string,
    o?: { as?: string; type?: string },
  ) => Promise<Answer>;
  /** PUT a file into an agent's home as OWNER; fails the test unless 204. */
  putFile: (agentId: string, p: string, data: string) => Promise<void>;
  /** Waits until the run has ended; answers it. */
  ended: (runId: string) => Promise<any>;
  /** A person's browser page: a fresh profile, their email as the trusted header. */
  person(
    email?: string,
    o?: { size?: { width: number; height: number }; downloads?: boolean },
  ): Promise<Page>;
  /** A full-page screenshot into test-results/web/<name>.png. */
  shot(page: Page, name: string): Promise<void>;
  stop(): Promise<void>;
}

/** `prepare` writes into the state folder before the server starts (a policy file, say). */
export async function startWebApp(
  name: string,
  env?: Record<string, string>,
  prepare?: (stateRoot: string) => Promise<void>,
): Promise<WebApp> {
  assert.ok(existsSync(builtCli), "run `npm run build` before the browser tests");
  assert.ok(existsSync(path.join(repo, "dist/web/index.html")), "the app is not built: run `npm run build`");
  assert.ok(existsSync(CHROMIUM), "chromium is missing: scripts/setup.sh installs it");
  await mkdir(shots, { recursive: true });
  const stateRoot = await mkdtemp(path.join(os.tmpdir(), `warren-web-${name}-`));
  const dirs = [stateRoot];
  const contexts: BrowserContext[] = [];
  let serve: Served | undefined;
  try {
    await prepare?.(stateRoot);
    serve = await startServe({ stateRoot, ...(env ? { env } : {}) });
  } catch (err) {
    await rm(stateRoot, { recursive: true, force: true, maxRetries: 3 });
    throw err;
  }
  const base = serve.base;

  const api: WebApp["api"] = (method, url, body, o = {}) =>
    serve.call(method, url, body, { as: o.as ?? OWNER, ...(o.type ? { type: o.type } : {}) });

  const putFile: WebApp["putFile"] = async (agentId, p, data) => {
    const r = await api("PUT", `/api/agents/${agentId}/files/${p}`, data, {
      type: "application/octet-stream",
    });
    assert.equal(r.status, 204, r.text);
  };
  const ended: WebApp["ended"] = (runId) =>
    waitFor(`run ${runId} to end`, async () => {
      const r = (await api("GET", `/api/runs/${runId}`)).body;
      return TERMINAL_STATUSES.includes(r.status) ? r : null;
    });

  const person: WebApp["person"] = async (email = OWNER, o = {}) => {
    const dir = await mkdtemp(path.join(os.tmpdir(), "warren-web-profile-"));
    dirs.push(dir);
    const ctx = await chromium.launchPersistentContext(dir, {
      executablePath: CHROMIUM,
      headless: true,
      args: FLAGS,
      viewport: o.size ?? { width: 1280, height: 800 },
      extraHTTPHeaders: { "x-forwarded-email": email },
      ...(o.downloads ? { acceptDownloads: true } : {}),
    });
    contexts.push(ctx);
    const page = ctx.pages()[0] ?? (await ctx.newPage());
    page.setDefaultTimeout(30_000);
    return page;
  };

  return {
    base,
    stateRoot,
    api,
    putFile,
    ended,
    person,
    shot: async (page, shotName) => {
      await page.screenshot({ path: path.join(shots, `${shotName}.png`), fullPage: true });
    },
    stop: async () => {
      for (const c of contexts) await c.close().catch(() => {});
      // every box the test started, then the server (which stops what is left: --stop-boxes)
      const ms = await api("GET", "/api/machines").catch(() => undefined);
      for (const m of ms?.body?.items ?? []) await api("POST", `/api/machines/${m.id}/stop`).catch(() => {});
      await serve.stop();
      for (const d of dirs) await rm(d, { recursive: true, force: true, maxRetries: 3 });
    },
  };
}
