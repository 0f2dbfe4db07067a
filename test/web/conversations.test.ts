// A conversation in the operator app, in a real browser (Debian's chromium, driven by
// playwright-core) against a real `warren serve` (the built CLI, trusted-header mode, real
// boxes) and an assistant on the scripted model: started as a persona, a message sent, the
// answer arriving over the conversation's event stream, the turn's tool call folded under it,
// a second turn, then closed; and the turn's run page following the run's event stream.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import type { Page, Request } from "playwright-core";
import { privateAllow } from "../support/bound.js";
import { startFakeOpenAI, type FakeModelServer } from "../support/fake-models.js";
import { startHeldModel, type HeldModel } from "../support/held-model.js";
import { OWNER, startWebApp, type WebApp } from "./fixture.js";
import { ALLOW_READS, putNotesHome } from "../support/agent-runs.js";
import { builtins, makeAgent } from "../support/org.js";

const ANSWER = "The notes say: tea at five, in the garden, with the good cups.";
const FIRST = "Tea is served ";
const REST = "in the garden.";
let held: HeldModel | undefined;
/** A model that streams a text, a tool call, then another text, as its provider's wire has them. */
let fake: FakeModelServer | undefined;
let app: WebApp;
let base = "";
const api = (method: string, url: string, body?: object | string, raw = false) =>
  app.api(method, url, body, raw ? { type: "application/octet-stream" } : {});

before(async () => {
  held = await startHeldModel(FIRST, REST);
  fake = await startFakeOpenAI();
  // the models' ports, and nothing else of this host
  app = await startWebApp("conv", { WARREN_EGRESS_PRIVATE_ALLOW: privateAllow(held, fake) });
  base = app.base;
});

after(async () => {
  await app?.stop();
  await held?.close();
  await fake?.close();
});

describe("a conversation in the app", { concurrency: false }, () => {
  let page: Page;
  let agentId = "";
  let conversationId = "";
  let personaId = "";
  const requests: Request[] = [];

  test("set-up: an assistant with a tool, its script and notes, and a persona", async () => {
    const org = await api("POST", "/api/orgs", { name: "Tea" });
    const machine = await api("POST", "/api/machines", { org_id: org.body.id, name: "kitchen" });
    const agent = await makeAgent(
      api,
      { org_id: org.body.id, machine_id: machine.body.id },
      { name: "butler", tools: builtins("read_file"), tool_policy: ALLOW_READS },
    );
    agentId = agent.id;
    await putNotesHome(
      async (file, content) => {
        assert.equal((await api("PUT", `/api/agents/${agentId}/files/${file}`, content, true)).status, 204);
      },
      [ANSWER, "You are welcome."],
    );
    const persona = await api("POST", `/api/agents/${agentId}/personas`, {
      name: "reader",
      instructions: "Answer from the notes.",
      tools: ["read_file"],
    });
    assert.equal(persona.status, 201, JSON.stringify(persona.body));
    personaId = persona.body.id;

    page = await app.person(OWNER);
    page.on("request", (r) => requests.push(r));
  });

  test("a conversation is started as a persona from the agent's Conversations tab", async () => {
    await page.goto(`${base}/agents/${agentId}`);
    await page
      .getByRole("navigation", { name: "agent" })
      .getByRole("link", { name: "Conversations" })
      .click();
    await page.waitForURL(`${base}/agents/${agentId}/conversations`);
    await page.getByText("No conversations yet").waitFor();
    await page.locator('input[name="conversation_title"]').fill("Tea time");
    await page.locator('select[name="conversation_persona"]').selectOption({ label: "persona reader" });
    await page.getByRole("button", { name: "Start conversation" }).click();
    await page.waitForURL(/\/conversations\/cnv_[0-9a-z]{16}$/);
    conversationId = page.url().split("/conversations/")[1] ?? "";
    await page.getByRole("heading", { name: /Tea time/ }).waitFor();
    await page.getByTestId("stream-state").getByText("live").waitFor();
    await page.getByText("No messages yet").waitFor();
    const c = await api("GET", `/api/conversations/${conversationId}`);
    assert.equal(c.body.persona_id, personaId);
    assert.equal(c.body.title, "Tea time");
  });

  test("a message sent: the answer comes over the event stream, the tool call folded under the turn", async () => {
    const from = requests.length;
    const box = page.locator('textarea[name="conversation_message"]');
    await box.fill("What do the notes say?");
    await box.press("Enter");
    await page.getByTestId("user-message").getByText("What do the notes say?").waitFor();
    assert.equal(await box.inputValue(), "", "the composer is emptied once the message is sent");
    await page.getByTestId("agent-message").getByText(ANSWER).waitFor();
    // the answer was not asked for again: the stream brought it
    const after = requests.slice(from).map((r) => `${r.method()} ${new URL(r.url()).pathname}`);
    assert.deepEqual(
      after.filter((r) => r.startsWith("GET ") && r.includes("/messages")),
      [],
      after.join("\n"),
    );
    const streams = requests.filter((r) => r.url().endsWith(`/api/conversations/${conversationId}/events`));
    assert.ok(streams.length >= 1);
    assert.equal(streams[0]?.headers().accept, "text/event-stream");

    const folded = page.getByTestId("tool-calls");
    await folded.waitFor();
    assert.equal(await folded.getAttribute("open"), null, "the tool calls are folded");
    assert.equal(await folded.locator("summary").innerText(), "1 tool call");
    assert.equal(await folded.getByTestId("tool-call").isVisible(), false);
    await folded.locator("summary").click();
    const call = folded.getByTestId("tool-call");
    await call.waitFor();
    assert.match(await call.innerText(), /read_file allow \{"path":"notes\.txt"\}/);
    await app.shot(page, "conversation-thread");
  });

  test("a second turn sees the thread; the page opened again shows the same thread", async () => {
    const box = page.locator('textarea[name="conversation_message"]');
    await box.fill("Thank you!");
    await page.getByRole("button", { name: "Send" }).click();
    await page.getByTestId("agent-message").getByText("You are welcome.").waitFor();
    await page.reload();
    await page.getByTestId("agent-message").getByText("You are welcome.").waitFor();
    assert.deepEqual(await page.getByTestId("user-message").allInnerTexts(), [
      "What do the notes say?",
      "Thank you!",
    ]);
    assert.deepEqual(await page.getByTestId("agent-message").locator(".text").allInnerTexts(), [
      ANSWER,
      "You are welcome.",
    ]);
    assert.equal(await page.getByTestId("tool-calls").count(), 1);
  });

  test("a turn's run page follows the run's event stream, without polling", async () => {
    const messages = await api("GET", `/api/conversations/${conversationId}/messages`);
    const runId = messages.body.items[0].run_id as string;
    const from = requests.length;
    await page.goto(`${base}/agents/${agentId}/runs/${runId}`);
    const trace = page.getByTestId("trace");
    await trace.getByText("exit", { exact: true }).waitFor();
    await trace.getByText("tool", { exact: true }).waitFor();
    await page.getByTestId("run-status").getByText("succeeded").waitFor();
    const mine = requests
      .slice(from)
      .filter((r) => new URL(r.url()).pathname.startsWith(`/api/runs/${runId}`));
    const events = mine.filter((r) => new URL(r.url()).pathname.endsWith("/events"));
    assert.ok(events.length >= 1);
    for (const r of events) assert.equal(r.headers().accept, "text/event-stream");
    assert.ok(!events.some((r) => r.url().includes("after=")), "the events were polled");
  });

  test("the answer streams in as the model writes it", async () => {
    const agent = (await api("GET", `/api/agents/${agentId}`)).body;
    const teller = await makeAgent(
      api,
      { org_id: agent.org_id, machine_id: agent.machine_id },
      {
        name: "teller",
        model: {
          provider: "openai-compatible",
          name: "held",
          base_url: held?.baseUrl,
        },
      },
    );
    await page.goto(`${base}/agents/${teller.id}/conversations`);
    await page.getByRole("button", { name: "Start conversation" }).click();
    await page.waitForURL(/\/conversations\/cnv_[0-9a-z]{16}$/);
    await page.getByTestId("stream-state").getByText("live").waitFor();
    const box = page.locator('textarea[name="conversation_message"]');
    await box.fill("Where is tea?");
    await box.press("Enter");
    // the first words are on the page while the model still holds the rest
    await page.getByTestId("streamed").getByText(FIRST.trim()).waitFor();
    assert.equal(await page.getByTestId("agent-message").count(), 0);
    await app.shot(page, "conversation-streaming");
    held?.release();
    await page
      .getByTestId("agent-message")
      .getByText(FIRST + REST)
      .waitFor();
    assert.equal(await page.getByTestId("streamed").count(), 0);
  });

  test("a tool call between two texts: each step's text apart, never glued, and the answer whole", async () => {
    const agent = (await api("GET", `/api/agents/${agentId}`)).body;
    fake!.script([
      {
        text: "Let me look at the notes.",
        tool_calls: [{ name: "read_file", input: { path: "notes.txt" } }],
      },
      { text: "The notes say tea is served at five in the garden." },
    ]);
    const looker = await makeAgent(
      api,
      { org_id: agent.org_id, machine_id: agent.machine_id },
      {
        name: "looker",
        model: { provider: "openai-compatible", name: "looker", base_url: fake!.baseUrl },
        tools: builtins("read_file"),
        tool_policy: ALLOW_READS,
      },
    );
    const put = await api("PUT", `/api/agents/${looker.id}/files/notes.txt`, "tea at five", true);
    assert.equal(put.status, 204);
    await page.goto(`${base}/agents/${looker.id}/conversations`);
    await page.getByRole("button", { name: "Start conversation" }).click();
    await page.waitForURL(/\/conversations\/cnv_[0-9a-z]{16}$/);
    await page.getByTestId("stream-state").getByText("live").waitFor();
    const box = page.locator('textarea[name="conversation_message"]');
    await box.fill("What do the notes say?");
    await box.press("Enter");
    const answer = page.getByTestId("agent-message");
    await answer
      .getByTestId("answer")
      .getByText("The notes say tea is served at five in the garden.")
      .waitFor();
    // the step before the tool call stays apart, above the answer; the answer is the last step alone
    assert.deepEqual(await answer.getByTestId("step").allInnerTexts(), ["Let me look at the notes."]);
    assert.equal(
      (await answer.getByTestId("answer").innerText()).trim(),
      "The notes say tea is served at five in the garden.",
    );
    assert.doesNotMatch(await answer.innerText(), /notes\.The notes/);
    await app.shot(page, "conversation-steps");
  });

  test("close: the composer goes, the list says closed, the API refuses a message", async () => {
    await page.goto(`${base}/agents/${agentId}/conversations/${conversationId}`);
    await page.getByRole("button", { name: "Close conversation" }).click();
    await page.getByText("This conversation is closed").waitFor();
    assert.equal(await page.locator('textarea[name="conversation_message"]').count(), 0);
    await page.getByRole("link", { name: "conversations" }).click();
    const row = page.getByTestId("conversations").getByRole("row", { name: /Tea time/ });
    await row.getByText("closed").waitFor();
    await row.getByText("reader").waitFor();
    await app.shot(page, "conversations-list");
    const refused = await api("POST", `/api/conversations/${conversationId}/messages`, { text: "Hello?" });
    assert.equal(refused.status, 409);
    assert.equal(refused.body.error.code, "conversation.closed");
  });
});
