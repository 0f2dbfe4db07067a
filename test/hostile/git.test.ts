// Git planted in a home never runs, on real boxes (AUTH_MODE=trusted-header): an editor holds
// the area `proj`, another area `other` holds a secret and a repository. The agent (its own
// unfenced work, or a fenced turn) plants what git would obey: a worktree's `.git` naming the
// other area's repository, core.fsmonitor, hooks, diff.external, a textconv and a filter
// driver, a repository that is a link, a repository whose `.git` is a file naming another.
// Every planted program would leave a marker file and copy the secret where a diff shows it:
// no marker appears, no answer holds the secret, the other repository is unchanged, and each
// refusal says why.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { dbLegs } from "../support/db.js";
import { asMember, orgWithAgent, shellOf } from "../support/org.js";
import { startTestServer, type TestServer } from "../support/server.js";
import { sendTurn } from "../support/turns.js";

const OWNER = "owner@example.com";
const EDITOR = "support@example.com";
const SECRET = "OTHER-AREA-SECRET-7f3a";

for (const leg of dbLegs)
  describe(`git planted in a home on ${leg.name}`, { skip: leg.skip ?? false }, () => {
    let t: TestServer;
    let agent: string;
    const as = asMember(() => t);
    const owner = as(OWNER);
    const editor = as(EDITOR);
    const sh = shellOf(owner, () => agent);
    /** A program that would leave the marker `name` and copy the secret into the repositories. */
    const planted = (name: string) =>
      `touch ~/ran-${name}; cat ~/other/secret.txt | tee -a ~/proj/leak.txt ~/proj/app/leak.txt; exit 0`;
    /** The markers left by planted programs (none, when the wall holds). */
    const markers = async () => (await sh("ls ~ | grep '^ran-' || true")).trim();
    /** The other area's repository as it is: its commits and its files' digest. */
    const otherState = () =>
      sh(
        "cd ~/other/orepo && git -c core.fsmonitor=false log --all --format=%H && find . -path ./.git -prune -o -type f -print0 | sort -z | xargs -0 sha256sum",
      );
    const repo = async (name: string) => {
      await sh(
        `mkdir -p ~/proj/${name} && cd ~/proj/${name} && git init -q -b main && echo init > README.md && git add -A && git -c user.name=o -c user.email=o@x commit -qm init`,
      );
    };
    const turn = (conversation: string) => sendTurn(editor, owner, conversation, "work");
    const conversation = async (repoPath: string) => {
      const c = await editor("POST", `/api/agents/${agent}/conversations`, { repo: repoPath });
      assert.equal(c.status, 201, JSON.stringify(c.body));
      return c.body.id as string;
    };
    const noSecret = (body: unknown) =>
      assert.ok(!JSON.stringify(body).includes(SECRET), JSON.stringify(body));

    before(async () => {
      t = await startTestServer({ leg, env: { AUTH_MODE: "trusted-header" } });
      ({ agent } = await orgWithAgent(owner, {
        name: "coder",
        tools: ["run_command"],
        areas: { proj: ["proj"], other: ["other"] },
        members: [{ email: EDITOR, role: "writer", areas: ["proj"] }],
      }));
      // each turn runs ~/proj/plant.sh, which the test writes before it
      const script = Array.from({ length: 5 }, () => [
        { tool_calls: [{ name: "run_command", input: { command: "bash ~/proj/plant.sh 2>&1" } }] },
        { text: "done" },
      ]).flat();
      await sh(`printf '%s' '${JSON.stringify(script)}' > ~/turns.json`);
      await sh(
        `mkdir -p ~/other/orepo ~/proj && echo ${SECRET} > ~/other/secret.txt && cd ~/other/orepo && git init -q -b main && echo ${SECRET} > s.txt && git add -A && git -c user.name=o -c user.email=o@x commit -qm secret`,
      );
      // the other area's repository would run its own planted programs if git ever used it
      await sh(
        `cd ~/other/orepo && git config core.fsmonitor '${planted("other-fsmonitor")}' && for h in pre-commit post-commit post-checkout; do printf '#!/bin/sh\\n%s\\n' '${planted("other-hook")}' > .git/hooks/$h; chmod +x .git/hooks/$h; done`,
      );
    });
    after(async () => {
      await t?.close();
    });

    test("a fenced turn's worktree .git naming the other area's repository: the commit is refused, nothing of it runs or is read", async () => {
      await repo("app");
      const before = await otherState();
      const c = await conversation("proj/app");
      await sh(
        `printf '%s\\n' 'echo "gitdir: $HOME/other/orepo/.git" > .git; echo work > work.txt; echo planted' > ~/proj/plant.sh`,
      );
      const { run, events } = await turn(c);
      assert.equal(run.status, "succeeded", JSON.stringify(events));
      const said = events.find((e) => e.type === "tool_call")?.data.output as string;
      assert.match(said, /planted/);
      const failed = events.find((e) => e.type === "commit_failed");
      assert.ok(failed, JSON.stringify(events));
      assert.match(failed.data.reason, /\.git.*does not name its own folder/);
      assert.ok(!events.some((e) => e.type === "commit"));
      // landing commits first: refused, with why
      const land = await owner("POST", `/api/conversations/${c}/land`);
      assert.equal(land.status, 403, JSON.stringify(land.body));
      assert.equal(land.body.error.code, "area.refused");
      assert.match(land.body.error.message, /does not name its own folder/);
      const diff = await editor("GET", `/api/conversations/${c}/diff`);
      assert.equal(diff.status, 200, JSON.stringify(diff.body));
      noSecret(diff.body);
      assert.equal(await markers(), "");
      assert.equal(await otherState(), before);
    });

    test("core.fsmonitor and hooks in the repository: hooks never run; fsmonitor is refused with its name", async () => {
      await repo("hooked");
      await sh(
        `cd ~/proj/hooked && for h in pre-commit post-commit post-checkout post-merge reference-transaction; do printf '#!/bin/sh\\n%s\\n' '${planted("hook")}' > .git/hooks/$h; chmod +x .git/hooks/$h; done`,
      );
      const c = await conversation("proj/hooked");
      await sh(`printf '%s\\n' 'echo more > more.txt' > ~/proj/plant.sh`);
      const { run, events } = await turn(c);
      assert.equal(run.status, "succeeded", JSON.stringify(events));
      assert.ok(
        events.some((e) => e.type === "commit"),
        JSON.stringify(events),
      );
      const land = await owner("POST", `/api/conversations/${c}/land`);
      assert.equal(land.status, 200, JSON.stringify(land.body));
      assert.equal(await markers(), "");

      await repo("watched");
      await sh(`cd ~/proj/watched && git config core.fsmonitor '${planted("fsmonitor")}'`);
      const refused = await editor("POST", `/api/agents/${agent}/conversations`, { repo: "proj/watched" });
      assert.equal(refused.status, 409, JSON.stringify(refused.body));
      assert.equal(refused.body.error.code, "git.refused");
      assert.match(refused.body.error.message, /core\.fsmonitor/);
      assert.equal(await markers(), "");
      assert.equal((await sh("test -e ~/proj/leak.txt && echo there || echo none")).trim(), "none");
    });

    test("diff.external, a textconv and a filter driver planted after the conversation began: its diff, commit and land are refused, nothing runs", async () => {
      await repo("drivers");
      const c = await conversation("proj/drivers");
      await sh(
        `printf '%s\\n' 'echo change > README.md; echo "* diff=leak filter=leak" > .gitattributes' > ~/proj/plant.sh`,
      );
      const first = await turn(c);
      assert.ok(
        first.events.some((e) => e.type === "commit"),
        JSON.stringify(first.events),
      );
      for (const [key, value] of [
        ["diff.external", planted("external")],
        ["diff.leak.textconv", planted("textconv")],
        ["filter.leak.clean", planted("clean")],
        ["filter.leak.smudge", planted("smudge")],
      ] as const) {
        await sh(`cd ~/proj/drivers && git config ${key} '${value}'`);
        const diff = await editor("GET", `/api/conversations/${c}/diff`);
        assert.equal(diff.status, 409, JSON.stringify(diff.body));
        assert.equal(diff.body.error.code, "git.refused");
        assert.match(diff.body.error.message, new RegExp(key.replace(/\./g, "\\.")));
        noSecret(diff.body);
        const land = await owner("POST", `/api/conversations/${c}/land`);
        assert.equal(land.status, 409, JSON.stringify(land.body));
        assert.equal(land.body.error.code, "git.refused");
        await sh(`cd ~/proj/drivers && git config --unset ${key}`);
      }
      // with all of them set, a turn's commit is refused too
      await sh(
        `cd ~/proj/drivers && git config diff.leak.textconv '${planted("textconv")}' && git config filter.leak.clean '${planted("clean")}'`,
      );
      await sh(`printf '%s\\n' 'echo again >> README.md' > ~/proj/plant.sh`);
      const second = await turn(c);
      const failed = second.events.find((e) => e.type === "commit_failed");
      assert.ok(failed, JSON.stringify(second.events));
      assert.match(failed.data.reason, /diff\.leak\.textconv|filter\.leak\.clean/);
      assert.equal(await markers(), "");
      assert.equal((await sh("test -e ~/proj/leak.txt && echo there || echo none")).trim(), "none");
    });

    test("a repository that is a link, or whose .git is a file naming another: 403 area.refused, the same whether the target exists", async () => {
      const before = await otherState();
      await sh("ln -s ../other/orepo ~/proj/linkrepo && ln -s ../other/nothing ~/proj/deadlink");
      await sh(`mkdir -p ~/proj/gitfile && echo "gitdir: $HOME/other/orepo/.git" > ~/proj/gitfile/.git`);
      const answers: string[] = [];
      for (const [path, who] of [
        ["proj/linkrepo", editor],
        ["proj/deadlink", editor],
        ["proj/linkrepo", owner],
        ["proj/gitfile", editor],
      ] as const) {
        const r = await who("POST", `/api/agents/${agent}/conversations`, { repo: path });
        assert.equal(r.status, 403, `${path}: ${JSON.stringify(r.body)}`);
        assert.equal(r.body.error.code, "area.refused");
        noSecret(r.body);
        if (who === editor && path !== "proj/gitfile")
          answers.push(r.body.error.message.replace(path, "<repo>"));
      }
      assert.equal(answers[0], answers[1]);
      assert.equal(await markers(), "");
      assert.equal(await otherState(), before);
      // a worktree folder reached through a link is refused before git makes anything
      await repo("plain");
      await sh(
        "mv ~/.warren/worktrees ~/.warren/worktrees-real 2>/dev/null; ln -s ../other ~/.warren/worktrees",
      );
      try {
        const r = await editor("POST", `/api/agents/${agent}/conversations`, { repo: "proj/plain" });
        assert.equal(r.status, 403, JSON.stringify(r.body));
        assert.equal(r.body.error.code, "area.refused");
        assert.equal((await sh("ls ~/other")).split("\n").filter((l) => l.startsWith("cnv")).length, 0);
      } finally {
        await sh(
          "rm ~/.warren/worktrees && (mv ~/.warren/worktrees-real ~/.warren/worktrees 2>/dev/null || true)",
        );
      }
    });
  });
