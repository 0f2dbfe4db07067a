// Harness kinds holding a conversation with their real CLIs (installed by scripts/harness.sh),
// each run headless in a real box for every turn against a scripted provider on loopback
// behind the gateway. The CLI keeps its own session of the conversation in the agent's home
// (.warren/conversations/<id>/<kind>) and resumes it on the next turn; when that state is
// gone (a home reset), the turn starts a new session with the transcript replayed as input.
//
// The fakes answer by the number of model answers already in the request: a resumed second
// turn (its first answer in the history) gets the second answer, a replayed one the first.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import type { HarnessKind } from "../../src/runs/harness.js";
import { boxSkipReason } from "../box/fixture.js";
import { startFakeAnthropic, startFakeOpenAI, type FakeModelServer } from "../support/fake-models.js";
import {
  startFakeResponses,
  type FakeResponsesServer,
  type ResponsesTurn,
} from "../support/fake-responses.js";
import { harnessSkip as kindSkip, startHarnessServer } from "../support/harness.js";
import type { TestServer } from "../support/server.js";
import { runEnded, say } from "./support.js";
import { modelKey, orgAndMachine } from "../support/org.js";

const KEY = "sk-proj-conv-9c1e4a7b2d";
const skip = boxSkipReason() ?? false;
const REPLAY = /This is a conversation that goes on/;

describe("harness conversations: each CLI resumes its own session", { skip }, () => {
  let t: TestServer;
  let responses: FakeResponsesServer;
  let anth: FakeModelServer;
  let oai: FakeModelServer;
  let turns: ResponsesTurn[] = [];
  let org: { id: string };
  let machine: { id: string };
  const ms = Number(process.env.HARNESS_TEST_MS ?? 180_000);

  before(async () => {
    responses = await startFakeResponses(
      new Proxy([] as ResponsesTurn[], { get: (_t, k) => Reflect.get(turns, k) }),
    );
    anth = await startFakeAnthropic();
    oai = await startFakeOpenAI();
    t = await startHarnessServer(["codex", "claude-code", "opencode"], [responses, anth, oai]);
    ({ org, machine } = await orgAndMachine(t.call, "harness-conv", { max_workspace_mib: 500 }));
    await modelKey(t.call, org.id, [responses, anth, oai], KEY, "MODEL_KEY");
  });
  after(async () => {
    await t?.close();
    await responses?.close();
    await anth?.close();
    await oai?.close();
  });

  async function agent(kind: HarnessKind, model: Record<string, unknown>): Promise<string> {
    const a = await t.call("POST", "/api/agents", {
      org_id: org.id,
      machine_id: machine.id,
      name: kind,
      kind,
      model: { ...model, key_secret: "MODEL_KEY" },
    });
    assert.equal(a.status, 201, JSON.stringify(a.body));
    return a.body.id;
  }
  async function turn(conversationId: string, text: string): Promise<any> {
    const r = await runEnded(t, await say(t, conversationId, text), ms);
    assert.equal(r.status, "succeeded", JSON.stringify(r).slice(0, 3000));
    return r;
  }
  async function sh(agentId: string, command: string): Promise<string> {
    const r = await t.call("POST", `/api/agents/${agentId}/exec`, { command });
    assert.equal(r.body.exit_code, 0, JSON.stringify(r.body));
    return r.body.stdout as string;
  }
  async function agentTexts(conversationId: string): Promise<string[]> {
    const items = (await t.call("GET", `/api/conversations/${conversationId}/messages`)).body.items;
    return items.filter((m: any) => m.role === "agent").map((m: any) => m.text.trim());
  }

  test(
    "codex: exec resume on the second turn, the transcript replayed once its state is gone",
    {
      skip: kindSkip("codex"),
    },
    async () => {
      const id = await agent("codex", {
        provider: "openai",
        name: "gpt-5-mini",
        base_url: responses.baseUrl,
      });
      const c = (await t.call("POST", `/api/agents/${id}/conversations`, {})).body;
      turns = [{ text: "FIRST-ANSWER noted" }, { text: "SECOND-ANSWER heron" }];
      await turn(c.id, "remember the word heron");
      assert.match(
        await sh(id, `find .warren/conversations/${c.id}/codex/sessions -name '*.jsonl'`),
        /\.jsonl/,
        "codex's session is kept in the home",
      );

      await turn(c.id, "which word?");
      const second = responses.requests[responses.requests.length - 1]!.body.input as any[];
      assert.doesNotMatch(JSON.stringify(second), REPLAY, "a resumed turn replays nothing");
      const said = (role: string, re: RegExp) =>
        second.some((it) => it.role === role && re.test(JSON.stringify(it.content)));
      assert.ok(said("user", /remember the word heron/), "codex's own history holds the first message");
      assert.ok(said("assistant", /FIRST-ANSWER noted/), "and its first answer, as an answer");
      assert.ok(said("user", /which word\?/));

      // the home reset: the CLI's state is gone, the transcript is not
      await sh(id, `rm -rf .warren/conversations/${c.id}`);
      turns = [{ text: "THIRD-ANSWER replayed" }];
      await turn(c.id, "and now?");
      const third = JSON.stringify(responses.requests[responses.requests.length - 1]!.body.input);
      assert.match(third, REPLAY);
      assert.match(third, /User: remember the word heron/);
      assert.match(third, /Assistant: SECOND-ANSWER heron/);
      assert.deepEqual(await agentTexts(c.id), [
        "FIRST-ANSWER noted",
        "SECOND-ANSWER heron",
        "THIRD-ANSWER replayed",
      ]);
    },
  );

  test(
    "claude-code: --resume of the conversation's session on the second turn",
    {
      skip: kindSkip("claude-code"),
    },
    async () => {
      const id = await agent("claude-code", {
        provider: "anthropic",
        name: "claude-sonnet-4-5",
        base_url: anth.baseUrl,
      });
      const c = (await t.call("POST", `/api/agents/${id}/conversations`, {})).body;
      anth.script([{ text: "CLAUDE-FIRST kestrel" }, { text: "CLAUDE-SECOND kestrel" }]);
      await turn(c.id, "remember the word kestrel");
      anth.requests.length = 0;
      await turn(c.id, "which word?");
      const calls = anth.requests.filter((r) => /which word/.test(JSON.stringify(r.body.messages)));
      assert.ok(calls.length >= 1, "the second turn reached the model");
      const messages = calls[calls.length - 1]!.body.messages as any[];
      assert.doesNotMatch(JSON.stringify(messages), REPLAY);
      assert.ok(
        messages.some(
          (m) => m.role === "assistant" && /CLAUDE-FIRST kestrel/.test(JSON.stringify(m.content)),
        ),
        "Claude Code's own session holds its first answer",
      );
      assert.deepEqual(await agentTexts(c.id), ["CLAUDE-FIRST kestrel", "CLAUDE-SECOND kestrel"]);
    },
  );

  test("opencode: run --continue on the second turn", { skip: kindSkip("opencode") }, async () => {
    const id = await agent("opencode", { provider: "openai", name: "gpt-4o-mini", base_url: oai.baseUrl });
    const c = (await t.call("POST", `/api/agents/${id}/conversations`, {})).body;
    oai.script([{ text: "OPENCODE-FIRST plover" }, { text: "OPENCODE-SECOND plover" }]);
    await turn(c.id, "remember the word plover");
    oai.requests.length = 0;
    await turn(c.id, "which word?");
    const calls = oai.requests.filter((r) => /which word/.test(JSON.stringify(r.body.messages)));
    assert.ok(calls.length >= 1, "the second turn reached the model");
    const messages = calls[calls.length - 1]!.body.messages as any[];
    assert.doesNotMatch(JSON.stringify(messages), REPLAY);
    assert.ok(
      messages.some((m) => m.role === "assistant" && /OPENCODE-FIRST plover/.test(JSON.stringify(m.content))),
      "opencode's own session holds its first answer",
    );
    assert.deepEqual(await agentTexts(c.id), ["OPENCODE-FIRST plover", "OPENCODE-SECOND plover"]);
  });
});
