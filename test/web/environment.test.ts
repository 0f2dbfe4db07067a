// A machine's proposals in a real browser (Debian's chromium, driven by playwright-core)
// against a real `warren serve`: the machine's page shows the pending proposals with their
// exact packages; the owner approves one (a revision is built and the page shows it) and
// refuses the other (nothing is built for it). No agent runs, so no box starts.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { waitFor } from "../conversations/support.js";
import { startWebApp, type WebApp } from "./fixture.js";

describe("environment proposals in the app", () => {
  let web: WebApp;
  let machine: { id: string };
  const api = (method: string, url: string, body?: object) => web.api(method, url, body);

  before(async () => {
    web = await startWebApp("environment");
    const org = (await api("POST", "/api/orgs", { name: "Grows" })).body;
    machine = (await api("POST", "/api/machines", { org_id: org.id, name: "m" })).body;
  });
  after(async () => {
    await web?.stop();
  });

  test("the owner approves one proposal and refuses another on the machine's page", async () => {
    const propose = async (pkg: string, why: string) => {
      const r = await api("POST", `/api/machines/${machine.id}/environment/proposals`, {
        packages: [pkg],
        why,
      });
      assert.equal(r.status, 201, JSON.stringify(r.body));
      return r.body as { id: string; packages: { name: string; version: string }[] };
    };
    const rg = await propose("ripgrep", "to search the code");
    const fd = await propose("fd-find", "to find files");
    const page = await web.person();
    await page.goto(`${web.base}/machines/${machine.id}`);
    const first = page.getByTestId(`proposal-${rg.id}`);
    await first.getByText(`ripgrep ${rg.packages[0]!.version}`).waitFor();
    await first.getByText("to search the code").waitFor();
    await web.shot(page, "environment-proposals");
    await first.getByRole("button", { name: "Approve" }).click();
    await first.getByText("approved").waitFor();
    const second = page.getByTestId(`proposal-${fd.id}`);
    await second.getByRole("button", { name: "Refuse" }).click();
    await second.getByText("refused").waitFor();
    assert.equal(
      await second.getByRole("button", { name: "Approve" }).count(),
      0,
      "a decided proposal has no buttons",
    );
    const built = await waitFor(
      "revision 1 to be built",
      async () => {
        const r = (await api("GET", `/api/machines/${machine.id}/environment/revisions/1`)).body;
        return r.status === "building" ? null : r;
      },
      300_000,
    );
    assert.equal(built.status, "ready", built.log);
    await page
      .getByTestId("environment-revision")
      .getByText(/revision 1 .*ripgrep/)
      .waitFor();
    await web.shot(page, "environment-approved");
    const revisions = (await api("GET", `/api/machines/${machine.id}/environment/revisions`)).body.items;
    assert.equal(revisions.length, 1, "the refused proposal built nothing");
    assert.deepEqual(
      revisions[0].packages.map((p: { name: string }) => p.name),
      ["ripgrep"],
    );
  });
});
