// The operator app in a real browser (Debian's chromium, driven by playwright-core) against a
// real `warren serve` (the built CLI, trusted-header mode so the test can be several people)
// with real boxes: a new user's first session, then a viewer's and an auditor's reduced pages.
// Screenshots of each page go to test-results/.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import type { Page } from "playwright-core";
import { OWNER, startWebApp, type WebApp } from "./fixture.js";

const VIEWER = "viewer@example.com";
const AUDITOR = "auditor@example.com";
const SECRET_VALUE = "s3cr3t-app-value-7731";

let app: WebApp;
let base = "";

/** One person's browser, counting layout shifts not caused by input (cumulative layout shift) per page load. */
async function personAt(email: string, size = { width: 1280, height: 800 }): Promise<Page> {
  const page = await app.person(email, { size, downloads: true });
  // (This runs in the page: its globals are the browser's.)
  await page.addInitScript(() => {
    const w = globalThis as any;
    w.__cls = 0;
    new w.PerformanceObserver((list: any) => {
      for (const e of list.getEntries()) if (!e.hadRecentInput) w.__cls += e.value;
    }).observe({ type: "layout-shift", buffered: true });
  });
  return page;
}

const shot = (page: Page, name: string) => app.shot(page, name);

/** The API as one person, for set-up and checks the page does not show. */
const api = (email: string, method: string, url: string, body?: object) =>
  app.api(method, url, body, { as: email });

before(async () => {
  app = await startWebApp("state", { BOX_ORPHAN_S: "20" });
  base = app.base;
});

after(async () => {
  await app?.stop();
});

describe("the operator app", { concurrency: false }, () => {
  let owner: Page;
  let orgId = "";
  let agentId = "";
  let runId = "";

  test("the app is served at / with history fallback; /api stays the API", async () => {
    for (const p of [
      "/",
      "/secrets",
      "/machines/mch_0000000000000000",
      "/agents/agt_0000000000000000/runs/run_0000000000000000",
      "/agents/agt_0000000000000000/terminal",
    ]) {
      const r = await fetch(`${base}${p}`);
      assert.equal(r.status, 200, p);
      assert.match(r.headers.get("content-type") ?? "", /text\/html/, p);
      assert.match(await r.text(), /<div id="root">/, p);
    }
    const r = await fetch(`${base}/api/nothing/here`, { headers: { "x-forwarded-email": OWNER } });
    assert.equal(r.status, 404);
    assert.match(r.headers.get("content-type") ?? "", /application\/json/);
    assert.equal(((await r.json()) as any).error.code, "not_found");
    const missing = await fetch(`${base}/assets/nope-123.js`);
    assert.equal(missing.status, 404);
  });

  test("a new user creates an organisation with the keyboard alone", async () => {
    owner = await personAt(OWNER);
    await owner.goto(`${base}/`);
    await owner.getByText("You are not a member of any organisation yet").waitFor();
    await shot(owner, "01-orgs-empty");
    // Tab from the top reaches the name field; Enter submits.
    let reached = false;
    for (let i = 0; i < 12 && !reached; i++) {
      await owner.keyboard.press("Tab");
      reached = await owner.evaluate(() => (globalThis as any).document.activeElement?.name === "org_name");
    }
    assert.ok(reached, "the organisation's name field is not reachable with Tab");
    await owner.keyboard.type("Acme");
    await owner.keyboard.press("Enter");
    await owner.waitForURL(/\/orgs\/org_/);
    orgId = owner.url().split("/orgs/")[1] ?? "";
    await owner.getByRole("heading", { name: /Acme/ }).waitFor();
    await owner.getByText("No machines yet").waitFor();
    await shot(owner, "02-org-empty");
  });

  test("machines, and the create dialog's Max disk over the reserved-disk bar", async () => {
    const form = owner.locator("form", { has: owner.locator('input[name="machine_name"]') });
    const newMachine = async (name: string, cap: number) => {
      await form.locator('input[name="machine_name"]').fill(name);
      await form.locator('input[name="machine_disk"]').fill(String(cap));
      await form.getByRole("button", { name: "Create machine" }).click();
      await owner.getByRole("link", { name, exact: true }).waitFor();
    };
    await newMachine("small", 15360);
    await newMachine("big", 51200);

    const open = async () => {
      await owner.getByRole("button", { name: "New agent" }).click();
      return owner.getByRole("dialog", { name: "New agent" });
    };
    const bar = (d: ReturnType<Page["getByRole"]>, id: string) => d.getByTestId(id).innerText();

    // First agent on "small" (15360 MiB, nothing reserved): the room is larger than 10240.
    let d = await open();
    await d.locator('select[name="machine"]').selectOption({ label: "small (15,360 MiB unreserved)" });
    assert.equal(await d.locator('input[name="max_workspace_mib"]').inputValue(), "10240");
    assert.equal(await bar(d, "others-mib"), "0 MiB");
    assert.equal(await bar(d, "room-mib"), "15,360 MiB");
    assert.match(await bar(d, "free"), /measured after a generation/);
    await d.locator('input[name="agent_name"]').fill("builder");
    await shot(owner, "03-create-agent");
    await d.getByRole("button", { name: "Create agent" }).click();
    await owner.waitForURL(/\/agents\/agt_[0-9a-z]{16}$/);
    agentId = owner.url().split("/agents/")[1] ?? "";
    await owner.goto(`${base}/orgs/${orgId}`);

    // Second agent: on "small" 5120 MiB are left (smaller than 10240, at least 1 GiB): it starts there.
    d = await open();
    const input = d.locator('input[name="max_workspace_mib"]');
    await d.locator('select[name="machine"]').selectOption({ label: "small (5,120 MiB unreserved)" });
    assert.equal(await input.inputValue(), "5120");
    assert.equal(await bar(d, "others-mib"), "10,240 MiB");
    assert.equal(await bar(d, "total-mib"), "15,360 MiB");
    assert.equal(await bar(d, "share"), "33%");
    assert.equal(await d.getByTestId("disk-warning").count(), 0);
    // It follows the chosen machine ...
    await d.locator('select[name="machine"]').selectOption({ label: "big (51,200 MiB unreserved)" });
    assert.equal(await input.inputValue(), "10240");
    await d.locator('select[name="machine"]').selectOption({ label: "small (5,120 MiB unreserved)" });
    assert.equal(await input.inputValue(), "5120");
    // ... until a value is typed; past the room it warns and still saves.
    await input.fill("8000");
    await d.locator('select[name="machine"]').selectOption({ label: "big (51,200 MiB unreserved)" });
    assert.equal(await input.inputValue(), "8000");
    await d.locator('select[name="machine"]').selectOption({ label: "small (5,120 MiB unreserved)" });
    assert.equal(await bar(d, "total-mib"), "18,240 MiB");
    assert.equal(await bar(d, "mine-mib"), "8,000 MiB");
    assert.equal(await bar(d, "share"), "44%");
    assert.match(
      await d.getByTestId("disk-warning").innerText(),
      /Lower Max disk to 5,120 MiB or pick another machine/,
    );
    await d.locator('input[name="agent_name"]').fill("helper");
    await shot(owner, "04-create-agent-past-room");
    await d.getByRole("button", { name: "Create agent" }).click();
    // The API's own warning is shown; the agent exists.
    await d.getByText(/the machine's disk may fill before this agent reaches its 8000 MiB cap/).waitFor();
    await d.getByRole("button", { name: "Open the agent" }).click();
    await owner.waitForURL(/\/agents\/agt_/);
    const agents = await api(OWNER, "GET", `/api/agents?org_id=${orgId}`);
    assert.deepEqual(
      agents.body.items.map((a: any) => [a.name, a.max_workspace_mib]),
      [
        ["builder", 10240],
        ["helper", 8000],
      ],
    );
    const small = (await api(OWNER, "GET", `/api/machines?org_id=${orgId}`)).body.items.find(
      (m: any) => m.name === "small",
    );
    assert.equal(small.reserved_mib, 18240);
    assert.equal(small.unreserved_mib, 0);
  });

  test("a secret is created from a value typed once, and never shown", async () => {
    await owner.goto(`${base}/secrets?org=${orgId}`);
    await owner.getByText("No secrets yet").waitFor();
    await owner.locator('input[name="secret_name"]').fill("APP_TOKEN");
    await owner.locator('input[name="secret_description"]').fill("the app's token");
    await owner.locator('input[name="secret_value"]').fill(SECRET_VALUE);
    await owner.getByRole("button", { name: "Create secret" }).click();
    await owner.getByTestId("secrets").getByText("APP_TOKEN").waitFor();
    assert.equal(
      await owner.locator('input[name="secret_value"]').inputValue(),
      "",
      "the value stays in the form",
    );
    assert.ok(!(await owner.content()).includes(SECRET_VALUE), "the value is on the page");
    // grants: one more, then taken back
    const row = owner.getByTestId("secrets").getByRole("row", { name: /APP_TOKEN/ });
    await row.getByRole("combobox", { name: "grant APP_TOKEN to" }).selectOption({ label: "agent helper" });
    await row.getByText("agent helper").waitFor();
    await shot(owner, "05-secrets");
    const revoke = row.getByRole("button", { name: "revoke APP_TOKEN from agent helper" });
    await revoke.click();
    await revoke.waitFor({ state: "detached" });
    const listed = await api(OWNER, "GET", `/api/secrets?org_id=${orgId}`);
    assert.deepEqual(listed.body.items[0].grants, [{ scope: "org", id: orgId }]);
    assert.equal(listed.body.items[0].use, "env", "the form's default use");
    assert.ok(!JSON.stringify(listed.body).includes(SECRET_VALUE));
  });

  test("the agent page asks for everything at once, without layout shift", async () => {
    // Only what this page load asks for: counting starts with the navigation itself.
    const started: string[] = [];
    const finishedBefore: string[] = [];
    const mine = new Set<unknown>();
    let counting = false;
    let firstDone = false;
    owner.on("request", (r) => {
      if (r.isNavigationRequest()) counting = true;
      if (!counting || !r.url().includes("/api/")) return;
      mine.add(r);
      started.push(new URL(r.url()).pathname);
      if (firstDone) finishedBefore.push(new URL(r.url()).pathname);
    });
    owner.on("requestfinished", (r) => {
      if (mine.has(r)) firstDone = true;
    });
    await owner.goto(`${base}/agents/${agentId}`);
    await owner.getByTestId("ports").waitFor();
    await owner.waitForLoadState("networkidle");
    owner.removeAllListeners("request");
    owner.removeAllListeners("requestfinished");
    for (const p of [
      `/api/agents/${agentId}`,
      `/api/agents/${agentId}/usage`,
      `/api/agents/${agentId}/runs`,
      "/api/orgs",
    ])
      assert.ok(started.includes(p), `${p} was not asked for: ${started.join(", ")}`);
    assert.deepEqual(finishedBefore, [], "a request waited for another's answer (a waterfall)");
    const cls = await owner.evaluate(() => (globalThis as any).__cls as number);
    assert.ok(cls < 0.1, `cumulative layout shift ${cls}`);
    assert.match(await owner.getByTestId("ports").innerText(), /^20000–20099/);
    // the preview link goes through the API's 307 (a token, then the port's own origin)
    assert.equal(
      await owner.getByTestId("preview").getAttribute("href"),
      `/api/agents/${agentId}/ports/20000/`,
    );
    await shot(owner, "06-agent-overview");
  });

  test("a run: started, watched to its end without reload, its output redacted, its trace and receipt", async () => {
    await owner.getByRole("link", { name: "Runs", exact: true }).click();
    await owner.getByText("No runs yet").waitFor();
    await owner
      .locator('input[name="run_command"]')
      .fill(
        `echo start; mkdir -p work && echo inner > work/a.txt; sleep 2; echo "tok=$APP_TOKEN"; echo done`,
      );
    await owner.getByRole("button", { name: "Start run" }).click();
    await owner.waitForURL(/\/runs\/run_/);
    runId = owner.url().split("/runs/")[1] ?? "";
    const status = owner.getByTestId("run-status");
    const seen = new Set<string>();
    const deadline = Date.now() + 120_000;
    for (;;) {
      const s = (await status.innerText().catch(() => "")).split(/[ :·]/)[0] ?? "";
      if (s) seen.add(s);
      if (s === "succeeded") break;
      assert.ok(!["failed", "timed_out", "cancelled", "lost"].includes(s), `the run ended ${s}`);
      assert.ok(Date.now() < deadline, `the run never ended: ${[...seen].join(", ")}`);
      await owner.waitForTimeout(150);
    }
    assert.ok(
      seen.has("running") || seen.has("queued"),
      `the page never showed the run going on: ${[...seen]}`,
    );
    const output = await owner.getByTestId("run-output").innerText();
    assert.match(output, /start/);
    assert.match(output, /tok=\[redacted\]/);
    assert.match(output, /done/);
    assert.ok(!output.includes(SECRET_VALUE), "the secret's value is in the output");
    const trace = owner.getByTestId("trace");
    await trace.getByText("exit", { exact: true }).waitFor();
    const types = await trace.locator("li b").allInnerTexts();
    assert.equal(types[0], "started");
    assert.ok(types.includes("output") && types.includes("exit"), types.join(","));
    assert.ok(!(await trace.innerText()).includes(SECRET_VALUE));
    await owner.getByTestId("receipt").getByText("Server version").waitFor();
    await shot(owner, "07-run");
    await owner.getByRole("link", { name: "runs", exact: true }).click();
    await owner.getByTestId("runs").getByText("succeeded").waitFor();
    await shot(owner, "08-runs");
  });

  test("files: browse, view, upload within the home rules", async () => {
    await owner.goto(`${base}/agents/${agentId}/files`);
    const files = owner.getByTestId("files");
    await files.getByRole("button", { name: "work/" }).click();
    await owner.waitForURL(/files\?path=work/);
    await files.getByRole("button", { name: "a.txt" }).click();
    assert.equal((await owner.getByTestId("file-view").locator("pre").innerText()).trim(), "inner");
    await owner.locator('input[name="upload"]').setInputFiles({
      name: "notes.txt",
      mimeType: "text/plain",
      buffer: Buffer.from("uploaded from the app\n"),
    });
    await owner.getByText("Uploaded notes.txt.").waitFor();
    await files.getByRole("button", { name: "notes.txt" }).click();
    await owner.getByTestId("file-view").getByText("uploaded from the app").waitFor();
    await shot(owner, "09-files");
    const back = await fetch(`${base}/api/agents/${agentId}/files/work/notes.txt`, {
      headers: { "x-forwarded-email": OWNER },
    });
    assert.equal(await back.text(), "uploaded from the app\n");
    // a link in the home is listed as a link, never followed
    await api(OWNER, "POST", `/api/agents/${agentId}/exec`, { command: "ln -s /etc work/out" });
    await owner.reload();
    await files.getByText("(link)").waitFor();
    const listed = await api(OWNER, "GET", `/api/agents/${agentId}/folder?path=work/out`);
    assert.equal(listed.body.error.code, "file.link");
  });

  test("the terminal: started from its tab, typed in, answering", async () => {
    const probe = await api(OWNER, "POST", `/api/agents/${agentId}/cli`);
    assert.equal(probe.status, 200, JSON.stringify(probe.body));
    assert.deepEqual(probe.body, { status: "ready" });
    await owner.goto(`${base}/agents/${agentId}/terminal`);
    await owner.getByRole("button", { name: "Start the terminal" }).click();
    await owner
      .getByTestId("terminal-state")
      .getByText("connected", { exact: true })
      .waitFor({ timeout: 60_000 });
    await owner.locator(".xterm").click();
    // the shell's prompt first: nothing is typed ahead of the shell
    await owner.waitForFunction(
      () => {
        const b = (globalThis as any).warrenTerminal?.term.buffer.active;
        const line = b?.getLine(b.baseY + b.cursorY);
        return b?.type === "normal" && line && /\$ $/.test(line.translateToString(false, 0, b.cursorX));
      },
      undefined,
      { timeout: 60_000, polling: 100 },
    );
    await owner.keyboard.type("echo hi-$((6*7)) in $PWD\n");
    await owner.locator(".xterm-rows").getByText(`hi-42 in /home/${agentId}`).waitFor({ timeout: 20_000 });
    await shot(owner, "10-terminal");
  });

  test("usage and settings: Max disk keeps the saved cap, the others' caps apart", async () => {
    await owner.goto(`${base}/agents/${agentId}/usage`);
    await owner.getByRole("meter", { name: "This agent's home" }).waitFor();
    await shot(owner, "10-usage");
    await owner.goto(`${base}/agents/${agentId}/settings`);
    const input = owner.locator('input[name="max_workspace_mib"]');
    await owner.getByTestId("others-mib").waitFor();
    assert.equal(await input.inputValue(), "10240");
    assert.equal(await owner.getByTestId("others-mib").innerText(), "8,000 MiB");
    assert.equal(await owner.getByTestId("room-mib").innerText(), "7,360 MiB");
    assert.match(await owner.getByTestId("free").innerText(), /Disk free as last measured: [\d,]+ MiB/);
    await owner.locator('textarea[name="policy_allow"]').fill("*");
    await owner.getByRole("button", { name: "Save settings" }).click();
    const err = owner.getByRole("alert");
    await err.waitFor();
    assert.match(await err.innerText(), /request\.invalid/);
    await owner.locator('textarea[name="policy_allow"]').fill("example.com:443");
    await input.fill("7000");
    await owner.getByRole("button", { name: "Save settings" }).click();
    await owner.getByText("Saved.").waitFor();
    assert.deepEqual((await api(OWNER, "GET", `/api/agents/${agentId}`)).body.sandbox_policy.network.allow, [
      "example.com:443",
    ]);
    await shot(owner, "11-settings");
  });

  test("egress: a refused request is listed on the agent's Egress tab", async () => {
    const r = await api(OWNER, "POST", `/api/agents/${agentId}/exec`, {
      command: "curl -sS -m 10 http://refused.test/secret-path; echo",
    });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    await owner.goto(`${base}/agents/${agentId}/egress`);
    const row = owner.getByTestId("egress").getByRole("row", { name: /refused\.test/ });
    await row.waitFor();
    assert.match(await row.innerText(), /refused/);
    await owner.locator('select[name="egress_decision"]').selectOption("allowed");
    await owner.getByText("Nothing went out yet").waitFor();
    await owner.locator('select[name="egress_decision"]').selectOption("refused");
    await row.waitFor();
    await shot(owner, "12-egress");
  });

  test("the machine page: live box usage, pause, and stop", async () => {
    const agent = (await api(OWNER, "GET", `/api/agents/${agentId}`)).body;
    await api(OWNER, "POST", `/api/agents/${agentId}/exec`, { command: "true" });
    await owner.goto(`${base}/machines/${agent.machine_id}`);
    await owner.getByTestId("box-usage").getByText("Processes").waitFor();
    await owner.getByTestId("machine-state").getByText("running", { exact: true }).waitFor();
    await shot(owner, "12-machine-running-box");
    // the terminal's shell goes on in this box: a pause is refused, and the page says why
    await owner.getByRole("button", { name: "Pause the box" }).click();
    await owner.getByText(/1 terminal\(s\) going on: it is not paused/).waitFor();
    assert.equal((await api(OWNER, "GET", `/api/machines/${agent.machine_id}`)).body.state, "running");
    await owner.getByRole("button", { name: "Stop the box" }).click();
    await owner.getByTestId("box-usage").getByText("The box is not running").waitFor();
    assert.equal((await api(OWNER, "GET", `/api/machines/${agent.machine_id}`)).body.state, "stopped");
    // started again from elsewhere: the page follows without reload
    await api(OWNER, "POST", `/api/agents/${agentId}/exec`, { command: "true" });
    await owner.getByTestId("box-usage").getByText("Processes").waitFor({ timeout: 15_000 });
    await api(OWNER, "POST", `/api/machines/${agent.machine_id}/stop`);

    // a machine with nothing going on: paused from its page, its state shown, its files kept
    const m = (
      await api(OWNER, "POST", "/api/machines", { org_id: orgId, name: "pausable", memory_mib: 512 })
    ).body;
    const a = (await api(OWNER, "POST", "/api/agents", { org_id: orgId, machine_id: m.id, name: "sleeper" }))
      .body;
    const wrote = await api(OWNER, "POST", `/api/agents/${a.id}/exec`, {
      command: "echo kept > /tmp/paused-file",
    });
    assert.equal(wrote.status, 200, JSON.stringify(wrote.body));
    await owner.goto(`${base}/machines/${m.id}`);
    await owner.getByTestId("machine-state").getByText("running", { exact: true }).waitFor();
    await owner.getByRole("button", { name: "Pause the box" }).click();
    await owner.getByTestId("machine-state").getByText("paused", { exact: true }).waitFor();
    await owner.getByTestId("box-usage").getByText("The box is paused").waitFor();
    assert.equal(await owner.locator("h1 .badge").innerText(), "paused");
    assert.equal(await owner.getByRole("button", { name: "Pause the box" }).isDisabled(), true);
    assert.equal((await api(OWNER, "GET", `/api/machines/${m.id}`)).body.state, "paused");
    await shot(owner, "12-machine-paused-box");
    // the next command resumes it as it was; the page follows
    const resumed = await api(OWNER, "POST", `/api/agents/${a.id}/exec`, { command: "cat /tmp/paused-file" });
    assert.equal(resumed.body.stdout, "kept\n");
    await owner
      .getByTestId("machine-state")
      .getByText("running", { exact: true })
      .waitFor({ timeout: 15_000 });
    await owner.getByTestId("box-usage").getByText("Processes").waitFor({ timeout: 15_000 });
    await api(OWNER, "POST", `/api/machines/${m.id}/stop`);
  });

  test("an assistant agent: its spec edited in Settings, an agent run's trace with model and tool calls", async () => {
    const helper = (await api(OWNER, "GET", `/api/agents?org_id=${orgId}`)).body.items.find(
      (a: any) => a.name === "helper",
    );
    // the scripted model's turns, a file of the agent's home: list the home, then answer
    const turns = {
      turns: [{ tool_calls: [{ name: "list_files", input: {} }] }, { text: "I looked around: all is well." }],
    };
    const put = await fetch(`${base}/api/agents/${helper.id}/files/turns.json`, {
      method: "PUT",
      headers: { "x-forwarded-email": OWNER, "content-type": "application/octet-stream" },
      body: JSON.stringify(turns),
    });
    assert.equal(put.status, 204);
    await owner.goto(`${base}/agents/${helper.id}/settings`);
    await owner.locator('select[name="spec_kind"]').selectOption("assistant");
    await owner.locator('textarea[name="spec_model"]').fill('{"provider": "script", "name": "turns.json"}');
    await owner.locator('textarea[name="spec_instructions"]').fill("Look around, then say so.");
    await owner.locator('textarea[name="spec_tools"]').fill('[{"type": "builtin", "name": "list_files"}]');
    await owner
      .locator('textarea[name="spec_tool_policy"]')
      .fill('@id("all") permit(principal, action, resource);');
    await owner.getByRole("button", { name: "Save settings" }).click();
    await owner.getByText("Saved.").waitFor();
    const saved = (await api(OWNER, "GET", `/api/agents/${helper.id}`)).body;
    assert.equal(saved.kind, "assistant");
    assert.equal(saved.instructions, "Look around, then say so.");
    assert.equal(saved.max_workspace_mib, 8000, "saving the spec changed Max disk");
    assert.ok(saved.spec_version >= 1);
    await owner.goto(`${base}/agents/${helper.id}`);
    assert.match(
      await owner.getByTestId("spec").innerText(),
      /assistant[\s\S]*script turns\.json[\s\S]*list_files \(builtin\)/,
    );
    await owner.goto(`${base}/agents/${helper.id}/runs`);
    await owner.locator('textarea[name="run_input"]').fill("How is the home?");
    await owner.getByRole("button", { name: "Start agent run" }).click();
    await owner.waitForURL(/\/runs\/run_/);
    await owner
      .getByTestId("run-status")
      .getByText(/^succeeded/)
      .waitFor({ timeout: 120_000 });
    const trace = owner.getByTestId("trace");
    await trace.getByText("exit", { exact: true }).waitFor();
    const types = await trace.locator("li b").allInnerTexts();
    assert.ok(types.includes("model") && types.includes("tool"), types.join(","));
    assert.match(await trace.innerText(), /list_files ALLOW/);
    assert.match(await owner.getByTestId("run-output").innerText(), /all is well/);
    assert.match(await owner.getByTestId("run-usage").innerText(), /2 steps · 1 tool calls \(0 refused\)/);
    await shot(owner, "13-agent-run-trace");
  });

  test("members are added with roles", async () => {
    await owner.goto(`${base}/orgs/${orgId}`);
    for (const [email, role] of [
      [VIEWER, "viewer"],
      [AUDITOR, "auditor"],
    ] as const) {
      await owner.locator('input[name="member_email"]').fill(email);
      await owner.locator('select[name="member_role"]').selectOption(role);
      await owner.getByRole("button", { name: "Add or change member" }).click();
      await owner.getByRole("cell", { name: email, exact: true }).waitFor();
    }
    // a role changed in place, a member removed
    await owner.locator('input[name="member_email"]').fill("gone@example.com");
    await owner.getByRole("button", { name: "Add or change member" }).click();
    await owner.getByRole("combobox", { name: "role of gone@example.com" }).selectOption("auditor");
    await owner.waitForFunction(async (u) => {
      const r = await fetch(u, { headers: { "x-forwarded-email": "owner@example.com" } });
      const body = (await r.json()) as { items: { email: string; role: string }[] };
      return body.items.find((m) => m.email === "gone@example.com")?.role === "auditor";
    }, `${base}/api/orgs/${orgId}/members`);
    await owner.getByRole("button", { name: "remove gone@example.com" }).click();
    await owner.getByRole("cell", { name: "gone@example.com", exact: true }).waitFor({ state: "detached" });
    await shot(owner, "14-org");
  });

  test("a viewer sees no button it cannot use", async () => {
    const viewer = await personAt(VIEWER);
    await viewer.goto(`${base}/orgs/${orgId}`);
    await viewer.getByRole("link", { name: "builder" }).waitFor();
    assert.equal(await viewer.getByRole("button", { name: "Create machine" }).count(), 0);
    assert.equal(await viewer.getByRole("button", { name: "New agent" }).count(), 0);
    assert.equal(await viewer.getByRole("button", { name: /member|remove/ }).count(), 0);
    assert.equal(await viewer.getByRole("combobox", { name: /role of/ }).count(), 0);
    const machineId = (await api(OWNER, "GET", `/api/agents/${agentId}`)).body.machine_id;
    await viewer.goto(`${base}/machines/${machineId}`);
    await viewer.getByTestId("box-usage").waitFor();
    assert.equal(await viewer.getByRole("button", { name: "Stop the box" }).count(), 0);
    await viewer.goto(`${base}/agents/${agentId}/runs`);
    await viewer.getByTestId("runs").waitFor();
    assert.equal(await viewer.getByRole("button", { name: "Start run" }).count(), 0);
    const tabs = await viewer.getByRole("navigation", { name: "agent" }).getByRole("link").allInnerTexts();
    assert.deepEqual(tabs, [
      "Overview",
      "Runs",
      "Conversations",
      "Schedules",
      "Versions",
      "Files",
      "Terminal",
      "Browser",
      "Usage",
      "Egress",
      "Settings",
    ]);
    await viewer.goto(`${base}/agents/${agentId}/versions`);
    await viewer.locator('[data-testid="versions"], .tabpanel .empty').first().waitFor();
    assert.equal(await viewer.getByRole("button", { name: /Make current|canary/ }).count(), 0);
    await viewer.goto(`${base}/agents/${agentId}/conversations`);
    await viewer.getByText(/No conversations yet\. An editor can start one\./).waitFor();
    assert.equal(await viewer.getByRole("button", { name: "Start conversation" }).count(), 0);
    await viewer.goto(`${base}/agents/${agentId}/runs/${runId}`);
    await viewer
      .getByTestId("run-output")
      .getByText(/tok=\[redacted\]/)
      .waitFor();
    await viewer.getByTestId("trace").waitFor();
    await viewer.goto(`${base}/agents/${agentId}/files?path=work`);
    await viewer.getByTestId("files").getByRole("button", { name: "notes.txt" }).waitFor();
    assert.equal(await viewer.locator('input[name="upload"]').count(), 0);
    // the terminal: a viewer watches the shared shell, its keys dropped
    assert.equal((await api(OWNER, "POST", `/api/agents/${agentId}/cli`)).status, 200);
    await viewer.goto(`${base}/agents/${agentId}/terminal`);
    assert.equal(await viewer.getByRole("button", { name: "Start the terminal" }).count(), 0);
    await viewer.getByRole("button", { name: "Watch the terminal" }).click();
    await viewer.getByTestId("terminal-state").getByText("watching (read-only)").waitFor({ timeout: 60_000 });
    await viewer.locator(".xterm").click();
    await viewer.keyboard.type("touch /home/${agentId}/viewer-was-here\n".replace("${agentId}", agentId));
    await viewer.waitForTimeout(1000);
    const probe = await api(OWNER, "POST", `/api/agents/${agentId}/exec`, {
      command: "test -e viewer-was-here && echo yes || echo no",
    });
    assert.equal(probe.body.stdout.trim(), "no", "a viewer's keys reached the shell");
    await shot(viewer, "15-viewer-terminal");
    await viewer.goto(`${base}/agents/${agentId}/settings`);
    await viewer.getByText(/Your role \(viewer\) reads these settings/).waitFor();
    assert.equal(await viewer.getByRole("button", { name: "Save settings" }).count(), 0);
    assert.ok(await viewer.locator('input[name="max_workspace_mib"]').isDisabled());
    await shot(viewer, "15-viewer-settings");
    await viewer.goto(`${base}/secrets?org=${orgId}`);
    await viewer.getByTestId("secrets").getByText("APP_TOKEN").waitFor();
    assert.equal(await viewer.getByRole("button", { name: /Create secret|Delete/ }).count(), 0);
    await shot(viewer, "16-viewer-secrets");
  });

  test("an auditor sees the record without outputs, files, traces or terminal", async () => {
    const auditor = await personAt(AUDITOR);
    await auditor.goto(`${base}/agents/${agentId}/runs`);
    await auditor.getByTestId("runs").getByText("succeeded").waitFor();
    const tabs = await auditor.getByRole("navigation", { name: "agent" }).getByRole("link").allInnerTexts();
    assert.deepEqual(tabs, ["Overview", "Runs", "Schedules", "Versions", "Usage", "Settings"]);
    await auditor.goto(`${base}/agents/${agentId}/runs/${runId}`);
    await auditor
      .getByText(/Your role \(auditor\) sees the record of a run without its output or trace/)
      .waitFor();
    await auditor.getByTestId("receipt").waitFor();
    assert.equal(await auditor.getByTestId("trace").count(), 0);
    assert.equal(await auditor.getByTestId("run-output").count(), 0);
    // the command is the record; what it printed is not
    const page = await auditor.content();
    assert.ok(!page.includes("tok=[redacted]"), "the auditor sees the run's output");
    await shot(auditor, "17-auditor-run");
    for (const tab of ["files", "terminal", "egress"]) {
      await auditor.goto(`${base}/agents/${agentId}/${tab}`);
      await auditor.getByText(/Your role \(auditor\) does not show this agent's/).waitFor();
    }
    await shot(auditor, "18-auditor-files");
  });

  test("a narrow window: nothing wider than the screen", async () => {
    const narrow = await personAt(OWNER, { width: 390, height: 800 });
    for (const [p, name] of [
      [`/agents/${agentId}`, "19-narrow-agent"],
      [`/agents/${agentId}/settings`, "20-narrow-settings"],
      [`/orgs/${orgId}`, "21-narrow-org"],
    ] as const) {
      await narrow.goto(`${base}${p}`);
      await narrow.waitForLoadState("networkidle");
      const [scroll, width] = await narrow.evaluate(() => {
        const w = globalThis as any;
        return [w.document.documentElement.scrollWidth as number, w.innerWidth as number];
      });
      assert.ok((scroll ?? 0) <= (width ?? 0), `${p}: the page is ${scroll}px wide in a ${width}px window`);
      await shot(narrow, name);
    }
  });
});
