// The fence on a harness kind's turn, on a real box (AUTH_MODE=trusted-header): a member with
// area support talks with a codex agent (its real CLI, against a scripted Responses server on
// loopback behind the gateway); the command the model has codex run finds nothing of the home
// outside support/ (no other folder, no .git history, no other conversation's CLI state),
// while the CLI's own session of this conversation is kept from one turn to the next.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { boxSkipReason } from "../box/fixture.js";
import {
  startFakeResponses,
  type FakeResponsesServer,
  type ResponsesTurn,
} from "../support/fake-responses.js";
import { putHomeFile } from "../support/agent-runs.js";
import { harnessSkip, startHarnessServer } from "../support/harness.js";
import type { TestServer } from "../support/server.js";
import { asMember, makeAgent, modelKey, orgAndMachine } from "../support/org.js";
import { sendTurn } from "../support/turns.js";

const KEY = "sk-proj-fence-4b7d1e9a0c";
const OWNER = "owner@example.com";
const SUPPORT = "support@example.com";
const skip = boxSkipReason() ?? harnessSkip("codex");

/** What the turn's command reports of the home it finds. */
const LOOK = [
  `echo "home: $(ls -A ~ | tr '\\n' ' ')"`,
  `echo "sessions: $(ls -A ~/.warren/conversations | tr '\\n' ' ')"`,
  "cat ~/support/a.txt",
  "test -e ~/secret/b.txt && echo FOUND-SECRET",
  "test -e ~/support/.git/HEAD && echo FOUND-HISTORY",
  "test -e ~/support/deep/.git/HEAD && echo FOUND-NESTED-HISTORY",
  "find ~ -name 'b.txt' 2>/dev/null | sed 's/^/found: /'",
  "echo LOOK-END",
].join("; ");

describe("a fenced harness turn", { skip }, () => {
  let t: TestServer;
  let responses: FakeResponsesServer;
  let turns: ResponsesTurn[] = [];
  let agent = "";
  const as = asMember(() => t);
  const owner = as(OWNER);
  const put = (p: string, text: string) => putHomeFile(t, agent, p, text, OWNER);
  const turn = async (conversation: string, text: string) => {
    const { run, events } = await sendTurn(as(SUPPORT), owner, conversation, text, 240_000);
    assert.equal(run.status, "succeeded", JSON.stringify({ run, events }).slice(0, 4000));
    return run;
  };

  before(async () => {
    responses = await startFakeResponses(
      new Proxy([] as ResponsesTurn[], { get: (_t, k) => Reflect.get(turns, k) }),
    );
    t = await startHarnessServer(["codex"], [responses], { AUTH_MODE: "trusted-header" });
    const place = await orgAndMachine(owner, "fenced-harness", { max_workspace_mib: 500 });
    const org = place.org.id as string;
    const m = place.machine;
    await modelKey(owner, org, [responses], KEY, "MODEL_KEY");
    const a = await makeAgent(
      owner,
      { org_id: org, machine_id: m.id },
      {
        name: "codex",
        kind: "codex",
        model: {
          provider: "openai",
          name: "gpt-5-mini",
          base_url: responses.baseUrl,
          key_secret: "MODEL_KEY",
        },
      },
    );
    agent = a.id;
    await put("support/a.txt", "support notes\n");
    await put("support/.git/HEAD", "ref: refs/heads/main\n");
    await put("support/deep/.git/HEAD", "ref: refs/heads/main\n");
    await put("secret/b.txt", "the plans\n");
    // another conversation's CLI state, outside this one's fence
    await put(".warren/conversations/cnv_0000000000000000/codex/x.txt", "another's session\n");
    assert.equal(
      (await owner("PUT", `/api/orgs/${org}/areas/support`, { folders: ["support"] })).status,
      200,
    );
    const ed = await owner("PUT", `/api/orgs/${org}/members`, {
      email: SUPPORT,
      role: "writer",
      areas: ["support"],
    });
    assert.equal(ed.status, 200, JSON.stringify(ed.body));
  });
  after(async () => {
    await t?.close();
    await responses?.close();
  });

  test("codex's command finds nothing outside the starter's area; its own session is kept", async () => {
    const c = await as(SUPPORT)("POST", `/api/agents/${agent}/conversations`, { title: "look" });
    assert.equal(c.status, 201, JSON.stringify(c.body));
    turns = [{ call: { tool: "exec", command: LOOK } }, { text: "SAW:\n{{outputs}}\nDONE" }];
    const first = await turn(c.body.id, "look around");
    const seen = first.output as string;
    assert.match(seen, /LOOK-END/, seen);
    assert.match(seen, /^home: \.warren support $/m);
    assert.match(seen, new RegExp(`^sessions: ${c.body.id} $`, "m"));
    assert.match(seen, /^support notes$/m);
    assert.doesNotMatch(seen, /FOUND-SECRET|FOUND-HISTORY|FOUND-NESTED-HISTORY|found: /);
    // the rest of the home is as it was
    assert.equal((await owner("GET", `/api/agents/${agent}/files/secret/b.txt`)).body, "the plans\n");
    const kept = await owner(
      "GET",
      `/api/agents/${agent}/folder?path=.warren/conversations/${c.body.id}/codex`,
    );
    assert.equal(kept.status, 200, JSON.stringify(kept.body));
    assert.ok(
      kept.body.entries.some((e: { name: string }) => e.name === "sessions"),
      `codex's session of this conversation is in the home: ${JSON.stringify(kept.body)}`,
    );
    // the next turn resumes it: the model sees the first exchange as codex's own history
    // (the fake answers by the number of answers already in the request: two, resumed)
    turns = [...turns, { text: "SECOND-ANSWER" }];
    const second = await turn(c.body.id, "and again?");
    assert.match(second.output, /SECOND-ANSWER/);
    const input = JSON.stringify(responses.requests[responses.requests.length - 1]!.body.input);
    assert.match(input, /look around/);
    assert.doesNotMatch(input, /This is a conversation that goes on/, "resumed, not replayed");
  });
});
