// A run that waits says why, in a real browser against a real `warren serve`: the server runs
// on the oci provider with its container engine down (a socket nothing listens on, the oci
// checks accepted as missing), so a run's box cannot start; the run's page shows the run queued
// with "Why?" open on its reason (the oci provider is down), and cancelling it there ends it
// without a box, the reason gone.
import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { waitFor } from "../conversations/support.js";
import { startWebApp, type WebApp } from "./fixture.js";

let app: WebApp;
let dir = "";

before(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), "warren-web-why-"));
  app = await startWebApp("why", {
    WARREN_PROVIDER: "oci",
    WARREN_OCI_SOCKET: path.join(dir, "nothing-listens.sock"),
    WARREN_OCI_IMAGE: "warren-box:latest",
    WARREN_ALLOW_DEGRADED: "oci_engine,oci_image,oci_runtime",
  });
});
after(async () => {
  await app?.stop();
  await rm(dir, { recursive: true, force: true });
});

describe("Why? on a waiting run", () => {
  test("a run whose box cannot start shows its reason, and is cancelled from its page", async () => {
    const org = (await app.api("POST", "/api/orgs", { name: "waiting" })).body.id;
    const machine = (await app.api("POST", "/api/machines", { org_id: org, name: "m" })).body.id;
    const agent = (await app.api("POST", "/api/agents", { org_id: org, machine_id: machine, name: "a" })).body
      .id;
    const r = await app.api("POST", `/api/agents/${agent}/runs`, {
      kind: "command",
      command: "echo never",
      timeout_s: 600,
    });
    assert.equal(r.status, 202, r.text);
    const waiting = await waitFor("the run to wait with a reason", async () => {
      const x = (await app.api("GET", `/api/runs/${r.body.id}`)).body;
      return x.status_reason ? x : null;
    });
    assert.equal(waiting.status, "queued");
    assert.match(waiting.status_reason, /the oci provider is down/);

    const page = await app.person();
    await page.goto(`${app.base}/agents/${agent}/runs/${r.body.id}`);
    const why = page.getByTestId("run-why");
    await why.waitFor();
    assert.equal(await why.locator("summary").textContent(), "Why?");
    assert.equal(await why.getAttribute("open"), "");
    const text = (await why.textContent()) ?? "";
    assert.match(text, /waiting for its machine's box to start: .*the oci provider is down/);
    assert.match((await page.getByTestId("run-status").textContent()) ?? "", /^queued: waiting for/);
    await app.shot(page, "run-why");

    await page.getByRole("button", { name: "Cancel run" }).click();
    await page
      .getByTestId("run-status")
      .filter({ hasText: /^cancelled/ })
      .waitFor();
    assert.equal(await why.count(), 0);
    const ended = await app.ended(r.body.id);
    assert.equal(ended.status, "cancelled");
    assert.equal(ended.started_at, null);
  });
});
