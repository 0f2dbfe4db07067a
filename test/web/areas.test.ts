// Areas and a conversation's Changes in the operator app, in a real browser (Debian's chromium,
// driven by playwright-core) against a real `warren serve` (the built CLI, trusted-header mode,
// real boxes): an area defined and edited on the organisation page, its revisions, a member
// given it in the member form; then a conversation on a repository (started from the form),
// its Changes (files and the patch) and Land.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { waitFor } from "../conversations/support.js";
import type { Page } from "playwright-core";
import { OWNER, startWebApp, type WebApp } from "./fixture.js";

const MEMBER = "support@example.com";
let app: WebApp;
let base = "";
const api = (method: string, url: string, body?: object) => app.api(method, url, body);

before(async () => {
  app = await startWebApp("areas");
  base = app.base;
});

after(async () => {
  await app?.stop();
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
    page = await app.person(OWNER, { size: { width: 1280, height: 900 } });
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
    await page.locator('select[name="member_role"]').selectOption("writer");
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
    await app.shot(page, "org-areas");
    const m = (await api("GET", `/api/orgs/${org}/members`)).body.items.find((x: any) => x.email === MEMBER);
    assert.deepEqual([m.role, m.areas], ["writer", ["support"]]);
  });

  test("the writer's pages offer only what its seat allows: files and conversations, no machine or agent to create", async () => {
    const theirs = await app.person(MEMBER);
    await theirs.goto(`${base}/orgs/${org}`);
    await theirs.getByRole("heading", { name: "Machines" }).waitFor();
    assert.equal(await theirs.locator('input[name="machine_name"]').count(), 0, "no machine to create");
    await theirs.goto(`${base}/agents/${agent}/conversations`);
    await theirs.getByRole("button", { name: "Start conversation" }).waitFor();
    await theirs.goto(`${base}/agents/${agent}/files`);
    await theirs.getByText("Upload a file here").waitFor();
    await app.shot(theirs, "fenced-editor-files");
  });

  test("a conversation started on a repository from the form: its Changes show its files and patch; Land merges it into its base", async () => {
    await page.goto(`${base}/agents/${agent}/conversations`);
    const form = page.getByRole("form", { name: "start a conversation" });
    await form.getByLabel("Title").fill("notes");
    await form.getByLabel("Repository").fill("support/app");
    await form.getByRole("button", { name: "Start conversation" }).click();
    await page.waitForURL(/\/conversations\/cnv_[0-9a-z]+$/);
    const id = /\/conversations\/(cnv_[0-9a-z]+)$/.exec(page.url())![1]!;
    const c = await api("GET", `/api/conversations/${id}`);
    assert.equal(c.status, 200, JSON.stringify(c.body));
    assert.equal(c.body.repo, "support/app");
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
    await app.shot(page, "conversation-changes");
    await changes.getByRole("button", { name: "Land into main" }).click();
    await page.getByTestId("landed").waitFor();
    assert.equal(await sh("git -C ~/support/app show main:notes.txt"), "tea-at-five\n");
  });
});
