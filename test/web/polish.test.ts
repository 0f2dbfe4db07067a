// The app's everyday views in a real browser (Debian's chromium, driven by playwright-core)
// against a real `warren serve` (the built CLI, trusted-header mode, real boxes, the scripted
// model and a held model on loopback): a run's trace as the CLI's timeline, an answer's Markdown
// drawn with nothing an agent wrote running on the app's origin, Stop on a turn going on, an
// approval card that names its agent and tells Allow from Deny, breadcrumbs by name.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { traceEntries, type RunEvent } from "../../src/sdk/index.js";
import { waitFor } from "../conversations/support.js";
import { startHeldModel, type HeldModel } from "../support/held-model.js";
import { OWNER, startWebApp, type WebApp } from "./fixture.js";
import { builtins, orgAndMachine } from "../support/org.js";

const ANSWER = [
  "# Findings",
  "The **beds** are _ready_; see [the guide](https://example.com/guide).",
  "",
  "- first <script>window.__pwned = 'script'</script>",
  '- second <img src="x" onerror="window.__pwned = \'img\'">',
  "",
  "[click me](javascript:window.__pwned='link') and ![pic](javascript:window.__pwned='src')",
  "",
  "```",
  "<b onclick=\"window.__pwned='code'\">raw</b>",
  "```",
].join("\n");
const APPROVAL_POLICY = `@id("writes") @approval("required") permit(principal, action, resource == Tool::"write_file");`;

describe("the app's trace, Markdown, Stop, approvals and breadcrumbs", { concurrency: false }, () => {
  let web: WebApp;
  let held: HeldModel | undefined;
  let org: { id: string };
  let machine: { id: string };
  const api = (method: string, url: string, body?: object) => web.api(method, url, body);
  const putFile = (agentId: string, p: string, data: string) => web.putFile(agentId, p, data);
  const agent = async (name: string, extra: object) => {
    const made = await api("POST", "/api/agents", {
      org_id: org.id,
      machine_id: machine.id,
      name,
      kind: "assistant",
      ...extra,
    });
    assert.equal(made.status, 201, JSON.stringify(made.body));
    return made.body.id as string;
  };
  const ended = (runId: string) => web.ended(runId);

  before(async () => {
    held = await startHeldModel("Counting the seeds ", "one by one.");
    web = await startWebApp("polish", { WARREN_EGRESS_PRIVATE_ALLOW: `127.0.0.1:${held.port}` });
    ({ org, machine } = await orgAndMachine(api, "Acme Gardens", { name: "shed" }));
  });
  after(async () => {
    held?.release();
    await web?.stop();
    await held?.close();
  });

  test("a run's trace is the CLI's timeline: the same lines, then the run's summary", async () => {
    const agentId = await agent("tracer", {
      model: { provider: "script", name: "turns.json" },
      tools: builtins("read_file"),
      tool_policy: '@id("reads") permit(principal, action, resource == Tool::"read_file");',
    });
    await putFile(agentId, "notes.txt", "tomatoes in May");
    await putFile(
      agentId,
      "turns.json",
      JSON.stringify([
        { tool_calls: [{ name: "read_file", input: { path: "notes.txt" } }] },
        { text: "Tomatoes go in in **May**." },
      ]),
    );
    const r = await api("POST", `/api/agents/${agentId}/runs`, { kind: "agent", input: "when?" });
    assert.equal(r.status, 202, JSON.stringify(r.body));
    const run = await ended(r.body.id);
    assert.equal(run.status, "succeeded", JSON.stringify(run));
    const events = (await api("GET", `/api/runs/${run.id}/events`)).body.items as RunEvent[];
    const expected = traceEntries(events);

    const page = await web.person(OWNER);
    await page.goto(`${web.base}/agents/${agentId}/runs/${run.id}`);
    const trace = page.getByTestId("trace");
    await trace.getByText("exit", { exact: true }).waitFor();
    await page.getByTestId("trace-summary").waitFor();
    const lines = trace.getByTestId("trace-line");
    assert.equal(await lines.count(), expected.length);
    const names = await lines.locator("b").allInnerTexts();
    const texts = await lines.locator("summary").allInnerTexts();
    assert.deepEqual(
      names,
      expected.map((e) => e.name),
    );
    assert.deepEqual(
      texts,
      expected.map((e) => e.text),
    );
    assert.ok(names.includes("model") && names.includes("tool"), names.join(","));
    assert.ok(
      texts.some((t) => /^read_file ALLOW \(reads\) {2}\{"path":"notes\.txt"\}/.test(t)),
      texts.join("\n"),
    );
    assert.match(
      await page.getByTestId("trace-summary").innerText(),
      /^succeeded: 2 steps, 1 tool calls \(0 refused\), \d+→\d+ tokens, \$\d+\.\d{6}$/,
    );
    // the run's answer is drawn as Markdown
    assert.equal(await page.getByTestId("run-output").locator("strong").innerText(), "May");
    // a line opens to its event whole
    const tool = lines.filter({ has: page.locator("b", { hasText: /^tool$/ }) }).first();
    await tool.locator("summary").click();
    assert.match(await tool.locator("pre").innerText(), /"result_bytes"/);
    await web.shot(page, "polish-trace");
  });

  test("an answer's Markdown is drawn, and nothing it holds runs: no script, no handler, no javascript: link", async () => {
    const agentId = await agent("writer", { model: { provider: "script", name: "turns.json" } });
    await putFile(agentId, "turns.json", JSON.stringify([{ text: ANSWER }]));
    const page = await web.person(OWNER);
    page.on("dialog", (d) => void d.dismiss());
    await page.goto(`${web.base}/agents/${agentId}/conversations`);
    await page.getByRole("button", { name: "Start conversation" }).click();
    await page.waitForURL(/\/conversations\/cnv_[0-9a-z]{16}$/);
    await page.getByTestId("stream-state").getByText("live").waitFor();
    const box = page.locator('textarea[name="conversation_message"]');
    await box.fill("What did you find?");
    await box.press("Enter");
    const answer = page.getByTestId("answer");
    await answer.getByRole("heading", { name: "Findings" }).waitFor();
    // drawn: emphasis, a list, a safe link that opens apart, code as text
    assert.equal(await answer.locator("strong").innerText(), "beds");
    assert.equal(await answer.locator("em").innerText(), "ready");
    assert.equal(await answer.locator("li").count(), 2);
    const guide = answer.getByRole("link", { name: "the guide" });
    assert.equal(await guide.getAttribute("href"), "https://example.com/guide");
    assert.match((await guide.getAttribute("rel")) ?? "", /noopener/);
    // what an agent wrote as HTML shows as the text it is
    await answer.getByText("<script>window.__pwned = 'script'</script>", { exact: false }).waitFor();
    await answer.getByText(`<img src="x" onerror="window.__pwned = 'img'">`, { exact: false }).waitFor();
    assert.equal(
      await answer.locator("pre code").innerText(),
      "<b onclick=\"window.__pwned='code'\">raw</b>",
    );
    // ... and never as elements: no script, no image, no handler, one link only (the safe one)
    assert.equal(await answer.locator("script, img, iframe, object, embed, svg").count(), 0);
    assert.equal(await answer.getByRole("link").count(), 1);
    assert.equal(await answer.getByText("click me").count(), 1);
    // (the page's own globals: this file is typed for Node, not the DOM)
    type Attr = { name: string; value: string };
    type El = { tagName: string; attributes: Iterable<Attr> };
    const handlers = await page.evaluate(() =>
      [
        ...(
          globalThis as unknown as { document: { querySelectorAll(s: string): Iterable<El> } }
        ).document.querySelectorAll("*"),
      ].flatMap((el) =>
        [...el.attributes]
          .filter((a) => /^on/i.test(a.name) || /^\s*(javascript|data):/i.test(a.value))
          .map((a) => `${el.tagName} ${a.name}`),
      ),
    );
    assert.deepEqual(handlers, []);
    // the javascript: text is not a link; clicking it does nothing
    await answer.getByText("click me").click();
    assert.equal(await page.evaluate(() => (globalThis as { __pwned?: unknown }).__pwned), undefined);
    await web.shot(page, "polish-markdown");
  });

  test("Stop on a turn going on cancels its run, and the turn says it ended", async () => {
    const agentId = await agent("counter", {
      model: { provider: "openai-compatible", name: "held", base_url: held?.baseUrl },
    });
    const page = await web.person(OWNER);
    await page.goto(`${web.base}/agents/${agentId}/conversations`);
    await page.getByRole("button", { name: "Start conversation" }).click();
    await page.waitForURL(/\/conversations\/cnv_[0-9a-z]{16}$/);
    const conversationId = page.url().split("/").pop() ?? "";
    await page.getByTestId("stream-state").getByText("live").waitFor();
    const box = page.locator('textarea[name="conversation_message"]');
    await box.fill("Count the seeds");
    await box.press("Enter");
    // the model holds the rest of its answer: the turn goes on
    await page.getByTestId("streamed").getByText("Counting the seeds").waitFor();
    const turn = page.getByTestId("turn-live");
    await turn.getByRole("button", { name: "Stop this turn" }).click();
    await turn.getByText(/ended|Interrupted/).waitFor();
    assert.equal(await turn.getByRole("button", { name: "Stop this turn" }).count(), 0);
    const messages = (await api("GET", `/api/conversations/${conversationId}/messages`)).body.items;
    const runId = messages.find((m: { role: string; run_id?: string }) => m.role === "user")?.run_id;
    assert.ok(runId, JSON.stringify(messages));
    assert.equal((await ended(runId)).status, "cancelled");
    await web.shot(page, "polish-stopped");
  });

  test("an approval card names the agent and tells Allow from Deny; breadcrumbs say the organisation's name", async () => {
    const agentId = await agent("careful", {
      model: { provider: "script", name: "turns.json" },
      tools: builtins("write_file"),
      tool_policy: APPROVAL_POLICY,
    });
    await putFile(
      agentId,
      "turns.json",
      JSON.stringify([
        { tool_calls: [{ name: "write_file", input: { path: "out.txt", content: "hi" } }] },
        { text: "Done." },
      ]),
    );
    const r = await api("POST", `/api/agents/${agentId}/runs`, { kind: "agent", input: "go" });
    assert.equal(r.status, 202, JSON.stringify(r.body));
    const approval = await waitFor("the run to wait for an approval", async () => {
      const items = (await api("GET", `/api/runs/${r.body.id}/approvals`)).body.items;
      return items.find((a: { status: string }) => a.status === "waiting");
    });
    const page = await web.person(OWNER);
    await page.goto(`${web.base}/orgs/${org.id}`);
    const card = page.getByRole("article", { name: `approval ${approval.id}` });
    await card.getByTestId("approval-agent").getByText("careful").waitFor();
    const allow = card.getByRole("button", { name: "Allow: let careful call write_file" });
    const deny = card.getByRole("button", { name: "Deny: refuse careful the call of write_file" });
    assert.match(await allow.innerText(), /Allow/);
    assert.match(await deny.innerText(), /Deny/);
    const look = (b: typeof allow) =>
      b.evaluate((el) => {
        const win = globalThis as unknown as {
          getComputedStyle(e: unknown): { backgroundColor: string; color: string };
        };
        const s = win.getComputedStyle(el);
        return `${s.backgroundColor} ${s.color}`;
      });
    assert.notEqual(await look(allow), await look(deny));
    await web.shot(page, "polish-approval");
    await allow.click();
    await card.waitFor({ state: "detached" });
    assert.equal((await ended(r.body.id)).status, "succeeded");

    // breadcrumbs: the organisation by its name
    for (const where of ["notes", "tables", "flows"]) {
      await page.goto(`${web.base}/orgs/${org.id}/${where}`);
      const crumbs = page.locator(".crumbs").first();
      await crumbs.getByRole("link", { name: "Acme Gardens" }).waitFor();
      assert.equal(await crumbs.getByText("organisation", { exact: true }).count(), 0);
    }
  });
});
