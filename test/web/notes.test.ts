// The Notes and Tables pages in a real browser (Debian's chromium, driven by playwright-core)
// against a real `warren serve` (the built CLI, trusted-header mode): the tree of notes and
// memories, a note read, edited and saved, a new note made, a memory's revisions with a diff
// of an earlier one against the current text, and a collection's records as a table, one put
// from the page.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import type { Page } from "playwright-core";
import { OWNER, startWebApp, type WebApp } from "./fixture.js";

let app: WebApp;
let base = "";
const api = (method: string, url: string, body?: object | string) =>
  app.api(method, url, body, typeof body === "string" ? { type: "text/markdown" } : {});
const json = async (method: string, url: string, body?: object | string) => {
  const r = await api(method, url, body);
  assert.ok(r.status < 300, `${method} ${url}: ${r.status} ${r.text}`);
  return JSON.parse(r.text);
};

before(async () => {
  app = await startWebApp("notes");
  base = app.base;
});

after(async () => {
  await app?.stop();
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

    page = await app.person(OWNER, { size: { width: 1280, height: 800 } });
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
    // the new note's Markdown is drawn: its "# compost" is a heading
    await page.getByTestId("note-text").getByRole("heading", { name: "compost" }).waitFor();
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
    await app.shot(page, "notes-memory-diff");
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
    await app.shot(page, "tables");
  });
});
