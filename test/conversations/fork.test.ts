// Forking a conversation, on a real server with real boxes: the model is the fake
// OpenAI-compatible server on loopback (each request it got is looked at). A branch
// conversation of five messages whose third turn is still going on (its command waits in the
// box, its file written and not committed) is forked at its third message: the fork holds the
// three messages and their history, its branch the source's uncommitted changes (modified,
// added, untracked, deleted), and it goes on by itself; the source's turn ends as it would
// have, and its next turn sees none of the fork. The fork's commit is made with no checkout:
// its worktree is checked out on its first turn (once, however many first uses meet), and a
// link of the source stays a link. A bad at_message is 400. The CLI forks too.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { eq } from "drizzle-orm";
import { Branches } from "../../src/conversations/branches.js";
import type { ScriptTurn } from "../../src/models/script.js";
import { schema } from "../../src/store/index.js";
import { boxSkipReason } from "../box/fixture.js";
import { privateAllow } from "../support/bound.js";
import { runWarren, warrenJson } from "../support/cli.js";
import { dbLegs } from "../support/db.js";
import { startFakeOpenAI, type FakeModelServer } from "../support/fake-models.js";
import { shellOf } from "../support/org.js";
import { startTestServer, type TestServer } from "../support/server.js";
import { runEnded, say, assistantAgent, waitFor } from "./support.js";

for (const leg of dbLegs)
  describe(`forking a conversation on ${leg.name}`, { skip: boxSkipReason() ?? leg.skip ?? false }, () => {
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

    // the script's turn is the number of the model's answers in the request
    const script: ScriptTurn[] = [
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
    ];

    before(async () => {
      fake = await startFakeOpenAI(script);
      t = await startTestServer({
        leg,
        listen: true,
        env: { WARREN_EGRESS_PRIVATE_ALLOW: privateAllow(fake) },
      });
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
      // and a link to outside the home, which the fork keeps as a link
      await sh(
        `cd ${srcTree} && echo edited > README.md && mkdir -p sub && echo fresh > sub/new.txt && rm old.txt && ln -s /etc/passwd outside`,
      );
      const messages = (await t.call("GET", `/api/conversations/${c.id}/messages`)).body.items;
      assert.deepEqual(
        messages.map((m: any) => m.role),
        ["user", "agent", "user", "agent", "user"],
      );
      const sourceHead = (await sh(`git -C ~/proj rev-parse warren/${c.id}`)).trim();
      const srcIndex = () => sh(`sha256sum ~/proj/.git/worktrees/${c.id}/index`);
      const indexBefore = await srcIndex();

      for (const at of [0, 6, "msg_0000000000000000"]) {
        const bad = await t.call("POST", `/api/conversations/${c.id}/fork`, { at_message: at });
        assert.equal(bad.status, 400, JSON.stringify(bad.body));
        assert.equal(bad.body.error.code, "request.invalid");
      }
      const f = await t.call("POST", `/api/conversations/${c.id}/fork`, { at_message: 3 });
      assert.equal(f.status, 201, JSON.stringify(f.body));
      // the source's index was neither written nor locked
      assert.equal(await srcIndex(), indexBefore);
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
      // the link is stored as a link (its target, mode 120000), not what it points to
      assert.match(await git(`ls-tree warren/${fork.id} outside`), /^120000 blob /);
      assert.equal(await git(`cat-file -p warren/${fork.id}:outside`), "/etc/passwd");
      // all of it before any checkout: the fork's worktree is made on its first use
      const forkTree = `~/.warren/worktrees/${fork.id}`;
      assert.equal((await sh(`test -e ${forkTree} && echo yes || echo no`)).trim(), "no");
      // the source was not touched: its head, its worktree's changes still uncommitted
      assert.equal((await git(`rev-parse warren/${c.id}`)).trim(), sourceHead);
      assert.match(await sh(`cd ${srcTree} && git status --porcelain`), /draft\.txt/);

      // the source's third turn ends as it would have
      await sh("touch ~/go");
      assert.equal((await runEnded(t, third)).status, "succeeded");
      // the fork goes on from message 3, with nothing of the source after it; its first turn
      // finds the fork's files in its worktree (its command prints two of them)
      fake.script([
        ...script.slice(0, 2),
        { tool_calls: [{ name: "run_command", input: { command: "cat README.md sub/new.txt" } }] },
        { text: "fork saw" },
      ]);
      assert.equal((await runEnded(t, await say(t, fork.id, "fork goes on"))).status, "succeeded");
      fake.script(script);
      const [forkCall, afterCommand] = requestFor("fork goes on");
      assert.ok(forkCall && afterCommand, "the fork's turn called the model twice");
      assert.match(userTexts(forkCall.body), /write the notes[\s\S]*remember two[\s\S]*fork goes on/);
      assert.doesNotMatch(JSON.stringify(forkCall.body), /draft three|noted two|drafted three/);
      assert.match(JSON.stringify(afterCommand.body), /edited\\nfresh/);
      assert.equal(await sh(`cat ${forkTree}/sub/new.txt`), "fresh\n");
      // what is left in the fork's worktree is committed when it closes
      await sh(`echo forked-work > ${forkTree}/fork-only.txt`);
      assert.equal((await t.call("POST", `/api/conversations/${fork.id}/close`)).status, 200);
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

      // two first uses of a fork's worktree at once: one checkout, both find it
      const branches = new Branches(t.server.store.db, t.server.workloads, t.server.provider.homes);
      const row = await branches.of(cli.id);
      const [agentRow] = await t.server.store.db
        .select()
        .from(schema.agents)
        .where(eq(schema.agents.id, agent));
      assert.ok(row && agentRow);
      const firstUses = await Promise.allSettled([
        branches.ready(agentRow, row),
        branches.ready(agentRow, row),
      ]);
      assert.deepEqual(
        firstUses.map((u) => u.status),
        ["fulfilled", "fulfilled"],
        JSON.stringify(firstUses),
      );
      assert.equal(await sh(`cat ~/.warren/worktrees/${cli.id}/README.md`), "edited\n");
      assert.equal(
        (await sh(`git -C ~/proj worktree list --porcelain | grep -c "worktrees/${cli.id}$"`)).trim(),
        "1",
      );
    });
  });
