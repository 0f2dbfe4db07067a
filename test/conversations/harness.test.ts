// A harness kind holding a conversation with its real CLI: codex (installed by
// scripts/harness.sh) runs headless in a real box for each turn, against the scripted
// Responses server on loopback behind the gateway. It keeps no state between turns: the
// second turn's input replays the first (the person's message and codex's answer).
import assert from "node:assert/strict";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { installedVersion } from "../../src/runs/harness.js";
import { boxSkipReason } from "../box/fixture.js";
import { privateAllow } from "../support/bound.js";
import {
  startFakeResponses,
  type FakeResponsesServer,
  type ResponsesTurn,
} from "../support/fake-responses.js";
import { startTestServer, type TestServer } from "../support/server.js";
import { runEnded, say } from "./support.js";

const HARNESS_DIR = process.env.WARREN_TEST_HARNESS_DIR ?? path.resolve(".state/harness");
const KEY = "sk-proj-conv-9c1e4a7b2d";
const skip =
  boxSkipReason() ??
  (installedVersion(HARNESS_DIR, "codex") || process.env.WARREN_TEST_HARNESS_DIR
    ? false
    : `the codex CLI is not installed in ${HARNESS_DIR}: run scripts/harness.sh ${HARNESS_DIR} codex (make test does)`);

describe("a codex conversation", { skip }, () => {
  let t: TestServer;
  let fake: FakeResponsesServer;
  let turns: ResponsesTurn[] = [];

  before(async () => {
    fake = await startFakeResponses(
      new Proxy([] as ResponsesTurn[], { get: (_t, k) => Reflect.get(turns, k) }),
    );
    t = await startTestServer({
      env: {
        WARREN_HARNESS_KINDS: "codex",
        WARREN_HARNESS_DIR: HARNESS_DIR,
        WARREN_EGRESS_PRIVATE_ALLOW: privateAllow(fake),
      },
    });
  });
  after(async () => {
    await t?.close();
    await fake?.close();
  });

  test("two turns: the second turn's input replays the first", async () => {
    const org = (await t.call("POST", "/api/orgs", { name: "codex" })).body;
    const machine = (
      await t.call("POST", "/api/machines", { org_id: org.id, name: "m", max_workspace_mib: 500 })
    ).body;
    const key = await t.call("POST", "/api/secrets", {
      org_id: org.id,
      name: "MODEL_KEY",
      description: "",
      value: KEY,
      use: "model",
      hosts: [new URL(fake.baseUrl).host],
      grants: [{ scope: "org", id: org.id }],
    });
    assert.equal(key.status, 201, JSON.stringify(key.body));
    const a = await t.call("POST", "/api/agents", {
      org_id: org.id,
      machine_id: machine.id,
      name: "codex",
      kind: "codex",
      model: { provider: "openai", name: "gpt-5-mini", base_url: fake.baseUrl, key_secret: "MODEL_KEY" },
    });
    assert.equal(a.status, 201, JSON.stringify(a.body));
    const c = (await t.call("POST", `/api/agents/${a.body.id}/conversations`, {})).body;
    const ms = Number(process.env.HARNESS_TEST_MS ?? 180_000);

    turns = [{ text: "FIRST-ANSWER noted" }];
    const r1 = await runEnded(t, await say(t, c.id, "remember the word heron"), ms);
    assert.equal(r1.status, "succeeded", JSON.stringify(r1).slice(0, 2000));
    assert.equal(r1.kind, "codex");
    const firstCall = JSON.stringify(fake.requests[fake.requests.length - 1]!.body.input);
    assert.match(firstCall, /remember the word heron/);

    turns = [{ text: "SECOND-ANSWER heron" }];
    const r2 = await runEnded(t, await say(t, c.id, "which word?"), ms);
    assert.equal(r2.status, "succeeded", JSON.stringify(r2).slice(0, 2000));
    const secondCall = JSON.stringify(fake.requests[fake.requests.length - 1]!.body.input);
    assert.match(secondCall, /User: remember the word heron/, "the first message is replayed");
    assert.match(secondCall, /Assistant: FIRST-ANSWER noted/, "and codex's first answer");
    assert.match(secondCall, /which word\?/);

    const messages = (await t.call("GET", `/api/conversations/${c.id}/messages`)).body.items;
    assert.deepEqual(
      messages.map((m: any) => [m.role, m.text.trim()]),
      [
        ["user", "remember the word heron"],
        ["agent", "FIRST-ANSWER noted"],
        ["user", "which word?"],
        ["agent", "SECOND-ANSWER heron"],
      ],
    );
  });
});
