// The Notes and Tables pages in a real browser (Debian's chromium, driven by playwright-core)
// against a real `warren serve` (the built CLI, trusted-header mode): the tree of notes and
// memories, a note read, edited and saved, a new note made, a memory's revisions with a diff
// of an earlier one against the current text, and a collection's records as a table, one put
// from the page.
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { mkdir, mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { chromium, type BrowserContext, type Page } from "playwright-core";
import { builtCli, startServe, type Served } from "../support/serve.js";

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const shots = path.join(repo, "test-results", "web");
const CHROMIUM = "/usr/bin/chromium";
const OWNER = "owner@example.com";

let serve: Served | undefined;
let base = "";
let stateRoot = "";
let profile = "";
let ctx: BrowserContext | undefined;

async function api(
  method: string,
  url: string,
  body?: object | string,
): Promise<{ status: number; text: string }> {
  const r = await fetch(`${base}${url}`, {
    method,
    headers: {
      "x-forwarded-email": OWNER,
      ...(body === undefined
        ? {}
        : { "content-type": typeof body === "string" ? "text/markdown" : "application/json" }),
    },
    body: body === undefined ? undefined : typeof body === "string" ? body : JSON.stringify(body),
  });
  return { status: r.status, text: await r.text() };
}
const json = async (method: string, url: string, body?: object | string) => {
  const r = await api(method, url, body);
  assert.ok(r.status < 300, `${method} ${url}: ${r.status} ${r.text}`);
  return JSON.parse(r.text);
};

before(async () => {
  assert.ok(existsSync(builtCli), "run `npm run build` before the browser tests");
  assert.ok(existsSync(path.join(repo, "dist/web/index.html")), "the app is not built: run `npm run build`");
  assert.ok(existsSync(CHROMIUM), "chromium is missing: scripts/setup.sh installs it");
  await mkdir(shots, { recursive: true });
  stateRoot = await mkdtemp(path.join(os.tmpdir(), "warren-web-notes-"));
  serve = await startServe({ stateRoot });
  base = serve.base;
});

after(async () => {
  await ctx?.close().catch(() => {});
  await serve?.stop();
  for (const d of [profile, stateRoot]) if (d) await rm(d, { recursive: true, force: true, maxRetries: 3 });
});

describe("the Notes and Tables pages", { concurrency: false }, () => {
  let page: Page;
  let orgId = "";
  let agentId = "";

  test("set-up: an agent's memory in two revisions, notes and a collection", async () => {
    orgId = (await json("POST", "/api/orgs", { name: "Garden" })).id;
    const machine = await json("POST", "/api/machines", { org_id: orgId, name: "shed" });
    agentId = (await json("POST", "/api/agents", { org_id: orgId, machine_id: machine.id, name: "gardener" }))
      .id;
    const art = (p: string) => `/api/orgs/${orgId}/artifacts/${p}`;
    await json("PUT", art(`agents/${agentId}/memory.md`), "Water the roses.\nPrune in March.");
    await json(
      "PUT",
      art(`agents/${agentId}/memory.md`),
      "Water the roses.\nPrune in February.\nMulch in May.",
    );
    await json("PUT", art(`agents/${agentId}/notes/beds.md`), "# Beds\n\nfour beds");
    await json("PUT", art("handbook.md"), "# Handbook\n\nBe kind to bees.");
    await json("PUT", art("collections/plants/rose"), { name: "Rose", beds: 2 });
    await json("PUT", art("collections/plants/fern"), { name: "Fern", shade: true });

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
    page = ctx.pages()[0] ?? (await ctx.newPage());
    page.setDefaultTimeout(30_000);
  });

  test("the tree of notes and memories; a note read, edited and saved", async () => {
    await page.goto(`${base}/orgs/${orgId}`);
    await page.getByRole("link", { name: "Notes" }).click();
    await page.waitForURL(`${base}/orgs/${orgId}/notes`);
    const tree = page.getByTestId("notes-tree");
    await tree.getByRole("button", { name: "handbook.md" }).waitFor();
    assert.match(
      await tree.innerText(),
      new RegExp(`agents/\\s*${agentId}/\\s*memory.md\\s*notes/\\s*beds.md`),
    );
    await tree.getByRole("button", { name: "beds.md" }).click();
    await page.getByTestId("note-text").getByText("four beds").waitFor();
    await page.getByRole("button", { name: "Edit" }).click();
    await page.locator('textarea[name="content"]').fill("# Beds\n\nfive beds now");
    await page.getByRole("button", { name: "Save" }).click();
    await page.getByTestId("note-text").getByText("five beds now").waitFor();
    assert.equal(
      (await api("GET", `/api/orgs/${orgId}/artifacts/agents/${agentId}/notes/beds.md`)).text,
      "# Beds\n\nfive beds now",
    );
    const revs = await json("GET", `/api/orgs/${orgId}/artifacts/agents/${agentId}/notes/beds.md?revisions`);
    assert.deepEqual(
      revs.items.map((i: any) => [i.revision, i.by]),
      [[2, OWNER]],
    );

    // a new note from the form
    await page.locator('input[name="path"]').fill("guides/x.md");
    await page.getByRole("button", { name: "Create" }).click();
    await page
      .getByRole("alert")
      .getByText(/artifact paths are/)
      .waitFor();
    await page.locator('input[name="path"]').fill("compost.md");
    await page.getByRole("button", { name: "Create" }).click();
    await page.waitForURL(/path=compost\.md$/);
    await page.getByTestId("note-text").getByText("# compost").waitFor();
    await page.getByTestId("notes-tree").getByRole("button", { name: "compost.md" }).waitFor();
  });

  test("a memory's revisions, and an earlier one diffed against the current text", async () => {
    await page.getByTestId("notes-tree").getByRole("button", { name: "memory.md" }).click();
    await page.getByTestId("note-text").getByText("Mulch in May.").waitFor();
    const revisions = page.getByTestId("revisions");
    await revisions.getByRole("button", { name: "revision 1" }).waitFor();
    assert.match(
      await revisions.innerText(),
      /revision 2\s+by owner@example.com[\s\S]*revision 1\s+by owner@example.com/,
    );
    await revisions.getByRole("button", { name: "revision 1" }).click();
    const diff = page.getByTestId("diff");
    await diff.locator(".d-add").first().waitFor();
    assert.deepEqual(await diff.locator(".d-del").allInnerTexts(), ["- Prune in March."]);
    assert.deepEqual(await diff.locator(".d-add").allInnerTexts(), [
      "+ Prune in February.",
      "+ Mulch in May.",
    ]);
    assert.deepEqual(await diff.locator(".d-same").allInnerTexts(), ["  Water the roses."]);
    await page.screenshot({ path: path.join(shots, "notes-memory-diff.png"), fullPage: true });
  });

  test("the Tables page: a collection's records as a table, one put from the page", async () => {
    await page.getByRole("link", { name: "Tables" }).click();
    await page.waitForURL(`${base}/orgs/${orgId}/tables`);
    await page.getByRole("button", { name: "plants" }).click();
    const table = page.getByTestId("records");
    await table.getByText("Fern", { exact: true }).waitFor();
    assert.deepEqual(await table.locator("th").allInnerTexts(), ["id", "name", "shade", "beds"]);
    assert.deepEqual(await table.locator("tbody tr").first().locator("td").allInnerTexts(), [
      "fern",
      "Fern",
      "true",
      "",
    ]);
    await page.locator('input[name="id"]').fill("tulip");
    await page.locator('input[name="json"]').fill('{"name": "Tulip", "beds": 1}');
    await page.getByRole("button", { name: "Put record" }).click();
    await table.getByText("Tulip", { exact: true }).waitFor();
    assert.equal(
      (await api("GET", `/api/orgs/${orgId}/artifacts/collections/plants/tulip`)).text,
      '{"name":"Tulip","beds":1}',
    );
    await page.locator('input[name="id"]').fill("weed");
    await page.locator('input[name="json"]').fill("{not json");
    await page.getByRole("button", { name: "Put record" }).click();
    await page
      .getByRole("alert")
      .getByText(/is JSON, and this is not/)
      .waitFor();
    await page.screenshot({ path: path.join(shots, "tables.png"), fullPage: true });
  });
});
