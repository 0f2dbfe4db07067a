// Areas and tiers (AUTH_MODE=trusted-header), on real boxes: areas with revisions, the tier
// rules of the member route, the fence on every file route (403 area.refused, nothing of what
// is outside), a conversation's turns that find nothing outside their starter's areas on disk,
// an area edit reaching a running conversation's next turn, and a guest limited to its personas.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { dbLegs } from "../support/db.js";
import { asMember, orgWithAgent } from "../support/org.js";
import { putHomeFile } from "../support/agent-runs.js";
import { startTestServer, type TestServer } from "../support/server.js";
import { waitFor } from "../conversations/support.js";

const OWNER = "owner@example.com";
const ADMIN = "admin@example.com";
const SUPPORT = "support@example.com";
const GUEST = "guest@example.com";
const VIEWER = "viewer@example.com";

/** What a turn's command writes into support/: what it finds of the home. */
const LOOK = (out: string) =>
  `{ echo "home: $(ls -A ~ | tr '\\n' ' ')"; cat ~/support/a.txt; test -e ~/secret/b.txt && echo FOUND-SECRET; ls ~/secret 2>&1 | head -1; test -e ~/support/.git/HEAD && echo FOUND-HISTORY; test -e ~/support/deep/repo/.git/HEAD && echo FOUND-NESTED-HISTORY; cat ~/support/deep/repo/README.md; echo "end"; } > ~/support/${out} 2>&1`;

for (const leg of dbLegs)
  describe(`areas and tiers on ${leg.name}`, { skip: leg.skip ?? false }, () => {
    let t: TestServer;
    let org: string;
    let agent: string;
    const as = asMember(() => t);
    const owner = as(OWNER);
    const put = (p: string, text: string) => putHomeFile(t, agent, p, text, OWNER);

    const ended = (runId: string) =>
      waitFor(`run ${runId} to end`, async () => {
        const r = (await owner("GET", `/api/runs/${runId}`)).body;
        return ["running", "queued"].includes(r.status) ? null : r;
      });

    before(async () => {
      t = await startTestServer({ leg, env: { AUTH_MODE: "trusted-header" } });
      ({ org, agent } = await orgWithAgent(owner, { tools: ["run_command", "read_file", "list_files"] }));
      await put("support/a.txt", "support notes\n");
      await put("support/.git/HEAD", "ref: refs/heads/main\n");
      // a repository nested deeper in the held folder: its files show, its history does not
      await put("support/deep/repo/.git/HEAD", "ref: refs/heads/main\n");
      await put("support/deep/repo/README.md", "nested readme\n");
      await put("secret/b.txt", "the plans\n");
      await put("shared/c.txt", "shared\n");
      // turn 0 and 2 run a command (the first and second message), 1 and 3 answer
      await put(
        "turns.json",
        JSON.stringify([
          { tool_calls: [{ name: "run_command", input: { command: LOOK("seen1.txt") } }] },
          { text: "looked" },
          { tool_calls: [{ name: "run_command", input: { command: LOOK("seen2.txt") } }] },
          { text: "looked again" },
        ]),
      );
    });
    after(async () => {
      await t?.close();
    });

    test("an area is defined, changed and deleted, every change a revision with who and when", async () => {
      const one = await owner("PUT", `/api/orgs/${org}/areas/support`, { folders: ["support/"] });
      assert.equal(one.status, 200, JSON.stringify(one.body));
      assert.deepEqual(one.body, { name: "support", folders: ["support"], revision: 1 });
      const bad = await owner("PUT", `/api/orgs/${org}/areas/x`, { folders: ["../etc"] });
      assert.equal(bad.status, 400);
      assert.equal(bad.body.error.code, "request.invalid");
      assert.equal((await owner("PUT", `/api/orgs/${org}/areas/x`, { folders: [] })).status, 400);
      assert.equal((await owner("PUT", `/api/orgs/${org}/areas/Bad Name`, { folders: ["a"] })).status, 400);
      const tmp = await owner("PUT", `/api/orgs/${org}/areas/tmp`, { folders: ["a", "a/b", "c"] });
      assert.deepEqual(tmp.body.folders, ["a", "c"]);
      assert.equal((await owner("PUT", `/api/orgs/${org}/areas/tmp`, { folders: ["d"] })).body.revision, 2);
      assert.equal((await owner("DELETE", `/api/orgs/${org}/areas/tmp`)).status, 204);
      const revs = await owner("GET", `/api/orgs/${org}/areas/tmp/revisions`);
      assert.deepEqual(
        revs.body.items.map((r: { revision: number; folders: string[] | null; by: string }) => [
          r.revision,
          r.folders,
          r.by,
        ]),
        [
          [1, ["a", "c"], OWNER],
          [2, ["d"], OWNER],
          [3, null, OWNER],
        ],
      );
      const list = await owner("GET", `/api/orgs/${org}/areas`);
      assert.deepEqual(list.body.items, [{ name: "support", folders: ["support"], revision: 1 }]);
    });

    test("tiers: an admin is refused an area, a writer and a guest need one, an unknown area is refused, a held area cannot go", async () => {
      const admin = await owner("PUT", `/api/orgs/${org}/members`, {
        email: ADMIN,
        role: "admin",
        areas: ["support"],
      });
      assert.equal(admin.status, 400);
      assert.equal(admin.body.error.code, "area.not_allowed");
      const ownerArea = await owner("PUT", `/api/orgs/${org}/members`, {
        email: ADMIN,
        role: "owner",
        areas: ["support"],
      });
      assert.equal(ownerArea.body.error.code, "area.not_allowed");
      const guest = await owner("PUT", `/api/orgs/${org}/members`, { email: GUEST, role: "guest" });
      assert.equal(guest.status, 400);
      assert.equal(guest.body.error.code, "area.required");
      assert.match(guest.body.error.message, /^areas: a guest needs at least one area/);
      // a writer needs one too: it is where they may change files (an editor may hold none)
      for (const areas of [undefined, []]) {
        const writer = await owner("PUT", `/api/orgs/${org}/members`, {
          email: SUPPORT,
          role: "writer",
          areas,
        });
        assert.equal(writer.status, 400, JSON.stringify(writer.body));
        assert.equal(writer.body.error.code, "area.required");
        assert.match(writer.body.error.message, /^areas: a writer needs at least one area/);
      }
      const ghost = await owner("PUT", `/api/orgs/${org}/members`, {
        email: SUPPORT,
        role: "writer",
        areas: ["nope"],
      });
      assert.equal(ghost.status, 400);
      const ed = await owner("PUT", `/api/orgs/${org}/members`, {
        email: SUPPORT,
        role: "writer",
        areas: ["support"],
      });
      assert.equal(ed.status, 200, JSON.stringify(ed.body));
      assert.deepEqual(ed.body.areas, ["support"]);
      const g = await owner("PUT", `/api/orgs/${org}/members`, {
        email: GUEST,
        role: "guest",
        areas: ["support"],
      });
      assert.equal(g.status, 200, JSON.stringify(g.body));
      const members = (await owner("GET", `/api/orgs/${org}/members`)).body.items;
      assert.deepEqual(
        members.map((x: { email: string; role: string; areas: string[] }) => [x.email, x.role, x.areas]),
        [
          [OWNER, "owner", []],
          [SUPPORT, "writer", ["support"]],
          [GUEST, "guest", ["support"]],
        ],
      );
      const held = await owner("DELETE", `/api/orgs/${org}/areas/support`);
      assert.equal(held.status, 409);
      assert.equal(held.body.error.code, "area.in_use");
    });

    test("a link is judged where it leads: a fenced member reads through none out of their areas, whether its target exists or not", async () => {
      // planted by the agent itself in its box, as a turn of a fenced member could
      const home = `/home/${agent}`;
      const made = await owner("POST", `/api/agents/${agent}/exec`, {
        command: [
          "ln -s ../secret support/byturn",
          `ln -s ${home}/secret support/abs`,
          "ln -s ../secret/none.txt support/dead",
          "ln -s .. support/up",
          "ln -s ../support/byturn support/twice",
          "ln -s a.txt support/inlane",
        ].join(" && "),
        timeout_ms: 30_000,
      });
      assert.equal(made.status, 200, JSON.stringify(made.body));
      assert.equal(made.body.exit_code, 0, JSON.stringify(made.body));
      const s = as(SUPPORT);
      const answers = new Set<string>();
      for (const p of [
        "support/byturn/b.txt",
        "support/dead",
        "support/up/secret/b.txt",
        "support/twice/b.txt",
        "support/byturn/none.txt",
      ]) {
        const r = await s("GET", `/api/agents/${agent}/files/${p}`);
        assert.equal(r.status, 403, `${p}: ${JSON.stringify(r.body)}`);
        assert.equal(r.body.error.code, "area.refused", p);
        assert.ok(!JSON.stringify(r.body).includes("plans"), p);
        answers.add(JSON.stringify(r.body));
      }
      assert.equal(answers.size, 1, "the same answer whether the target exists");
      // a link to the home's own path in the box is a path out of the home on the host
      const abs = await s("GET", `/api/agents/${agent}/files/support/abs/b.txt`);
      assert.equal(abs.status, 400, JSON.stringify(abs.body));
      assert.equal(abs.body.error.code, "file.link");
      assert.ok(!JSON.stringify(abs.body).includes("plans"));
      // a link that stays in the area is followed
      const inlane = await s("GET", `/api/agents/${agent}/files/support/inlane`);
      assert.equal(inlane.status, 200, JSON.stringify(inlane.body));
      assert.equal(inlane.body, "support notes\n");
      // the whole home's holder still follows links that stay in the home
      assert.equal(
        (await owner("GET", `/api/agents/${agent}/files/support/byturn/b.txt`)).body,
        "the plans\n",
      );
      const removed = await owner("POST", `/api/agents/${agent}/exec`, {
        command: "rm support/byturn support/abs support/dead support/up support/twice support/inlane",
      });
      assert.equal(removed.body.exit_code, 0, JSON.stringify(removed.body));
    });

    test("a member with area support gets 403 area.refused outside it on every file route, with no hint of what is there", async () => {
      const s = as(SUPPORT);
      const read = await s("GET", `/api/agents/${agent}/files/support/a.txt`);
      assert.equal(read.status, 200);
      assert.equal(read.body, "support notes\n");
      const outside: [string, string][] = [
        ["GET", `/api/agents/${agent}/files/secret/b.txt`],
        ["GET", `/api/agents/${agent}/files/secret/none.txt`],
        ["GET", `/api/agents/${agent}/files/turns.json`],
        ["GET", `/api/agents/${agent}/files/support/../secret/b.txt`],
        ["GET", `/api/agents/${agent}/folder?path=secret`],
        ["GET", `/api/agents/${agent}/folder?path=nothing-here`],
      ];
      const answers = new Set<string>();
      for (const [method, url] of outside) {
        const r = await s(method, url);
        assert.equal(r.status, 403, `${method} ${url}: ${JSON.stringify(r.body)}`);
        assert.equal(r.body.error.code, "area.refused");
        answers.add(JSON.stringify(r.body));
      }
      // the same answer whether the path exists or not
      assert.equal(answers.size, 1);
      assert.ok(![...answers][0]!.includes("secret"));
      const write = await t.inject({
        method: "PUT",
        url: `/api/agents/${agent}/files/secret/new.txt`,
        payload: Buffer.from("x"),
        headers: { "x-forwarded-email": SUPPORT, "content-type": "application/octet-stream" },
      });
      assert.equal(write.statusCode, 403);
      assert.equal(JSON.parse(write.body).error.code, "area.refused");
      const inside = await t.inject({
        method: "PUT",
        url: `/api/agents/${agent}/files/support/mine.txt`,
        payload: Buffer.from("mine"),
        headers: { "x-forwarded-email": SUPPORT, "content-type": "application/octet-stream" },
      });
      assert.equal(inside.statusCode, 204, inside.body);
      // the home's listing shows only the way to the held folder
      const root = await s("GET", `/api/agents/${agent}/folder?path=`);
      assert.equal(root.status, 200, JSON.stringify(root.body));
      assert.deepEqual(
        root.body.entries.map((e: { name: string }) => e.name),
        ["support"],
      );
      // what an area cannot fence, and the agent's configuration, are not theirs: a writer's
      // role has no such right at all, and the area's history is not for a fenced seat
      for (const [method, url, body, code] of [
        ["POST", `/api/agents/${agent}/exec`, { argv: ["cat", "secret/b.txt"] }, "access.denied"],
        ["PATCH", `/api/agents/${agent}`, { name: "mine" }, "access.denied"],
        ["POST", `/api/agents/${agent}/personas`, { name: "wide" }, "access.denied"],
        ["POST", "/api/secrets", { org_id: org, name: "MINE", value: "mine-mine-mine" }, "access.denied"],
        ["GET", `/api/orgs/${org}/areas/support/revisions`, undefined, "area.refused"],
      ] as [string, string, unknown, string][]) {
        const r = await s(method, url, body);
        assert.equal(r.status, 403, `${method} ${url}: ${JSON.stringify(r.body)}`);
        assert.equal(r.body.error.code, code, `${method} ${url}`);
      }
      const areas = await s("GET", `/api/orgs/${org}/areas`);
      assert.deepEqual(
        areas.body.items.map((a: { name: string }) => a.name),
        ["support"],
      );
    });

    test("a conversation's turns find nothing outside its starter's areas on disk; an area edit reaches its next turn", async () => {
      const s = as(SUPPORT);
      const c = await s("POST", `/api/agents/${agent}/conversations`, { title: "help" });
      assert.equal(c.status, 201, JSON.stringify(c.body));
      assert.deepEqual(c.body.areas, ["support"]);
      const m1 = await s("POST", `/api/conversations/${c.body.id}/messages`, { text: "look around" });
      assert.equal(m1.status, 202, JSON.stringify(m1.body));
      const r1 = await ended(m1.body.run_id);
      assert.equal(r1.status, "succeeded", JSON.stringify(r1));
      const events1 = JSON.stringify((await owner("GET", `/api/runs/${m1.body.run_id}/events`)).body);
      const seen1 = (await owner("GET", `/api/agents/${agent}/files/support/seen1.txt`)).body as string;
      assert.equal(typeof seen1, "string", events1);
      assert.match(seen1, /^home: support $/m);
      assert.match(seen1, /^support notes$/m);
      assert.doesNotMatch(seen1, /FOUND-SECRET|FOUND-HISTORY|FOUND-NESTED-HISTORY/);
      assert.match(seen1, /^nested readme$/m);
      assert.match(seen1, /No such file or directory/);
      assert.match(seen1, /^end$/m);
      // the rest of the home is untouched by the turn
      assert.equal((await owner("GET", `/api/agents/${agent}/files/secret/b.txt`)).body, "the plans\n");

      // the owner widens the area: the running conversation's next turn sees it
      const edit = await owner("PUT", `/api/orgs/${org}/areas/support`, { folders: ["support", "shared"] });
      assert.equal(edit.body.revision, 2);
      const m2 = await s("POST", `/api/conversations/${c.body.id}/messages`, { text: "again" });
      const r2 = await ended(m2.body.run_id);
      assert.equal(r2.status, "succeeded", JSON.stringify(r2));
      const seen2 = (await owner("GET", `/api/agents/${agent}/files/support/seen2.txt`)).body as string;
      assert.match(seen2, /^home: shared support $/m);
      assert.doesNotMatch(seen2, /FOUND-SECRET|FOUND-NESTED-HISTORY/);
      // the owner's own conversation is not fenced
      const mine = (await owner("GET", `/api/agents/${agent}/conversations`)).body.items;
      assert.equal(mine.length, 1);
      // the member sees only the conversations they started
      assert.equal((await s("GET", `/api/agents/${agent}/conversations`)).body.items.length, 1);
    });

    test("a guest talks only through the personas homed in its areas, and sees nothing else", async () => {
      const g = as(GUEST);
      const homed = await owner("POST", `/api/agents/${agent}/personas`, {
        name: "helpdesk",
        area: "support",
      });
      assert.equal(homed.status, 201, JSON.stringify(homed.body));
      const elsewhere = await owner("POST", `/api/agents/${agent}/personas`, { name: "ops" });
      assert.equal(elsewhere.status, 201);
      const offered = await g("GET", `/api/agents/${agent}/personas`);
      assert.deepEqual(
        offered.body.items.map((p: { name: string }) => p.name),
        ["helpdesk"],
      );
      const bare = await g("POST", `/api/agents/${agent}/conversations`, {});
      assert.equal(bare.status, 403);
      assert.equal(bare.body.error.code, "area.refused");
      const other = await g("POST", `/api/agents/${agent}/conversations`, { persona_id: elsewhere.body.id });
      assert.equal(other.status, 403);
      const ok = await g("POST", `/api/agents/${agent}/conversations`, { persona_id: homed.body.id });
      assert.equal(ok.status, 201, JSON.stringify(ok.body));
      assert.equal((await g("GET", `/api/conversations/${ok.body.id}`)).status, 200);
      const list = await g("GET", `/api/agents/${agent}/conversations`);
      assert.deepEqual(
        list.body.items.map((c: { id: string }) => c.id),
        [ok.body.id],
      );
      for (const url of [
        `/api/agents/${agent}`,
        `/api/agents/${agent}/files/support/a.txt`,
        `/api/agents/${agent}/folder?path=support`,
        `/api/orgs/${org}/members`,
        `/api/agents?org_id=${org}`,
      ]) {
        const r = await g("GET", url);
        assert.equal(r.status, 403, `${url}: ${JSON.stringify(r.body)}`);
        assert.equal(r.body.error.code, "access.denied");
      }
    });

    test("a viewer with areas sees only what lies inside them: files, listings, and the conversations they hold", async () => {
      const put = await owner("PUT", `/api/orgs/${org}/members`, {
        email: VIEWER,
        role: "viewer",
        areas: ["support"],
      });
      assert.equal(put.status, 200, JSON.stringify(put.body));
      const v = as(VIEWER);
      assert.equal((await v("GET", `/api/agents/${agent}/files/support/a.txt`)).body, "support notes\n");
      assert.equal((await v("GET", `/api/agents/${agent}/files/shared/c.txt`)).body, "shared\n");
      for (const url of [
        `/api/agents/${agent}/files/secret/b.txt`,
        `/api/agents/${agent}/files/turns.json`,
        `/api/agents/${agent}/folder?path=secret`,
        `/api/agents/${agent}/folder?path=.warren`,
      ]) {
        const r = await v("GET", url);
        assert.equal(r.status, 403, `${url}: ${JSON.stringify(r.body)}`);
        assert.equal(r.body.error.code, "area.refused");
      }
      const root = await v("GET", `/api/agents/${agent}/folder?path=`);
      assert.deepEqual(
        root.body.entries.map((e: { name: string }) => e.name),
        ["shared", "support"],
      );
      // a viewer changes nothing, inside its areas too
      const write = await t.inject({
        method: "PUT",
        url: `/api/agents/${agent}/files/support/v.txt`,
        payload: Buffer.from("x"),
        headers: { "x-forwarded-email": VIEWER, "content-type": "application/octet-stream" },
      });
      assert.equal(write.statusCode, 403);
      assert.equal(JSON.parse(write.body).error.code, "access.denied");
      // the conversations whose areas lie inside its own, never one that holds the whole home
      const wide = await owner("POST", `/api/agents/${agent}/conversations`, { title: "the whole home" });
      assert.equal(wide.status, 201, JSON.stringify(wide.body));
      const all = (await owner("GET", `/api/agents/${agent}/conversations`)).body.items as {
        id: string;
        areas: string[];
      }[];
      const held = all.filter((c) => c.areas.length > 0).map((c) => c.id);
      assert.ok(held.length >= 2, JSON.stringify(all));
      const seen = (await v("GET", `/api/agents/${agent}/conversations`)).body.items.map(
        (c: { id: string }) => c.id,
      );
      assert.deepEqual(seen, held);
      assert.ok(!seen.includes(wide.body.id));
      const one = held[0]!;
      assert.equal((await v("GET", `/api/conversations/${one}/messages`)).status, 200);
      for (const url of [
        `/api/conversations/${wide.body.id}`,
        `/api/conversations/${wide.body.id}/messages`,
      ]) {
        const r = await v("GET", url);
        assert.equal(r.status, 404, `${url}: ${JSON.stringify(r.body)}`);
      }
      // a terminal, a command and the revisions of areas are not inside any area
      for (const [method, url] of [
        ["POST", `/api/agents/${agent}/cli`],
        ["GET", `/api/orgs/${org}/areas/support/revisions`],
      ] as const) {
        const r = await v(method, url);
        assert.equal(r.status, 403, `${method} ${url}: ${JSON.stringify(r.body)}`);
      }
    });
  });
