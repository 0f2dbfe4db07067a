// Conversations on a real server with real boxes, over real HTTP: the model is the fake
// OpenAI-compatible server on loopback (each request it got is looked at). A three-turn
// thread whose third call holds the first two turns; a message queued behind a turn going on;
// a turn interrupted by its box stopping and continued by the next message; a persona
// narrowing tools and secrets; the limits (413, 409); a secret typed into a message redacted
// from what is stored and streamed.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { boxSkipReason } from "../box/fixture.js";
import { putHomeFile } from "../support/agent-runs.js";
import { privateAllow } from "../support/bound.js";
import { startFakeOpenAI, type FakeModelServer } from "../support/fake-models.js";
import { startTestServer, type TestServer } from "../support/server.js";
import { allEvents, assistantAgent, runEnded, say, waitFor } from "./support.js";

describe("conversations", { skip: boxSkipReason() ?? false }, () => {
  let t: TestServer;
  let fake: FakeModelServer;
  let where: { org: string; machine: string };
  let n = 0;
  /** The requests the fake got for one model name. */
  const sent = (model: string) => fake.requests.filter((r) => r.body?.model === model);
  const conversationOf = async (agentId: string, body: Record<string, unknown> = {}) => {
    const r = await t.call("POST", `/api/agents/${agentId}/conversations`, body);
    assert.equal(r.status, 201, JSON.stringify(r.body));
    return r.body;
  };

  before(async () => {
    fake = await startFakeOpenAI();
    t = await startTestServer({ listen: true, env: { WARREN_EGRESS_PRIVATE_ALLOW: privateAllow(fake) } });
    const org = (await t.call("POST", "/api/orgs", { name: "talk" })).body;
    const machine = (
      await t.call("POST", "/api/machines", { org_id: org.id, name: "m", max_workspace_mib: 500 })
    ).body;
    where = { org: org.id, machine: machine.id };
  });
  after(async () => {
    await t?.close();
    await fake?.close();
  });

  test("a three-turn conversation: the third model call receives the first two turns", async () => {
    const model = `three-${++n}`;
    fake.script([
      { tool_calls: [{ name: "run_command", input: { command: "echo first-tool-answer" } }] },
      { text: "One: done." },
      { text: "Two: noted." },
      { text: "Three: here." },
    ]);
    const agent = await assistantAgent(t, where, `a${n}`, {
      baseUrl: fake.baseUrl,
      model,
      tools: ["run_command"],
    });
    const c = await conversationOf(agent.id, { title: "three" });
    assert.equal(c.status, "open");
    assert.equal(c.started_by.email, "operator@localhost");
    for (const [i, text] of ["run the echo", "remember the word kestrel", "what did we do?"].entries()) {
      const run = await runEnded(t, await say(t, c.id, text));
      assert.equal(run.status, "succeeded", `turn ${i + 1}: ${run.status_reason}`);
    }
    const calls = sent(model);
    assert.equal(calls.length, 4, "two calls for the first turn, one for each other");
    const third = calls[3]!.body.messages as any[];
    const said = JSON.stringify(third);
    for (const piece of [
      "run the echo",
      "first-tool-answer",
      "One: done.",
      "remember the word kestrel",
      "Two: noted.",
      "what did we do?",
    ])
      assert.ok(said.includes(piece), `the third turn's call holds ${piece}`);
    // in order: user, assistant (tool call), tool, assistant, user, assistant, user
    const roles = third.filter((m) => m.role !== "system").map((m) => m.role);
    assert.deepEqual(roles, ["user", "assistant", "tool", "assistant", "user", "assistant", "user"]);
    const messages = (await t.call("GET", `/api/conversations/${c.id}/messages`)).body.items as any[];
    assert.deepEqual(
      messages.map((m) => [m.role, m.text]),
      [
        ["user", "run the echo"],
        ["agent", "One: done."],
        ["user", "remember the word kestrel"],
        ["agent", "Two: noted."],
        ["user", "what did we do?"],
        ["agent", "Three: here."],
      ],
    );
    assert.equal(messages[0].author.email, "operator@localhost");
    assert.equal(messages[0].author.name, "operator");
    // the stream holds every turn's events, ids strictly increasing, text deltas among them
    const events = await allEvents(t, c.id);
    const ids = events.map((e) => e.id);
    assert.deepEqual(
      ids,
      ids.map((_, i) => i + 1),
      "ids 1..n, none missing or doubled",
    );
    const types = new Set(events.map((e) => e.event));
    for (const ty of ["message", "started", "model_call", "tool_call", "output", "exit"])
      assert.ok(types.has(ty), ty);
    const deltas = events
      .filter((e) => e.event === "output" && e.data.data.stream === "text")
      .map((e) => e.data.data.data);
    assert.ok(deltas.join("").includes("Three: here."), "the answer streamed as text");
  });

  test("a message queued behind a turn going on starts after it, with its answer in its history", async () => {
    const model = `queue-${++n}`;
    fake.script([
      {
        tool_calls: [
          {
            name: "run_command",
            input: { command: "touch started; while [ ! -f go ]; do sleep 0.05; done; echo went" },
          },
        ],
      },
      { text: "first answer" },
      { text: "second answer" },
    ]);
    const agent = await assistantAgent(t, where, `a${n}`, {
      baseUrl: fake.baseUrl,
      model,
      tools: ["run_command"],
    });
    const c = await conversationOf(agent.id);
    const first = await say(t, c.id, "wait for go");
    await waitFor("the first turn's command to start", async () => {
      const r = await t.inject({ method: "GET", url: `/api/agents/${agent.id}/files/started` });
      return r.statusCode === 200;
    });
    const second = await say(t, c.id, "and then?");
    const queued = (await t.call("GET", `/api/runs/${second}`)).body;
    assert.equal(queued.status, "queued");
    assert.equal(queued.waiting.reason, "agent_busy");
    await putHomeFile(t, agent.id, "go", "");
    const r1 = await runEnded(t, first);
    const r2 = await runEnded(t, second);
    assert.equal(r1.status, "succeeded");
    assert.equal(r2.status, "succeeded");
    assert.ok(
      new Date(r2.started_at) >= new Date(r1.ended_at),
      "the second turn started after the first ended",
    );
    const calls = sent(model);
    const last = JSON.stringify(calls[calls.length - 1]!.body.messages);
    assert.ok(last.includes("first answer") && last.includes("went"), "the second turn saw the first");
    const messages = (await t.call("GET", `/api/conversations/${c.id}/messages`)).body.items as any[];
    assert.deepEqual(
      messages.map((m) => m.text),
      ["wait for go", "and then?", "first answer", "second answer"],
    );
  });

  test("a turn interrupted by its box stopping is marked so; the next message goes on from the transcript on a fresh box", async () => {
    const model = `stop-${++n}`;
    fake.script([
      { tool_calls: [{ name: "run_command", input: { command: "touch running; sleep 600" } }] },
      { tool_calls: [{ name: "run_command", input: { command: "ls running && echo home-in-place" } }] },
      { text: "back after the stop" },
    ]);
    const agent = await assistantAgent(t, where, `a${n}`, {
      baseUrl: fake.baseUrl,
      model,
      tools: ["run_command"],
    });
    const c = await conversationOf(agent.id);
    const first = await say(t, c.id, "sleep long");
    await waitFor("the command to run", async () => {
      const r = await t.inject({ method: "GET", url: `/api/agents/${agent.id}/files/running` });
      return r.statusCode === 200;
    });
    const stop = await t.call("POST", `/api/machines/${where.machine}/stop`);
    assert.equal(stop.status, 200, JSON.stringify(stop.body));
    const r1 = await runEnded(t, first, 20_000);
    assert.equal(r1.status, "cancelled");
    assert.match(r1.status_reason, /^interrupted: the box stopped/);
    const events = await allEvents(t, c.id);
    assert.ok(
      events.some((e) => e.event === "interrupted" && e.data.run_id === first),
      "an interrupted event",
    );
    const second = await say(t, c.id, "are you there?");
    const r2 = await runEnded(t, second);
    assert.equal(r2.status, "succeeded", r2.status_reason);
    const m = (await t.call("GET", `/api/machines/${where.machine}`)).body;
    assert.equal(m.state, "running", "the next turn started a fresh box");
    const calls = sent(model);
    const history = calls[calls.length - 1]!.body.messages as any[];
    const said = JSON.stringify(history);
    assert.ok(said.includes("sleep long") && said.includes("are you there?"));
    // the cut-short call has its answer (what the stopped command said, or a note that it had none)
    const asked = history.findIndex((x) => x.role === "assistant" && x.tool_calls?.length);
    assert.ok(asked > 0, "the interrupted turn's tool call is in the history");
    assert.equal(history[asked + 1]?.role, "tool");
    assert.equal(history[asked + 1]?.tool_call_id, history[asked].tool_calls[0].id);
    assert.ok(said.includes("home-in-place"), "the fresh box has the home in place");
    const messages = (await t.call("GET", `/api/conversations/${c.id}/messages`)).body.items as any[];
    assert.deepEqual(
      messages.map((x) => [x.role, x.text]),
      [
        ["user", "sleep long"],
        ["user", "are you there?"],
        ["agent", "back after the stop"],
      ],
    );
  });

  test("413 for a message over 256 KiB, 409 once closed; a kind command agent holds no conversation", async () => {
    const model = `limits-${++n}`;
    const agent = await assistantAgent(t, where, `a${n}`, { baseUrl: fake.baseUrl, model });
    const c = await conversationOf(agent.id);
    const big = await t.call("POST", `/api/conversations/${c.id}/messages`, {
      text: "x".repeat(256 * 1024 + 1),
    });
    assert.equal(big.status, 413);
    assert.equal(big.body.error.code, "run.input_too_large");
    const closed = await t.call("POST", `/api/conversations/${c.id}/close`);
    assert.equal(closed.status, 200);
    assert.equal(closed.body.status, "closed");
    const late = await t.call("POST", `/api/conversations/${c.id}/messages`, { text: "hello?" });
    assert.equal(late.status, 409);
    assert.equal(late.body.error.code, "conversation.closed");
    const plain = await t.call("POST", "/api/agents", {
      org_id: where.org,
      machine_id: where.machine,
      name: `c${n}`,
    });
    const refused = await t.call("POST", `/api/agents/${plain.body.id}/conversations`, {});
    assert.equal(refused.status, 400);
    assert.equal(refused.body.error.code, "request.invalid");
    const list = await t.call("GET", `/api/agents/${agent.id}/conversations`);
    assert.deepEqual(
      list.body.items.map((x: any) => x.id),
      [c.id],
    );
  });

  const secret = async (name: string, value: string, agentId: string) => {
    const r = await t.call("POST", "/api/secrets", {
      org_id: where.org,
      name,
      description: "",
      value,
      grants: [{ scope: "agent", id: agentId }],
    });
    assert.equal(r.status, 201, JSON.stringify(r.body));
  };

  test("a persona narrows tools and secrets, adds instructions, and never widens", async () => {
    const model = `persona-${++n}`;
    const agent = await assistantAgent(t, where, `a${n}`, {
      baseUrl: fake.baseUrl,
      model,
      tools: ["read_file", "run_command"],
      instructions: "You are the agent.",
    });
    await secret(`ALPHA_${n}`, "alpha-value-123456", agent.id);
    await secret(`BETA_${n}`, "beta-value-654321", agent.id);
    const personas = `/api/agents/${agent.id}/personas`;
    const wider = await t.call("POST", personas, { name: "wide", tools: ["run_command", "web_fetch"] });
    assert.equal(wider.status, 400);
    assert.equal(wider.body.error.code, "request.invalid");
    assert.match(wider.body.error.message, /^tools: the agent has no tool web_fetch/);
    const foreign = await t.call("POST", personas, { name: "wide", secrets: ["NOT_GRANTED"] });
    assert.equal(foreign.status, 400);
    assert.equal(foreign.body.error.code, "request.invalid");
    assert.match(foreign.body.error.message, /^secrets: /);
    // a persona is homed in an area of the organisation, which must exist
    const area = await t.call("PUT", `/api/orgs/${where.org}/areas/docs`, { folders: ["docs"] });
    assert.equal(area.status, 200, JSON.stringify(area.body));
    const p = await t.call("POST", personas, {
      name: "narrow",
      tools: ["run_command"],
      secrets: [`ALPHA_${n}`],
      instructions: "Speak as the narrow one.",
      area: "docs",
    });
    assert.equal(p.status, 201, JSON.stringify(p.body));
    assert.deepEqual(
      { tools: p.body.tools, secrets: p.body.secrets, area: p.body.area },
      { tools: ["run_command"], secrets: [`ALPHA_${n}`], area: "docs" },
    );
    const listed = await t.call("GET", personas);
    assert.deepEqual(
      listed.body.items.map((x: any) => x.id),
      [p.body.id],
    );
    fake.script([
      {
        tool_calls: [
          {
            name: "run_command",
            input: { command: `env | grep -o '^[A-Z]*_${n}=' ; echo "beta:\${BETA_${n}:-none}"` },
          },
        ],
      },
      { text: "narrow answer" },
    ]);
    const c = await conversationOf(agent.id, { persona_id: p.body.id });
    assert.equal(c.persona_id, p.body.id);
    // the starter's areas (the operator holds none); the persona's area narrows each turn
    assert.deepEqual(c.areas, []);
    const run = await runEnded(t, await say(t, c.id, "what do you have?"));
    assert.equal(run.status, "succeeded", run.status_reason);
    const calls = sent(model);
    assert.equal(calls.length, 2);
    const tools = (calls[0]!.body.tools as any[]).map((x) => x.function.name);
    assert.deepEqual(tools, ["run_command"], "only the persona's tools reach the model");
    const system = JSON.stringify(calls[0]!.body.messages[0]);
    assert.ok(system.includes("You are the agent.") && system.includes("Speak as the narrow one."));
    const toolAnswer = JSON.stringify(calls[1]!.body.messages.find((m: any) => m.role === "tool"));
    assert.ok(toolAnswer.includes(`ALPHA_${n}=`), toolAnswer);
    assert.ok(
      !toolAnswer.includes(`BETA_${n}=`),
      "the secret the persona leaves out never reaches the command",
    );
    assert.ok(toolAnswer.includes("beta:none"), toolAnswer);
    // the same agent without the persona keeps both
    fake.script([
      { tool_calls: [{ name: "run_command", input: { command: `env | grep -o '^[A-Z]*_${n}=' | sort` } }] },
      { text: "full answer" },
    ]);
    const full = await conversationOf(agent.id);
    assert.equal((await runEnded(t, await say(t, full.id, "and you?"))).status, "succeeded");
    const all = sent(model);
    assert.deepEqual((all[2]!.body.tools as any[]).map((x) => x.function.name).sort(), [
      "read_file",
      "run_command",
    ]);
    const both = JSON.stringify(all[3]!.body.messages.find((m: any) => m.role === "tool"));
    assert.ok(both.includes(`ALPHA_${n}=`) && both.includes(`BETA_${n}=`), both);
    // deleted, the persona leaves its conversations with nothing, never with the whole agent
    assert.equal((await t.call("DELETE", `/api/personas/${p.body.id}`)).status, 204);
    assert.equal((await t.call("DELETE", `/api/personas/${p.body.id}`)).status, 404);
    fake.script([{ text: "a" }, { text: "b" }, { text: "c" }]);
    assert.equal((await runEnded(t, await say(t, c.id, "still there?"))).status, "succeeded");
    const after = sent(model);
    assert.equal(after[after.length - 1]!.body.tools, undefined, "no tool at all once the persona is gone");
  });

  test("a secret typed into a message, echoed by a command and said by the model is never stored or streamed", async () => {
    const model = `redact-${++n}`;
    const value = "s3cr3t-value-9f8e7d";
    const agent = await assistantAgent(t, where, `a${n}`, {
      baseUrl: fake.baseUrl,
      model,
      tools: ["run_command"],
    });
    await secret(`TOKEN_${n}`, value, agent.id);
    fake.script([
      { tool_calls: [{ name: "run_command", input: { command: `echo "echoed \${TOKEN_${n}}"` } }] },
      { text: `I saw ${value} in your message and in the command` },
      { text: "fine" },
    ]);
    const c = await conversationOf(agent.id, { title: `about ${value}` });
    assert.ok(c.title.startsWith("about ") && !c.title.includes(value), "the title is stored redacted");
    const r1 = await runEnded(t, await say(t, c.id, `my token is ${value} please keep it`));
    assert.equal(r1.status, "succeeded", r1.status_reason);
    const r2 = await runEnded(t, await say(t, c.id, "and now?"));
    assert.equal(r2.status, "succeeded", r2.status_reason);
    const messages = JSON.stringify((await t.call("GET", `/api/conversations/${c.id}/messages`)).body);
    assert.ok(messages.includes("my token is"), messages);
    assert.ok(messages.includes("I saw"), messages);
    assert.ok(!messages.includes(value), "the messages hold no secret");
    const events = await allEvents(t, c.id);
    const streamed = JSON.stringify(events);
    assert.ok(streamed.includes("echoed"), "the command's echo is in the stream");
    assert.ok(!streamed.includes(value), "the stream holds no secret");
    const trace = JSON.stringify((await t.call("GET", `/api/runs/${r1.id}/events`)).body);
    assert.ok(!trace.includes(value));
    // the next turn's history is the stored (redacted) transcript
    const calls = sent(model);
    assert.ok(!JSON.stringify(calls[calls.length - 1]!.body.messages).includes(value));
  });
});
