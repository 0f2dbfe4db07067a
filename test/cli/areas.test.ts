// `warren areas ...`, `warren orgs set-member --area` and `warren conversations diff|land`
// against a real server (trusted-header mode, PGlite) and a real box: an area defined,
// changed, listed, held, refused while held and deleted, with its revisions; a conversation's
// branch diffed and landed, refused to an editor.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { runWarren, warrenJson } from "../support/cli.js";
import { startTestServer, type TestServer } from "../support/server.js";
import { makeAgent } from "../support/org.js";

const OWNER = "owner@example.com";
const EDITOR = "editor@example.com";
let t: TestServer;

const warren = (argv: string[], who = OWNER) => runWarren(argv, { url: t.url, as: who });
const json = (argv: string[], who = OWNER) => warrenJson(["--json", ...argv], { url: t.url, as: who });

before(async () => {
  t = await startTestServer({ listen: true, env: { AUTH_MODE: "trusted-header" } });
});
after(async () => {
  await t?.close();
});

test("warren areas: put, list, revisions, held by a member, delete", async () => {
  const org = await json(["orgs", "create", "acme"]);
  const put = await warren([
    "areas",
    "put",
    "support",
    "--org",
    org.id,
    "--folder",
    "support/",
    "--folder",
    "docs",
  ]);
  assert.equal(put.code, 0, put.stderr);
  assert.match(put.stdout, /^name\s+support$/m);
  assert.match(put.stdout, /^revision\s+1$/m);
  assert.deepEqual(
    (await json(["areas", "put", "support", "--org", org.id, "--folder", "support"])).folders,
    ["support"],
  );
  const none = await warren(["areas", "put", "empty", "--org", org.id]);
  assert.equal(none.code, 2);
  assert.match(none.stderr, /--folder/);
  const bad = await warren(["areas", "put", "bad", "--org", org.id, "--folder", "../etc"]);
  assert.equal(bad.code, 1);
  assert.match(bad.stderr, /request\.invalid/);
  const list = await warren(["areas", "list", "--org", org.id]);
  assert.match(list.stdout, /^NAME\s+REVISION\s+FOLDERS\nsupport\s+2\s+support\n$/);

  // a writer needs an area; given one, it holds it
  const bare = await warren(["orgs", "set-member", org.id, "--email", EDITOR, "--role", "writer"]);
  assert.equal(bare.code, 1);
  assert.match(bare.stderr, /area\.required/);
  const held = await json([
    "orgs",
    "set-member",
    org.id,
    "--email",
    EDITOR,
    "--role",
    "writer",
    "--area",
    "support",
  ]);
  assert.deepEqual([held.role, held.areas], ["writer", ["support"]]);
  assert.match((await warren(["orgs", "members", org.id])).stdout, /editor@example\.com\s+writer\s+support/);
  const inUse = await warren(["areas", "delete", "support", "--org", org.id]);
  assert.equal(inUse.code, 1);
  assert.match(inUse.stderr, /area\.in_use/);
  await json(["orgs", "set-member", org.id, "--email", EDITOR, "--role", "viewer", "--area", "support"]);
  // areas absent: those held stay
  assert.deepEqual(
    (await json(["orgs", "set-member", org.id, "--email", EDITOR, "--role", "viewer"])).areas,
    ["support"],
  );
  const gone = await warren(["areas", "delete", "support", "--org", org.id]);
  assert.equal(gone.code, 1, "the viewer still holds it");
  const user = (await json(["orgs", "members", org.id])).items.find(
    (m: { email: string }) => m.email === EDITOR,
  );
  assert.equal((await warren(["orgs", "remove-member", org.id, user.user_id])).code, 0);
  const deleted = await warren(["areas", "delete", "support", "--org", org.id]);
  assert.equal(deleted.code, 0, deleted.stderr);
  assert.equal(deleted.stdout, "deleted area support\n");
  const revs = await warren(["areas", "revisions", "support", "--org", org.id]);
  assert.match(
    revs.stdout,
    /^REVISION\s+BY\s+AT\s+FOLDERS\n1\s+owner@example\.com\s+\S+\s+docs,support\n2\s+owner@example\.com\s+\S+\s+support\n3\s+owner@example\.com\s+\S+\s+\(deleted\)\n$/,
  );
  assert.equal((await warren(["areas", "list", "--org", org.id])).stdout, "no areas\n");
});

test("warren conversations diff and land: a branch's files and patch, landed by the owner, refused to an editor", async () => {
  const org = await json(["orgs", "create", "branches"]);
  const m = await json(["machines", "create", "m", "--org", org.id]);
  const call = (method: string, url: string, body?: unknown, who = OWNER) =>
    t.call(method, url, body, { "x-forwarded-email": who });
  const a = await makeAgent(call, { org_id: org.id, machine_id: m.id }, { name: "coder" });
  const sh = async (command: string) => {
    const r = await call("POST", `/api/agents/${a.id}/exec`, { command });
    assert.equal(r.body.exit_code, 0, `${command}: ${r.body.stderr}`);
    return r.body.stdout as string;
  };
  await sh(
    "mkdir -p ~/proj && cd ~/proj && git init -q -b main && echo init > README.md && git add -A && git -c user.name=o -c user.email=o@x commit -qm init",
  );
  await json(["areas", "put", "proj", "--org", org.id, "--folder", "proj"]);
  await json(["orgs", "set-member", org.id, "--email", EDITOR, "--role", "writer", "--area", "proj"]);
  const c = await call("POST", `/api/agents/${a.id}/conversations`, { title: "notes", repo: "proj" }, EDITOR);
  assert.equal(c.status, 201, JSON.stringify(c.body));
  // a commit on the conversation's branch, in its worktree
  await sh(
    `cd ~/.warren/worktrees/${c.body.id} && printf 'one\\ntwo\\n' > notes.txt && git add -A && git -c user.name=coder -c user.email=c@x commit -qm notes`,
  );
  const diff = await warren(["conversations", "diff", c.body.id], EDITOR);
  assert.equal(diff.code, 0, diff.stderr);
  assert.match(diff.stdout, new RegExp(`^warren/${c.body.id} onto main: 1 ahead, 0 behind$`, "m"));
  assert.match(diff.stdout, /^STATUS\s+\+\s+-\s+PATH\nadded\s+2\s+0\s+notes\.txt$/m);
  assert.match(diff.stdout, /^\+two$/m);
  const asJson = await json(["conversations", "diff", c.body.id]);
  assert.deepEqual(asJson.files, [{ path: "notes.txt", status: "added", additions: 2, deletions: 0 }]);

  const refused = await warren(["conversations", "land", c.body.id], EDITOR);
  assert.equal(refused.code, 1);
  assert.match(refused.stderr, /access\.denied/);
  const landed = await warren(["conversations", "land", c.body.id]);
  assert.equal(landed.code, 0, landed.stderr);
  const commit = /^landed \S+: ([0-9a-f]{40})$/m.exec(landed.stdout)?.[1];
  assert.ok(commit, landed.stdout);
  assert.equal((await sh("git -C ~/proj rev-parse main")).trim(), commit);
  assert.equal(await sh("git -C ~/proj show main:notes.txt"), "one\ntwo\n");
  const after = await json(["conversations", "diff", c.body.id]);
  assert.equal(after.ahead, 0);
});
