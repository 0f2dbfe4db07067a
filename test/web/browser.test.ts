// The Browser tab of an agent (/agents/:id/browser) in a real headless Chromium against a real
// server: the agent's browser shows as frames with its page's address; an owner clicks into a
// text field of a page served on loopback and types, and the page gets it; a viewer sees
// "watching only" and its keys are dropped. The agent's browser is its own: Chromium in its box,
// reaching the site through its egress policy. Screenshots go to test-results/web/.
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { after, before, describe, test } from "node:test";
import { chromium, type BrowserContext, type Page } from "playwright-core";
import type { TestServer } from "../support/server.js";
import { startSite, startSiteServer, type Site } from "../support/site.js";

const CHROMIUM = "/usr/bin/chromium";
const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const shots = path.join(repo, "test-results", "web");
const PAGE = `<!doctype html><html><head><title>Sign in</title></head><body style="margin:0;background:#fff">
<input id="f" style="position:absolute;left:10px;top:10px;width:300px;height:40px">
</body></html>`;

function skipReason(): string | null {
  if (!fs.existsSync(CHROMIUM)) return "Debian's chromium is not installed (scripts/setup.sh installs it)";
  if (!fs.existsSync(path.join(repo, "dist/web/index.html")))
    return "the app is not built: run `npm run build`";
  return null;
}

describe("the Browser tab in Chromium", { skip: skipReason() ?? false }, () => {
  let t: TestServer;
  let site: Site;
  let siteUrl: string;
  let agent: { id: string };
  const contexts: BrowserContext[] = [];
  /** The server's own service of the agents' browsers (Chromium in each agent's box). */
  const browsers = () => t.server.browsers;
  const dirs: string[] = [];

  const person = async (email: string): Promise<Page> => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "warren-web-profile-"));
    dirs.push(dir);
    const ctx = await chromium.launchPersistentContext(dir, {
      executablePath: CHROMIUM,
      headless: true,
      args: [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        "--disable-background-networking",
      ],
      viewport: { width: 1280, height: 900 },
      extraHTTPHeaders: { "x-forwarded-email": email },
    });
    contexts.push(ctx);
    const page = ctx.pages()[0] ?? (await ctx.newPage());
    page.setDefaultTimeout(60_000);
    return page;
  };
  /** The page's text field, read through the agent's browser itself. */
  const fieldValue = async (): Promise<string | null> => {
    const p = await browsers().page(agent.id);
    try {
      const r = await p.send<{ result: { value: string | null } }>("Runtime.evaluate", {
        expression: "document.getElementById('f') ? document.getElementById('f').value : null",
        returnByValue: true,
      });
      return r.result.value;
    } finally {
      p.close();
    }
  };
  const waitValue = async (want: string) => {
    const deadline = Date.now() + 30_000;
    let got: string | null = null;
    while (Date.now() < deadline) {
      got = await fieldValue();
      if (got === want) return;
      await new Promise((r) => setTimeout(r, 100));
    }
    assert.fail(`the page's field holds ${JSON.stringify(got)}, not ${JSON.stringify(want)}`);
  };
  /** Clicks the shown frame where the page's own point (x, y) is. */
  const clickPage = async (page: Page, x: number, y: number) => {
    const img = page.getByTestId("browser-frame");
    const box = await img.boundingBox();
    assert.ok(box);
    // the agent's browser's page is 1280 CSS pixels wide (its --window-size)
    const scale = box.width / 1280;
    await img.click({ position: { x: x * scale, y: y * scale } });
  };

  before(async () => {
    fs.mkdirSync(shots, { recursive: true });
    site = await startSite(PAGE);
    const port = site.port;
    siteUrl = `http://site.test:${port}/`;
    t = await startSiteServer(site);
    const owner = { "x-forwarded-email": "owner@example.com" };
    const org = (await t.call("POST", "/api/orgs", { name: "web-browser" }, owner)).body;
    await t.call(
      "PUT",
      `/api/orgs/${org.id}/members`,
      { email: "viewer@example.com", role: "viewer" },
      owner,
    );
    const m = (await t.call("POST", "/api/machines", { org_id: org.id, name: "m", memory_mib: 2048 }, owner))
      .body;
    agent = (await t.call("POST", "/api/agents", { org_id: org.id, machine_id: m.id, name: "a" }, owner))
      .body;
    const policy = { sandbox_policy: { network: { allow: [`site.test:${port}`] } } };
    const set = await t.call("PATCH", `/api/agents/${agent.id}`, policy, owner);
    assert.equal(set.status, 200, JSON.stringify(set.body));
  });
  after(async () => {
    for (const c of contexts) await c.close().catch(() => {});
    await t?.server.runtime.stopAll("test over");
    await t?.close();
    site?.close();
    for (const d of dirs) fs.rmSync(d, { recursive: true, force: true, maxRetries: 3 });
  });

  test("an owner watches the agent's browser and types into its page", async () => {
    const owner = await person("owner@example.com");
    await owner.goto(`${t.url}/agents/${agent.id}/browser`);
    await owner.getByTestId("browser-state").getByText("connected").waitFor();
    const state = await t.call("GET", `/api/agents/${agent.id}/browser`, undefined, {
      "x-forwarded-email": "owner@example.com",
    });
    assert.equal(state.body.state, "running", "opening the tab started the agent's browser");
    // the agent's browser goes to the site (as its tools would)
    const p = await browsers().page(agent.id);
    await p.send("Page.navigate", { url: siteUrl });
    p.close();
    await owner.waitForFunction(
      `document.querySelector('[data-testid="browser-url"]')?.textContent === ${JSON.stringify(siteUrl)}`,
    );
    await owner.waitForFunction(
      `(() => { const i = document.querySelector('[data-testid="browser-frame"]'); return !!i && i.complete && i.naturalWidth > 0 && i.src.startsWith("blob:"); })()`,
    );
    await clickPage(owner, 60, 30);
    await owner.keyboard.type("hi there");
    await waitValue("hi there");
    await owner.keyboard.press("Backspace");
    await waitValue("hi ther");
    assert.equal(await owner.getByTestId("browser-watching").count(), 0);
    await owner.screenshot({ path: path.join(shots, "browser-owner.png") });
  });

  test("a viewer watches only: its clicks and keys are dropped", async () => {
    const viewer = await person("viewer@example.com");
    await viewer.goto(`${t.url}/agents/${agent.id}/browser`);
    await viewer.getByTestId("browser-watching").getByText("watching only").waitFor();
    await viewer.waitForFunction(
      `document.querySelector('[data-testid="browser-url"]')?.textContent === ${JSON.stringify(siteUrl)}`,
    );
    await viewer.getByTestId("browser-frame").waitFor();
    await clickPage(viewer, 60, 30);
    await viewer.keyboard.type("xyz");
    await viewer
      .getByTestId("browser-note")
      .getByText(/your input is not sent/)
      .waitFor();
    assert.equal(await fieldValue(), "hi ther");
    await viewer.screenshot({ path: path.join(shots, "browser-viewer.png") });
  });
});
