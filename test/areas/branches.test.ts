// A branch per conversation, on real boxes (AUTH_MODE=trusted-header): a conversation made with
// `repo` works in its own worktree on warren/<id>; each turn leaves a commit; the diff; a land
// by an owner, refused to an editor; a conflicting land refused with its files, and a land that
// would overwrite someone's uncommitted change refused too, nothing lost either way.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { dbLegs } from "../support/db.js";
import { asMember, orgWithAgent, shellOf } from "../support/org.js";
import { startTestServer, type TestServer } from "../support/server.js";
import { sendTurn } from "../support/turns.js";

const OWNER = "owner@example.com";
const EDITOR = "support@example.com";
/** A viewer who holds the repository's area, and one who holds another. */
const VIEWER = "viewer@example.com";
const OTHER = "other@example.com";

for (const leg of dbLegs)
  describe(`branches on ${leg.name}`, { skip: leg.skip ?? false }, () => {
    let t: TestServer;
    let agent: string;
    const as = asMember(() => t);
    const owner = as(OWNER);
    const editor = as(EDITOR);
    const sh = shellOf(owner, () => agent);
    const git = (args: string) => sh(`git -C ~/proj/app ${args}`);
    const turn = async (as: typeof owner, conversation: string, text: string) => {
      const { run, events } = await sendTurn(as, owner, conversation, text);
      assert.equal(run.status, "succeeded", JSON.stringify(events));
      return events;
    };

    before(async () => {
      t = await startTestServer({ leg, env: { AUTH_MODE: "trusted-header" } });
      ({ agent } = await orgWithAgent(owner, {
        name: "coder",
        tools: ["run_command"],
        areas: { proj: ["proj"], other: ["other"] },
        members: [
          { email: EDITOR, role: "writer", areas: ["proj"] },
          // a viewer who holds the repository's area, and one who holds another
          { email: VIEWER, role: "viewer", areas: ["proj"] },
          { email: OTHER, role: "viewer", areas: ["other"] },
        ],
      }));
      const script = [
        {
          tool_calls: [
            { name: "run_command", input: { command: "echo one > notes.txt; git status 2>&1 | head -1" } },
          ],
        },
        { text: "wrote one" },
        {
          tool_calls: [
            {
              name: "run_command",
              input: { command: "echo two >> notes.txt; echo branch-readme > README.md" },
            },
          ],
        },
        { text: "wrote two" },
      ];
      await sh(`printf '%s' '${JSON.stringify(script)}' > ~/turns.json`);
      await sh(
        "mkdir -p ~/proj/app && cd ~/proj/app && git init -q -b main && echo init > README.md && git add -A && git -c user.name=o -c user.email=o@x commit -qm init",
      );
    });
    after(async () => {
      await t?.close();
    });

    test("two turns leave two commits on the conversation's branch; the diff; an editor cannot land, an owner does", async () => {
      const outside = await editor("POST", `/api/agents/${agent}/conversations`, { repo: "elsewhere" });
      assert.equal(outside.status, 403);
      assert.equal(outside.body.error.code, "area.refused");
      const notRepo = await editor("POST", `/api/agents/${agent}/conversations`, { repo: "proj" });
      assert.equal(notRepo.status, 400);
      const c = await editor("POST", `/api/agents/${agent}/conversations`, {
        title: "notes",
        repo: "proj/app",
      });
      assert.equal(c.status, 201, JSON.stringify(c.body));
      assert.equal(c.body.branch, `warren/${c.body.id}`);
      assert.equal(c.body.base, "main");
      const first = await turn(editor, c.body.id, "Write the notes\nplease");
      // the turn runs in its worktree with no git history on disk
      const said = first.find((e) => e.type === "tool_call")?.data.output as string;
      assert.match(said, /not a git repository/);
      assert.ok(first.some((e) => e.type === "commit"));
      await turn(editor, c.body.id, "Add a second line");
      const log = await git(`log --format=%an%x09%s%x09%b warren/${c.body.id}`);
      const lines = log.split("\n").filter((l) => l.trim() !== "");
      assert.deepEqual(lines.slice(0, 2), [
        "coder\tAdd a second line\tAsked by support",
        "coder\tWrite the notes\tAsked by support",
      ]);
      // main is untouched until someone lands it
      assert.equal(await git("show main:README.md"), "init\n");

      const diff = await editor("GET", `/api/conversations/${c.body.id}/diff`);
      assert.equal(diff.status, 200, JSON.stringify(diff.body));
      assert.equal(diff.body.base, "main");
      assert.equal(diff.body.branch, `warren/${c.body.id}`);
      assert.equal(diff.body.ahead, 2);
      assert.equal(diff.body.behind, 0);
      assert.deepEqual(
        diff.body.files.map((f: any) => [f.path, f.status, f.additions, f.deletions]),
        [
          ["README.md", "modified", 1, 1],
          ["notes.txt", "added", 2, 0],
        ],
      );
      assert.match(diff.body.patch, /^\+two$/m);
      // a viewer whose areas hold the conversation's reads it and its diff, and cannot talk in it
      const viewer = as(VIEWER);
      assert.deepEqual(
        (await viewer("GET", `/api/agents/${agent}/conversations`)).body.items.map((x: any) => x.id),
        [c.body.id],
      );
      const seen = await viewer("GET", `/api/conversations/${c.body.id}/diff`);
      assert.equal(seen.status, 200, JSON.stringify(seen.body));
      assert.equal(seen.body.patch, diff.body.patch);
      const talk = await viewer("POST", `/api/conversations/${c.body.id}/messages`, { text: "hi" });
      assert.equal(talk.status, 403);
      assert.equal(talk.body.error.code, "access.denied");
      // a viewer of another area finds neither the conversation nor its diff
      const other = as(OTHER);
      assert.deepEqual((await other("GET", `/api/agents/${agent}/conversations`)).body.items, []);
      for (const url of [`/api/conversations/${c.body.id}`, `/api/conversations/${c.body.id}/diff`]) {
        const r = await other("GET", url);
        assert.equal(r.status, 404, `${url}: ${JSON.stringify(r.body)}`);
        assert.equal(r.body.error.code, "not_found");
      }

      const refused = await editor("POST", `/api/conversations/${c.body.id}/land`);
      assert.equal(refused.status, 403);
      assert.equal(refused.body.error.code, "access.denied");
      const landed = await owner("POST", `/api/conversations/${c.body.id}/land`);
      assert.equal(landed.status, 200, JSON.stringify(landed.body));
      assert.equal(landed.body.landed, true);
      assert.equal((await git("rev-parse main")).trim(), landed.body.commit);
      // the base's checkout moved with it
      assert.equal(await sh("cat ~/proj/app/notes.txt"), "one\ntwo\n");

      // closed: its worktree goes, its branch stays
      assert.equal((await editor("POST", `/api/conversations/${c.body.id}/close`)).status, 200);
      assert.equal(
        (await sh(`test -e ~/.warren/worktrees/${c.body.id} && echo there || echo gone`)).trim(),
        "gone",
      );
      assert.match(await git("branch --list 'warren/*'"), new RegExp(`warren/${c.body.id}`));
    });

    test("a conflicting land is refused with its files; a land over someone's uncommitted change too; nothing is lost", async () => {
      const c = await owner("POST", `/api/agents/${agent}/conversations`, { repo: "proj/app" });
      assert.equal(c.status, 201, JSON.stringify(c.body));
      await turn(owner, c.body.id, "Rewrite the notes");
      // meanwhile someone changes the same lines on main
      await sh(
        "cd ~/proj/app && echo main-change > notes.txt && git -c user.name=o -c user.email=o@x commit -qam 'main change'",
      );
      const mainBefore = (await git("rev-parse main")).trim();
      const conflict = await owner("POST", `/api/conversations/${c.body.id}/land`);
      assert.equal(conflict.status, 409, JSON.stringify(conflict.body));
      assert.equal(conflict.body.error.code, "branch.conflict");
      assert.deepEqual(conflict.body.error.files, ["notes.txt"]);
      assert.equal((await git("rev-parse main")).trim(), mainBefore);
      assert.equal(await git(`show warren/${c.body.id}:notes.txt`), "one\n");
      assert.equal(await sh("cat ~/proj/app/notes.txt"), "main-change\n");

      // a clean merge that would overwrite an uncommitted change in the base's checkout
      const d = await owner("POST", `/api/agents/${agent}/conversations`, { repo: "proj/app" });
      await turn(owner, d.body.id, "Rewrite the notes again");
      await sh("echo 'local work' > ~/proj/app/notes.txt");
      const over = await owner("POST", `/api/conversations/${d.body.id}/land`);
      assert.equal(over.status, 409, JSON.stringify(over.body));
      assert.equal(over.body.error.code, "branch.conflict");
      assert.deepEqual(over.body.error.files, ["notes.txt"]);
      assert.equal(await sh("cat ~/proj/app/notes.txt"), "local work\n");
      assert.equal((await git("rev-parse main")).trim(), mainBefore);
      assert.equal(await git(`show warren/${d.body.id}:notes.txt`), "one\n");
    });
  });
