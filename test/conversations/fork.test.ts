// Forking a conversation, on a real server with real boxes: the model is the fake
// OpenAI-compatible server on loopback (each request it got is looked at). A branch
// conversation of five messages whose third turn is still going on (its command waits in the
// box, its file written and not committed) is forked at its third message: the fork holds the
// three messages and their history, its branch the source's uncommitted changes (modified,
// added, untracked, deleted), and it goes on by itself; the source's turn ends as it would
// have, and its next turn sees none of the fork. A bad at_message is 400. The CLI forks too.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { boxSkipReason } from "../box/fixture.js";
import { privateAllow } from "../support/bound.js";
import { runWarren, warrenJson } from "../support/cli.js";
import { startFakeOpenAI, type FakeModelServer } from "../support/fake-models.js";
import { shellOf } from "../support/org.js";
import { startTestServer, type TestServer } from "../support/server.js";
import { runEnded, say, assistantAgent, waitFor } from "./support.js";

describe("forking a conversation", { skip: boxSkipReason() ?? false }, () => {
  let t: TestServer;
  let fake: FakeModelServer;
  let agent: string;
  const sh = shellOf(
    (m, u, b) => t.call(m, u, b),
    () => agent,
  );
  /** The last request the fake got whose last user message is `text`. */
  const requestFor = (text: string) =>
    fake.requests.filter((r) => {
      const users = (r.body?.messages ?? []).filter((m: any) => m.role === "user");
      return JSON.stringify(users.at(-1)?.content ?? "").includes(text);
    });
  const userTexts = (body: any): string =>
    JSON.stringify((body?.messages ?? []).filter((m: any) => m.role === "user"));

  before(async () => {
    // the script's turn is the number of the model's answers in the request
    fake = await startFakeOpenAI([
      { tool_calls: [{ name: "run_command", input: { command: "echo one > notes.txt" } }] },
      { text: "wrote one" },
      { text: "noted two" },
      {
        tool_calls: [
          {
            name: "run_command",
            input: { command: "echo draft > draft.txt; while [ ! -e ~/go ]; do sleep 0.05; done" },
          },
        ],
      },
      { text: "drafted three" },
      { text: "four seen" },
    ]);
    t = await startTestServer({ listen: true, env: { WARREN_EGRESS_PRIVATE_ALLOW: privateAllow(fake) } });
    const org = (await t.call("POST", "/api/orgs", { name: "forks" })).body;
    const machine = (
      await t.call("POST", "/api/machines", { org_id: org.id, name: "m", max_workspace_mib: 500 })
    ).body;
    agent = (
      await assistantAgent(t, { org: org.id, machine: machine.id }, "coder", {
        baseUrl: fake.baseUrl,
        model: "fork-model",
        tools: ["run_command"],
      })
    ).id;
    await sh(
      "mkdir -p ~/proj && cd ~/proj && git init -q -b main && echo init > README.md && echo gone > old.txt && git add -A && git -c user.name=o -c user.email=o@x commit -qm init",
    );
  });
  after(async () => {
    // every box goes with the server (TestServer.close removes them)
    await t?.close();
    await fake?.close();
  });

  test("a fork at message 3 of five holds the source's uncommitted work and goes on by itself", async () => {
    const c = (await t.call("POST", `/api/agents/${agent}/conversations`, { title: "src", repo: "proj" }))
      .body;
    assert.equal(c.branch, `warren/${c.id}`);
    for (const text of ["write the notes", "remember two"])
      assert.equal((await runEnded(t, await say(t, c.id, text))).status, "succeeded");
    // the third turn goes on: its command wrote draft.txt and waits
    const third = await say(t, c.id, "draft three");
    const srcTree = `~/.warren/worktrees/${c.id}`;
    await waitFor("the third turn's file", async () =>
      (await sh(`test -e ${srcTree}/draft.txt && echo yes || echo no`)).trim() === "yes" ? true : null,
    );
    // and a person's changes, not committed: one file changed, one new in a folder, one removed
    await sh(
      `cd ${srcTree} && echo edited > README.md && mkdir -p sub && echo fresh > sub/new.txt && rm old.txt`,
    );
    const messages = (await t.call("GET", `/api/conversations/${c.id}/messages`)).body.items;
    assert.deepEqual(
      messages.map((m: any) => m.role),
      ["user", "agent", "user", "agent", "user"],
    );
    const sourceHead = (await sh(`git -C ~/proj rev-parse warren/${c.id}`)).trim();

    for (const at of [0, 6, "msg_0000000000000000"]) {
      const bad = await t.call("POST", `/api/conversations/${c.id}/fork`, { at_message: at });
      assert.equal(bad.status, 400, JSON.stringify(bad.body));
      assert.equal(bad.body.error.code, "request.invalid");
    }
    const f = await t.call("POST", `/api/conversations/${c.id}/fork`, { at_message: 3 });
    assert.equal(f.status, 201, JSON.stringify(f.body));
    const fork = f.body;
    assert.notEqual(fork.id, c.id);
    assert.equal(fork.branch, `warren/${fork.id}`);
    assert.equal(fork.base, "main");
    assert.deepEqual([fork.persona_id, fork.areas, fork.repo], [c.persona_id, c.areas, c.repo]);
    const kept = (await t.call("GET", `/api/conversations/${fork.id}/messages`)).body.items;
    assert.deepEqual(
      kept.map((m: any) => m.text),
      messages.slice(0, 3).map((m: any) => m.text),
    );
    // the fork's branch: the source's head, then one commit of its uncommitted changes
    const git = (args: string) => sh(`git -C ~/proj ${args}`);
    assert.equal((await git(`rev-parse warren/${fork.id}~1`)).trim(), sourceHead);
    assert.equal(await git(`show warren/${fork.id}:draft.txt`), "draft\n");
    assert.equal(await git(`show warren/${fork.id}:README.md`), "edited\n");
    assert.equal(await git(`show warren/${fork.id}:sub/new.txt`), "fresh\n");
    assert.equal(await git(`show warren/${fork.id}:notes.txt`), "one\n");
    assert.doesNotMatch(await git(`ls-tree --name-only warren/${fork.id}`), /old\.txt/);
    // the source was not touched: its head, its worktree's changes still uncommitted
    assert.equal((await git(`rev-parse warren/${c.id}`)).trim(), sourceHead);
    assert.match(await sh(`cd ${srcTree} && git status --porcelain`), /draft\.txt/);

    // the source's third turn ends as it would have
    await sh("touch ~/go");
    assert.equal((await runEnded(t, third)).status, "succeeded");
    // the fork goes on from message 3, with nothing of the source after it
    await sh(`echo forked-work > ~/.warren/worktrees/${fork.id}/fork-only.txt`);
    assert.equal((await runEnded(t, await say(t, fork.id, "fork goes on"))).status, "succeeded");
    const [forkCall] = requestFor("fork goes on");
    assert.ok(forkCall, "the fork's turn called the model");
    assert.match(userTexts(forkCall.body), /write the notes[\s\S]*remember two[\s\S]*fork goes on/);
    assert.doesNotMatch(JSON.stringify(forkCall.body), /draft three|noted two|drafted three/);
    assert.equal(await git(`show warren/${fork.id}:fork-only.txt`), "forked-work\n");

    // the source's next turn has its own five messages and answer, none of the fork
    assert.equal((await runEnded(t, await say(t, c.id, "four please"))).status, "succeeded");
    const [srcCall] = requestFor("four please");
    assert.ok(srcCall, "the source's turn called the model");
    assert.match(
      userTexts(srcCall.body),
      /write the notes[\s\S]*remember two[\s\S]*draft three[\s\S]*four please/,
    );
    assert.doesNotMatch(JSON.stringify(srcCall.body), /fork goes on/);
    assert.equal((await t.call("GET", `/api/conversations/${c.id}/messages`)).body.items.length, 8);
    const srcFiles = await git(`ls-tree -r --name-only warren/${c.id}`);
    assert.match(srcFiles, /draft\.txt/);
    assert.doesNotMatch(srcFiles, /fork-only\.txt/);

    // the CLI: a fork at the second message, by its place; a bad one is the server's 400
    const cli = await warrenJson(["--json", "conversations", "fork", c.id, "--at", "2"], { url: t.url });
    const byCli = (await t.call("GET", `/api/conversations/${cli.id}/messages`)).body.items;
    assert.deepEqual(
      byCli.map((m: any) => m.text),
      messages.slice(0, 2).map((m: any) => m.text),
    );
    const badCli = await runWarren(["conversations", "fork", c.id, "--at", "99"], { url: t.url });
    assert.notEqual(badCli.code, 0);
    assert.match(badCli.stderr, /request\.invalid|at_message/);
  });
});
