// Areas and a conversation's Changes in the operator app, in a real browser (Debian's chromium,
// driven by playwright-core) against a real `warren serve` (the built CLI, trusted-header mode,
// real boxes): an area defined and edited on the organisation page, its revisions, a member
// given it in the member form; then a conversation on a repository, its Changes (files and the
// patch) and Land.
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { mkdir, mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { chromium, type BrowserContext, type Page } from "playwright-core";
import { waitFor } from "../conversations/support.js";
import { builtCli, startServe, type Served } from "../support/serve.js";

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const shots = path.join(repo, "test-results", "web");
const CHROMIUM = "/usr/bin/chromium";
const OWNER = "owner@example.com";
const MEMBER = "support@example.com";

let serve: Served | undefined;
let base = "";
let stateRoot = "";
let profile = "";
let ctx: BrowserContext | undefined;

async function api(method: string, url: string, body?: object): Promise<any> {
  const r = await fetch(`${base}${url}`, {
    method,
    headers: { "x-forwarded-email": OWNER, ...(body ? { "content-type": "application/json" } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  const text = await r.text();
  return { status: r.status, body: text ? JSON.parse(text) : undefined };
}

before(async () => {
  assert.ok(existsSync(builtCli), "run `npm run build` before the browser tests");
  assert.ok(existsSync(path.join(repo, "dist/web/index.html")), "the app is not built: run `npm run build`");
  assert.ok(existsSync(CHROMIUM), "chromium is missing: scripts/setup.sh installs it");
  await mkdir(shots, { recursive: true });
  stateRoot = await mkdtemp(path.join(os.tmpdir(), "warren-web-areas-"));
  serve = await startServe({ stateRoot });
  base = serve.base;
});

after(async () => {
  await ctx?.close().catch(() => {});
  if (base) {
    const ms = await api("GET", "/api/machines").catch(() => undefined);
    for (const m of ms?.body?.items ?? []) await api("POST", `/api/machines/${m.id}/stop`).catch(() => {});
  }
  await serve?.stop();
  for (const d of [profile, stateRoot]) if (d) await rm(d, { recursive: true, force: true, maxRetries: 3 });
});

describe("areas and changes in the app", { concurrency: false }, () => {
  let page: Page;
  let org = "";
  let agent = "";
  const sh = async (command: string) => {
    const r = await api("POST", `/api/agents/${agent}/exec`, { command });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.equal(r.body.exit_code, 0, r.body.stderr);
    return r.body.stdout as string;
  };

  test("set-up: an assistant on the scripted model with a repository in its home", async () => {
    org = (await api("POST", "/api/orgs", { name: "Acme" })).body.id;
    const machine = await api("POST", "/api/machines", { org_id: org, name: "m" });
    const a = await api("POST", "/api/agents", {
      org_id: org,
      machine_id: machine.body.id,
      name: "coder",
      kind: "assistant",
      model: { provider: "script", name: "turns.json" },
      tools: [{ type: "builtin", name: "run_command" }],
      tool_policy: `@id("all") permit(principal, action, resource);`,
    });
    assert.equal(a.status, 201, JSON.stringify(a.body));
    agent = a.body.id;
    const script = [
      { tool_calls: [{ name: "run_command", input: { command: "echo tea-at-five > notes.txt" } }] },
      { text: "noted" },
    ];
    await sh(`printf '%s' '${JSON.stringify(script)}' > ~/turns.json`);
    await sh(
      "mkdir -p ~/support/app && cd ~/support/app && git init -q -b main && echo hi > README.md && git add -A && git -c user.name=o -c user.email=o@x commit -qm init",
    );
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
      viewport: { width: 1280, height: 900 },
      extraHTTPHeaders: { "x-forwarded-email": OWNER },
    });
    page = ctx.pages()[0] ?? (await ctx.newPage());
    page.setDefaultTimeout(30_000);
  });

  test("an area is defined and edited on the organisation page, with its revisions; a member is given it", async () => {
    await page.goto(`${base}/orgs/${org}`);
    await page.getByText("No areas yet").waitFor();
    await page.locator('input[name="area_name"]').fill("support");
    await page.locator('input[name="area_folders"]').fill("support");
    await page.getByRole("button", { name: "Save area" }).click();
    const row = page.getByTestId("area-support");
    await row.getByText("support/").waitFor();
    await page.locator('input[name="member_email"]').fill(MEMBER);
    await page.locator('select[name="member_role"]').selectOption("editor");
    await page.locator('input[name="member_areas"]').fill("support");
    await page.getByRole("button", { name: "Add or change member" }).click();
    await page.getByTestId(`areas of ${MEMBER}`).getByText("support").waitFor();
    await row.getByText(MEMBER).waitFor();
    // edited: a second revision
    await page.locator('input[name="area_name"]').fill("support");
    await page.locator('input[name="area_folders"]').fill("support, docs");
    await page.getByRole("button", { name: "Save area" }).click();
    await row.getByText("docs/").waitFor();
    await row.getByRole("button", { name: "2 (history)" }).click();
    const revisions = page.getByTestId("area-revisions");
    await revisions.getByText(/^2: docs, support · owner@example\.com/).waitFor();
    assert.match(await revisions.innerText(), /1: support · owner@example\.com/);
    await page.screenshot({ path: path.join(shots, "org-areas.png"), fullPage: true });
    const m = (await api("GET", `/api/orgs/${org}/members`)).body.items.find((x: any) => x.email === MEMBER);
    assert.deepEqual([m.role, m.areas], ["editor", ["support"]]);
  });

  test("a conversation's Changes show its files and patch; Land merges it into its base", async () => {
    const c = await api("POST", `/api/agents/${agent}/conversations`, {
      title: "notes",
      repo: "support/app",
    });
    assert.equal(c.status, 201, JSON.stringify(c.body));
    const m = await api("POST", `/api/conversations/${c.body.id}/messages`, { text: "Write the notes" });
    await waitFor("the turn", async () => {
      const r = (await api("GET", `/api/runs/${m.body.run_id}`)).body;
      return ["running", "queued"].includes(r.status) ? null : r;
    });
    await page.goto(`${base}/agents/${agent}/conversations/${c.body.id}`);
    const changes = page.getByTestId("changes");
    await changes.getByText(`warren/${c.body.id}`).waitFor();
    await changes.getByText("1 ahead, 0 behind").waitFor();
    await page.getByTestId("changed-files").getByText("notes.txt").waitFor();
    assert.match(await page.getByTestId("patch").innerText(), /^\+tea-at-five$/m);
    await page.screenshot({ path: path.join(shots, "conversation-changes.png"), fullPage: true });
    await changes.getByRole("button", { name: "Land into main" }).click();
    await page.getByTestId("landed").waitFor();
    assert.equal(await sh("git -C ~/support/app show main:notes.txt"), "tea-at-five\n");
  });
});
