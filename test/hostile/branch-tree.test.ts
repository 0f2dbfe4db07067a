// A turn's tree is its branch's alone, on real boxes (AUTH_MODE=trusted-header): an editor
// holds the area `proj` (the repositories proj/app and proj/lib), another area `other` holds a
// secret and a repository. A branch turn (the scripted model calls run_command and the file
// tools) does `cd ~/proj/app && echo x > file`, writes by absolute path, through `..`, through
// another process's /proc root, and with write_file: everything lands in its own worktree,
// which it finds at the repository's folder; the base checkout on the host is unchanged, the
// next land goes through, and nothing else of the home was written. A turn without a
// repository finds no history when its starter is fenced (every .git is an empty folder, the
// file tools refuse one), and all of it when the starter holds the whole home.
import assert from "node:assert/strict";
import fs from "node:fs/promises";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { dbLegs } from "../support/db.js";
import { asMember, orgWithAgent, shellOf, type Call } from "../support/org.js";
import { startTestServer, type TestServer } from "../support/server.js";
import { waitFor } from "../conversations/support.js";

const OWNER = "owner@example.com";
const EDITOR = "support@example.com";
const SECRET = "OTHER-AREA-SECRET-51c2";

/** What a branch turn's command does to its repository's folder, by every name it has. */
const PLANT = `
echo "pwd=$(pwd)"
cd ~/proj/app && echo x > file && echo changed > README.md && mkdir -p sub && echo s > sub/s.txt
ls -a
echo abs > "$HOME/proj/app/abs.txt"
cd ~/proj/app/sub/.. && echo dotdot > ../app/dotdot.txt
echo viaproj > ~/proj/../proj/app/viaproj.txt
echo "others=$(ps -eo args= | grep -c '^sleep 120$')"
for p in /proc/[0-9]*/root"$HOME"/proj/app; do echo "$p" > "$p/proc-root.txt" 2>/dev/null; done
echo "gitfile=$(cat .git)"
git log --oneline 2>&1 | head -1
echo "history=$(find ~ -name .git -type d -not -empty 2>/dev/null | wc -l)"
echo "readme=$(cat ~/proj/app/README.md)"
`;

/** What a turn without a repository looks for: history anywhere in the home. */
const LOOK = `
echo "found=$(find ~ -name .git -type d -not -empty 2>/dev/null | sort | tr '\\n' ' ')"
echo "config=$(cat ~/proj/lib/.git/config 2>&1 | head -1)"
git -C ~/proj/lib log --oneline 2>&1 | head -1
`;

for (const leg of dbLegs)
  describe(`a turn's tree is its branch's alone on ${leg.name}`, { skip: leg.skip ?? false }, () => {
    let t: TestServer;
    let agent: string;
    let machine: string;
    const as = asMember(() => t);
    const owner = as(OWNER);
    const editor = as(EDITOR);
    const sh = shellOf(owner, () => agent);
    const hostHome = () => t.server.provider.homes.homeDir(machine, agent);
    const host = (rel: string) => path.join(hostHome(), rel);
    const read = (rel: string) => fs.readFile(host(rel), "utf8");
    const exists = (rel: string) =>
      fs.lstat(host(rel)).then(
        () => true,
        () => false,
      );
    /** Every file of the home (relative path → bytes), read on the host without following links. */
    const snapshot = async (): Promise<Map<string, string>> => {
      const out = new Map<string, string>();
      const walk = async (rel: string): Promise<void> => {
        for (const e of await fs.readdir(host(rel), { withFileTypes: true })) {
          const at = rel === "" ? e.name : `${rel}/${e.name}`;
          if (e.isDirectory()) await walk(at);
          else if (e.isSymbolicLink()) out.set(at, `-> ${await fs.readlink(host(at))}`);
          else out.set(at, (await fs.readFile(host(at))).toString("base64"));
        }
      };
      await walk("");
      return out;
    };
    /** The paths whose content differs between two snapshots (added, removed or changed). */
    const changed = (a: Map<string, string>, b: Map<string, string>) =>
      [...new Set([...a.keys(), ...b.keys()])].filter((k) => a.get(k) !== b.get(k)).sort();
    const quoted = (s: string) => `'${s.replace(/'/g, "'\\''")}'`;
    const script = async (turns: unknown[]) =>
      sh(`printf '%s' ${quoted(JSON.stringify(turns))} > ~/turns.json`);
    const turn = async (who: Call, conversation: string) => {
      const m = await who("POST", `/api/conversations/${conversation}/messages`, { text: "work" });
      assert.equal(m.status, 202, JSON.stringify(m.body));
      const run = await waitFor(`run ${m.body.run_id}`, async () => {
        const r = (await owner("GET", `/api/runs/${m.body.run_id}`)).body;
        return ["running", "queued"].includes(r.status) ? null : r;
      });
      const events = (await owner("GET", `/api/runs/${m.body.run_id}/events`)).body.items as {
        type: string;
        data: any;
      }[];
      assert.equal(run.status, "succeeded", JSON.stringify(events));
      return { events, calls: events.filter((e) => e.type === "tool_call").map((e) => e.data) };
    };
    const conversation = async (who: Call, repo?: string) => {
      const c = await who("POST", `/api/agents/${agent}/conversations`, repo ? { repo } : {});
      assert.equal(c.status, 201, JSON.stringify(c.body));
      return c.body.id as string;
    };
    const BASE = ["proj/app/README.md", "proj/app/src/main.txt"];

    before(async () => {
      t = await startTestServer({ leg, env: { AUTH_MODE: "trusted-header" } });
      ({ agent, machine } = await orgWithAgent(owner, {
        name: "coder",
        tools: ["run_command", "read_file", "write_file", "list_files"],
        areas: { proj: ["proj"], other: ["other"] },
        members: [{ email: EDITOR, role: "writer", areas: ["proj"] }],
      }));
      const init = (dir: string, files: string) =>
        sh(
          `mkdir -p ~/${dir} && cd ~/${dir} && git init -q -b main && ${files} && git add -A && git -c user.name=o -c user.email=o@x commit -qm init`,
        );
      await init("proj/app", "echo init > README.md && mkdir src && echo main > src/main.txt");
      await init("proj/lib", "echo lib > lib.txt");
      await init("other/orepo", `echo ${SECRET} > s.txt`);
      await sh(`echo ${SECRET} > ~/other/secret.txt && printf '%s' ${quoted(PLANT)} > ~/proj/plant.sh`);
    });
    after(async () => {
      await t?.close();
    });

    /** A branch turn of `who` on proj/app, run to its end, with the home on the host before and after. */
    const branchTurn = async (who: Call) => {
      const c = await conversation(who, "proj/app");
      const worktree = `.warren/worktrees/${c}`;
      await script([
        {
          tool_calls: [
            { name: "run_command", input: { command: "bash ~/proj/plant.sh 2>&1" } },
            { name: "write_file", input: { path: "proj/app/by-tool.txt", content: "tool" } },
            { name: "read_file", input: { path: "proj/app/README.md" } },
            { name: "list_files", input: { path: "proj/app" } },
          ],
        },
        { text: "done" },
      ]);
      // a process of the agent's own unfenced work, alive while the turn runs: its /proc root
      // is the box's, where the base checkout is
      const bg = await owner("POST", `/api/agents/${agent}/exec`, {
        command: "setsid sleep 120 </dev/null >/dev/null 2>&1 & echo started",
      });
      assert.equal(bg.status, 200, JSON.stringify(bg.body));
      const before = await snapshot();
      const { events, calls } = await turn(who, c);
      const after = await snapshot();
      return { c, worktree, events, calls, before, after };
    };

    /** What every branch turn must show: its worktree written, the base checkout untouched. */
    const assertOwnTree = async (r: Awaited<ReturnType<typeof branchTurn>>) => {
      const [shell, wrote, readBack, listed] = r.calls;
      const said = shell.output as string;
      // it works where the repository is, and finds its own files there
      assert.match(said, /^pwd=\/home\/[^/]+\/proj\/app$/m);
      for (const name of ["file", "README.md", "sub", ".git"])
        assert.match(said, new RegExp(`^${name.replace(".", "\\.")}$`, "m"));
      assert.match(said, /^readme=changed$/m);
      // the agent's own unfenced work was running beside the turn (its /proc root was tried)
      assert.match(said, /^others=[1-9]/m);
      // its .git is the worktree's pointer, which leads to no history in the turn
      assert.match(said, /^gitfile=gitdir: .*\/proj\/app\/\.git\/worktrees\//m);
      assert.match(said, /not a git repository/);
      assert.match(wrote.output, /wrote 4 bytes to proj\/app\/by-tool\.txt/);
      assert.equal(readBack.output, "changed\n");
      assert.match(listed.output, /^by-tool\.txt\tfile/m);
      assert.match(listed.output, /^abs\.txt\tfile/m);

      // on the host: the base checkout is as it was, its working tree clean
      assert.equal(await read("proj/app/README.md"), "init\n");
      assert.equal(await read("proj/app/src/main.txt"), "main\n");
      for (const name of [
        "file",
        "sub",
        "abs.txt",
        "dotdot.txt",
        "viaproj.txt",
        "by-tool.txt",
        "proc-root.txt",
      ])
        assert.equal(await exists(`proj/app/${name}`), false, `proj/app/${name} was written`);
      assert.equal((await sh("git -C ~/proj/app status --porcelain")).trim(), "");
      // the worktree holds every write, and its commit has them
      const w = (name: string) => read(`${r.worktree}/${name}`);
      assert.equal(await w("file"), "x\n");
      assert.equal(await w("README.md"), "changed\n");
      assert.equal(await w("sub/s.txt"), "s\n");
      assert.equal(await w("abs.txt"), "abs\n");
      assert.equal(await w("dotdot.txt"), "dotdot\n");
      assert.equal(await w("viaproj.txt"), "viaproj\n");
      assert.equal(await w("by-tool.txt"), "tool");
      assert.ok(
        r.events.some((e) => e.type === "commit"),
        JSON.stringify(r.events),
      );
      assert.equal(await sh(`git -C ~/proj/app show warren/${r.c}:file`), "x\n");
      // nothing else of the home was written: only the worktree, the repository's git folder
      // (the commit) and the scripted model's file
      const outside = changed(r.before, r.after).filter(
        (p) => !p.startsWith(`${r.worktree}/`) && !p.startsWith("proj/app/.git/"),
      );
      assert.deepEqual(outside, []);
      // the base is clean, so the land goes through and its checkout moves with it
      const land = await owner("POST", `/api/conversations/${r.c}/land`);
      assert.equal(land.status, 200, JSON.stringify(land.body));
      assert.equal(await read("proj/app/file"), "x\n");
      assert.equal(await read("proj/app/README.md"), "changed\n");
      await sh("cd ~/proj/app && git -c user.name=o -c user.email=o@x revert --no-edit -m 1 HEAD >/dev/null");
      assert.deepEqual(await Promise.all(BASE.map(read)), ["init\n", "main\n"]);
    };

    test("a fenced editor's branch turn writes only its worktree, found at the repository's folder; the base checkout is never written, by any name", async () => {
      const r = await branchTurn(editor);
      await assertOwnTree(r);
      const said = r.calls[0].output as string;
      // the fenced turn finds no history anywhere in what it holds
      assert.match(said, /^history=0$/m);
      // and .git of the repository through the file tools is refused, not read
      await script([
        {
          tool_calls: [
            { name: "read_file", input: { path: "proj/app/.git" } },
            { name: "read_file", input: { path: "proj/lib/.git/config" } },
            { name: "list_files", input: { path: "proj/lib/.git" } },
          ],
        },
        { text: "done" },
      ]);
      const { calls } = await turn(editor, await conversation(editor, "proj/app"));
      for (const call of calls) {
        assert.match(call.output, /not there for this conversation/, JSON.stringify(call));
        assert.ok(!String(call.output).includes("[core]"), JSON.stringify(call));
      }
    });

    test("the owner's branch turn, which holds the whole home, writes only its worktree too", async () => {
      const r = await branchTurn(owner);
      await assertOwnTree(r);
      // the owner's turn holds the history of every other repository of the home
      assert.match(r.calls[0].output, /^history=[1-9]/m);
    });

    test("a turn without a repository: a fenced editor's finds no .git at all; the owner's finds every one", async () => {
      await script([
        {
          tool_calls: [
            { name: "run_command", input: { command: LOOK } },
            { name: "read_file", input: { path: "proj/lib/.git/config" } },
            { name: "read_file", input: { path: "proj/app/.git/HEAD" } },
          ],
        },
        { text: "done" },
      ]);
      const before = await snapshot();
      const fenced = await turn(editor, await conversation(editor));
      const [shell, config, head] = fenced.calls;
      assert.match(shell.output, /^found= ?$/m);
      assert.match(shell.output, /^config=cat: .*No such file or directory$/m);
      assert.match(shell.output, /not a git repository/);
      for (const call of [config, head]) {
        assert.match(call.output, /not there for this conversation/, JSON.stringify(call));
        assert.ok(!String(call.output).includes("[core]") && !String(call.output).includes("refs/heads"));
      }
      assert.ok(!JSON.stringify(fenced.events).includes(SECRET));

      const whole = await turn(owner, await conversation(owner));
      const [seen, ownerConfig, ownerHead] = whole.calls;
      for (const repo of ["proj/app", "proj/lib", "other/orepo"])
        assert.match(seen.output, new RegExp(`/${repo}/\\.git( |$)`, "m"), seen.output);
      assert.match(seen.output, /^config=\[core\]$/m);
      assert.match(seen.output, /init/);
      assert.match(ownerConfig.output, /\[core\]/);
      assert.match(ownerHead.output, /ref: refs\/heads\/main/);
      // looking wrote nothing
      assert.deepEqual(changed(before, await snapshot()), []);
    });
  });
