// Identity and access, in-process: AUTH_MODE=trusted-header with one user per role, a
// non-member who learns nothing, and the Host and Origin guards.
import assert from "node:assert/strict";
import http from "node:http";
import { after, before, describe, test } from "node:test";
import { dbLegs } from "../support/db.js";
import { startTestServer, type TestServer } from "../support/server.js";
import { assertError, assertStatus, ghostId, idRe, type Answer } from "./expect.js";

const OWNER = "owner@example.com";
const ADMIN = "admin@example.com";
const EDITOR = "editor@example.com";
const VIEWER = "viewer@example.com";
const AUDITOR = "auditor@example.com";
const OUTSIDER = "outsider@example.org";

type Call = (
  method: string,
  url: string,
  body?: unknown,
  headers?: Record<string, string>,
) => Promise<Answer>;

interface World {
  org: string;
  machine: string;
  agent: string;
  guild: string;
  /** A secret granted to the organisation. */
  secret: string;
  /** The owner's user id, for member routes. */
  ownerUser: string;
  /** A member whose removal is attempted. */
  viewerUser: string;
}

/** Every read of the organisation's things; each must answer 200. */
const reads = (w: World): [string, string][] => [
  ["GET", "/api/orgs"],
  ["GET", `/api/orgs/${w.org}`],
  ["GET", `/api/orgs/${w.org}/members`],
  ["GET", "/api/machines"],
  ["GET", `/api/machines?org_id=${w.org}`],
  ["GET", `/api/machines/${w.machine}`],
  ["GET", "/api/agents"],
  ["GET", `/api/agents?org_id=${w.org}`],
  ["GET", `/api/agents?machine_id=${w.machine}`],
  ["GET", `/api/agents/${w.agent}`],
  ["GET", "/api/guilds"],
  ["GET", `/api/guilds?org_id=${w.org}`],
  ["GET", `/api/guilds/${w.guild}`],
  ["GET", "/api/secrets"],
  ["GET", `/api/secrets?org_id=${w.org}`],
  ["GET", `/api/secrets/${w.secret}`],
];

/** Every change of the organisation's things, with a valid body. */
const writes = (w: World): [string, string, unknown?][] => [
  ["POST", "/api/machines", { org_id: w.org, name: "intruder" }],
  ["PATCH", `/api/machines/${w.machine}`, { name: "intruder" }],
  ["POST", `/api/machines/${w.machine}/stop`],
  ["DELETE", `/api/machines/${w.machine}`],
  ["POST", "/api/agents", { org_id: w.org, machine_id: w.machine, name: "intruder" }],
  ["PATCH", `/api/agents/${w.agent}`, { name: "intruder" }],
  ["PATCH", `/api/agents/${w.agent}`, { sandbox_policy: { network: { allow: ["example.com"] } } }],
  ["DELETE", `/api/agents/${w.agent}`],
  ["POST", `/api/agents/${w.agent}/exec`, { argv: ["true"] }],
  ["POST", "/api/guilds", { org_id: w.org, name: "intruder" }],
  ["POST", `/api/guilds/${w.guild}/agents`, { agent_id: w.agent }],
  ["DELETE", `/api/guilds/${w.guild}/agents/${w.agent}`],
  ["DELETE", `/api/guilds/${w.guild}`],
  ["POST", "/api/secrets", { org_id: w.org, name: "INTRUDER", value: "intruder-value" }],
  ["PATCH", `/api/secrets/${w.secret}`, { description: "intruder" }],
  ["PATCH", `/api/secrets/${w.secret}`, { grants: [] }],
  ["DELETE", `/api/secrets/${w.secret}`],
];

/** The changes that manage the organisation itself. */
const manages = (w: World): [string, string, unknown?][] => [
  ["PATCH", `/api/orgs/${w.org}`, { name: "intruder" }],
  ["PUT", `/api/orgs/${w.org}/members`, { email: "friend@example.com", role: "viewer" }],
  ["PUT", `/api/orgs/${w.org}/members`, { email: VIEWER, role: "admin" }],
  ["DELETE", `/api/orgs/${w.org}/members/${w.viewerUser}`],
  ["DELETE", `/api/orgs/${w.org}`],
];

for (const leg of dbLegs) {
  describe(`access on ${leg.name} (AUTH_MODE=trusted-header)`, { skip: leg.skip ?? false }, () => {
    let t: TestServer;
    let w: World;
    const as =
      (email: string): Call =>
      (method, url, body, headers = {}) =>
        t.call(method, url, body, { "x-forwarded-email": email, ...headers });

    /** The organisation's things are as the owner made them. */
    const unchanged = async (): Promise<void> => {
      const owner = as(OWNER);
      assert.equal((await owner("GET", `/api/orgs/${w.org}`)).body.name, "acme");
      const m = (await owner("GET", `/api/machines/${w.machine}`)).body;
      assert.equal(m.name, "m");
      const machines = (await owner("GET", `/api/machines?org_id=${w.org}`)).body.items;
      assert.deepEqual(
        machines.map((x: { id: string }) => x.id),
        [w.machine],
      );
      const a = (await owner("GET", `/api/agents/${w.agent}`)).body;
      assert.equal(a.name, "a");
      assert.deepEqual(a.sandbox_policy.network.allow, []);
      assert.equal((await owner("GET", `/api/agents?org_id=${w.org}`)).body.items.length, 1);
      const guilds = (await owner("GET", `/api/guilds?org_id=${w.org}`)).body.items;
      assert.deepEqual(
        guilds.map((g: { id: string; agent_ids: string[] }) => [g.id, g.agent_ids]),
        [[w.guild, [w.agent]]],
      );
      const secrets = (await owner("GET", `/api/secrets?org_id=${w.org}`)).body.items;
      assert.deepEqual(
        secrets.map((x: { id: string; description: string; grants: unknown }) => [
          x.id,
          x.description,
          x.grants,
        ]),
        [[w.secret, "every agent's", [{ scope: "org", id: w.org }]]],
      );
      const members = (await owner("GET", `/api/orgs/${w.org}/members`)).body.items;
      assert.deepEqual(members.map((x: { email: string; role: string }) => `${x.email}:${x.role}`).sort(), [
        `${ADMIN}:admin`,
        `${AUDITOR}:auditor`,
        `${EDITOR}:editor`,
        `${OWNER}:owner`,
        `${VIEWER}:viewer`,
      ]);
    };

    before(async () => {
      t = await startTestServer({ leg, env: { AUTH_MODE: "trusted-header" } });
      const owner = as(OWNER);
      const org = await owner("POST", "/api/orgs", { name: "acme" });
      assertStatus(org, 201);
      const machine = await owner("POST", "/api/machines", { org_id: org.body.id, name: "m" });
      assertStatus(machine, 201);
      const agent = await owner("POST", "/api/agents", {
        org_id: org.body.id,
        machine_id: machine.body.id,
        name: "a",
      });
      assertStatus(agent, 201);
      const guild = await owner("POST", "/api/guilds", { org_id: org.body.id, name: "g" });
      assertStatus(guild, 201);
      assertStatus(
        await owner("POST", `/api/guilds/${guild.body.id}/agents`, { agent_id: agent.body.id }),
        204,
      );
      const secret = await owner("POST", "/api/secrets", {
        org_id: org.body.id,
        name: "API_KEY",
        description: "every agent's",
        value: "the-secret-value",
        grants: [{ scope: "org", id: org.body.id }],
      });
      assertStatus(secret, 201);
      const ids: Record<string, string> = {};
      // an editor holds at least one area: where it may change files
      assertStatus(await owner("PUT", `/api/orgs/${org.body.id}/areas/work`, { folders: ["work"] }), 200);
      for (const [email, role] of [
        [ADMIN, "admin"],
        [EDITOR, "editor"],
        [VIEWER, "viewer"],
        [AUDITOR, "auditor"],
      ] as const) {
        const areas = role === "editor" ? ["work"] : undefined;
        const r = await owner("PUT", `/api/orgs/${org.body.id}/members`, { email, role, areas });
        assertStatus(r, 200, `add ${role}`);
        assert.deepEqual({ email: r.body.email, role: r.body.role }, { email, role });
        assert.match(r.body.user_id, idRe("usr"));
        ids[email] = r.body.user_id;
      }
      const members = (await owner("GET", `/api/orgs/${org.body.id}/members`)).body.items as {
        user_id: string;
        email: string;
      }[];
      const ownerUser = members.find((m) => m.email === OWNER)?.user_id;
      assert.ok(ownerUser);
      // the outsider has an organisation of its own
      assertStatus(await as(OUTSIDER)("POST", "/api/orgs", { name: "elsewhere" }), 201);
      w = {
        org: org.body.id,
        machine: machine.body.id,
        agent: agent.body.id,
        guild: guild.body.id,
        secret: secret.body.id,
        ownerUser,
        viewerUser: ids[VIEWER] as string,
      };
    });
    after(async () => {
      await t?.close();
    });

    test("without the identity header: 401 auth.required on every /api route", async () => {
      for (const [method, url, body] of [
        ...reads(w),
        ["POST", "/api/orgs", { name: "x" }],
        ...writes(w),
        ...manages(w),
      ] as [string, string, unknown?][]) {
        assertError(await t.call(method, url, body), 401, "auth.required");
      }
      for (const bad of ["", "not-an-email", "a@", "<a@b.c>"]) {
        assertError(
          await t.call("GET", "/api/orgs", undefined, { "x-forwarded-email": bad }),
          401,
          "auth.required",
        );
      }
      // another header does not count
      assertError(await t.call("GET", "/api/orgs", undefined, { "x-email": OWNER }), 401, "auth.required");
      // what is not under /api needs no identity
      assertStatus(await t.call("GET", "/health"), 200);
      assertStatus(await t.call("GET", "/api/openapi.json"), 200);
      await unchanged();
    });

    test("the header's email is the identity, case and spaces aside", async () => {
      const r = await t.call("GET", `/api/orgs/${w.org}`, undefined, {
        "x-forwarded-email": "  Owner@Example.COM ",
      });
      assertStatus(r, 200);
      assert.equal(r.body.role, "owner");
    });

    for (const [email, role] of [
      [VIEWER, "viewer"],
      [AUDITOR, "auditor"],
    ] as const) {
      test(`${role}: every read works, every change is 403 access.denied`, async () => {
        const me = as(email);
        for (const [method, url] of reads(w))
          assertStatus(await me(method, url), 200, `${role} ${method} ${url}`);
        const orgs = (await me("GET", "/api/orgs")).body.items;
        assert.deepEqual(orgs, [{ id: w.org, name: "acme", role, areas: [] }]);
        assert.equal((await me("GET", `/api/orgs/${w.org}`)).body.role, role);
        assert.deepEqual(
          (await me("GET", "/api/agents")).body.items.map((a: { id: string }) => a.id),
          [w.agent],
        );
        for (const [method, url, body] of [...writes(w), ...manages(w)]) {
          assertError(await me(method, url, body), 403, "access.denied");
        }
        // a new organisation of one's own is fine: the caller owns it
        const own = await me("POST", "/api/orgs", { name: `${role}'s` });
        assertStatus(own, 201);
        assert.equal(own.body.role, "owner");
        assertStatus(await me("DELETE", `/api/orgs/${own.body.id}`), 204);
        await unchanged();
      });
    }

    test("editor: reads the record and changes files inside its area; what an area cannot fence is refused, and it cannot manage the organisation", async () => {
      const me = as(EDITOR);
      for (const [method, url] of reads(w))
        assertStatus(await me(method, url), 200, `editor ${method} ${url}`);
      // its seat says it is fenced, so that the app offers only what the API allows it
      assert.deepEqual((await me("GET", "/api/orgs")).body.items[0].areas, ["work"]);
      const file = (path: string) => ({
        method: "PUT" as const,
        url: `/api/agents/${w.agent}/files/${path}`,
        payload: Buffer.from("by the editor"),
        headers: { "x-forwarded-email": EDITOR, "content-type": "application/octet-stream" },
      });
      assert.equal((await t.inject(file("work/note.txt"))).statusCode, 204);
      const mine = await me("GET", `/api/agents/${w.agent}/files/work/note.txt`);
      assertStatus(mine, 200);
      assert.equal(mine.body, "by the editor");
      const outside = await t.inject(file("note.txt"));
      assert.equal(outside.statusCode, 403);
      assert.equal(JSON.parse(outside.body).error.code, "area.refused");
      // the configuration of machines, agents, guilds and secrets, and a command in the box,
      // are never inside an area
      for (const [method, url, body] of writes(w))
        assertError(await me(method, url, body), 403, "area.refused");
      for (const [method, url, body] of manages(w))
        assertError(await me(method, url, body), 403, "access.denied");
      await unchanged();
    });

    test("admin: writes and manages members, but cannot make, change or remove owners, nor delete the organisation", async () => {
      const me = as(ADMIN);
      for (const [method, url] of reads(w))
        assertStatus(await me(method, url), 200, `admin ${method} ${url}`);
      const m = await me("POST", "/api/machines", { org_id: w.org, name: "admin-m" });
      assertStatus(m, 201);
      assertStatus(await me("DELETE", `/api/machines/${m.body.id}`), 204);

      const friend = await me("PUT", `/api/orgs/${w.org}/members`, {
        email: "friend@example.com",
        role: "writer",
        areas: ["work"],
      });
      assertStatus(friend, 200);
      assert.equal(friend.body.role, "writer");
      assertStatus(
        await as("friend@example.com")("GET", `/api/machines/${w.machine}`),
        200,
        "the new member reads",
      );
      const promoted = await me("PUT", `/api/orgs/${w.org}/members`, {
        email: "friend@example.com",
        role: "admin",
      });
      assertStatus(promoted, 200);
      assert.equal(promoted.body.role, "admin");
      assertError(
        await me("PUT", `/api/orgs/${w.org}/members`, { email: "friend@example.com", role: "owner" }),
        403,
        "access.denied",
      );
      assertError(
        await me("PUT", `/api/orgs/${w.org}/members`, { email: "stranger@example.com", role: "owner" }),
        403,
        "access.denied",
      );
      assertError(
        await me("PUT", `/api/orgs/${w.org}/members`, { email: OWNER, role: "viewer" }),
        403,
        "access.denied",
      );
      assertError(await me("DELETE", `/api/orgs/${w.org}/members/${w.ownerUser}`), 403, "access.denied");
      assertStatus(await me("DELETE", `/api/orgs/${w.org}/members/${friend.body.user_id}`), 204);
      assertError(
        await as("friend@example.com")("GET", `/api/machines/${w.machine}`),
        404,
        "not_found",
        undefined,
      );

      const renamed = await me("PATCH", `/api/orgs/${w.org}`, { name: "acme2" });
      assertStatus(renamed, 200);
      assert.deepEqual(renamed.body, { id: w.org, name: "acme2", role: "admin", areas: [] });
      assertStatus(await me("PATCH", `/api/orgs/${w.org}`, { name: "acme" }), 200);
      assertError(await me("DELETE", `/api/orgs/${w.org}`), 403, "access.denied");
      await unchanged();
    });

    test("owner: makes and unmakes owners, keeps at least one, deletes an empty organisation", async () => {
      const me = as(OWNER);
      const co = await me("PUT", `/api/orgs/${w.org}/members`, { email: "co@example.com", role: "owner" });
      assertStatus(co, 200);
      assert.equal(co.body.role, "owner");
      assert.equal((await as("co@example.com")("GET", `/api/orgs/${w.org}`)).body.role, "owner");
      assertStatus(
        await me("PUT", `/api/orgs/${w.org}/members`, { email: "co@example.com", role: "admin" }),
        200,
      );
      assertStatus(await me("DELETE", `/api/orgs/${w.org}/members/${co.body.user_id}`), 204);
      assertError(
        await me("PUT", `/api/orgs/${w.org}/members`, { email: OWNER, role: "admin" }),
        400,
        "request.invalid",
        "owner",
      );
      assertError(
        await me("DELETE", `/api/orgs/${w.org}/members/${w.ownerUser}`),
        400,
        "request.invalid",
        "owner",
      );
      assertStatus(await me("PATCH", `/api/orgs/${w.org}`, { name: "acme" }), 200);
      assertError(await me("DELETE", `/api/orgs/${w.org}`), 409, "machine.not_empty");

      const spare = await me("POST", "/api/orgs", { name: "spare" });
      assertStatus(spare, 201);
      const sm = await me("POST", "/api/machines", { org_id: spare.body.id, name: "sm" });
      const sa = await me("POST", "/api/agents", {
        org_id: spare.body.id,
        machine_id: sm.body.id,
        name: "sa",
      });
      assertStatus(await me("DELETE", `/api/agents/${sa.body.id}`), 204);
      assertStatus(await me("DELETE", `/api/machines/${sm.body.id}`), 204);
      assertStatus(await me("DELETE", `/api/orgs/${spare.body.id}`), 204);
      await unchanged();
    });

    test("a non-member gets 404 not_found for everything of the organisation, and its lists hide it", async () => {
      const me = as(OUTSIDER);
      const lists = {
        orgs: (await me("GET", "/api/orgs")).body.items,
        machines: (await me("GET", "/api/machines")).body.items,
        agents: (await me("GET", "/api/agents")).body.items,
        guilds: (await me("GET", "/api/guilds")).body.items,
      };
      assert.deepEqual(
        lists.orgs.map((o: { name: string }) => o.name),
        ["elsewhere"],
      );
      assert.deepEqual(lists.machines, []);
      assert.deepEqual(lists.agents, []);
      assert.deepEqual(lists.guilds, []);
      assert.deepEqual(
        (await me("GET", `/api/agents?machine_id=${w.machine}`)).body.items,
        [],
        "a foreign machine filter shows nothing",
      );

      const everything: [string, string, unknown?][] = [
        ...reads(w).filter(
          ([, url]) =>
            url.includes(w.org) || url.includes(w.machine) || url.includes(w.agent) || url.includes(w.guild),
        ),
        ...writes(w),
        ...manages(w),
      ].filter(([, url]) => !url.endsWith(`machine_id=${w.machine}`));
      for (const [method, url, body] of everything) {
        const r = await me(method, url, body);
        assertError(r, 404, "not_found");
        assert.doesNotMatch(
          r.body.error.message,
          /denied|role|member/i,
          `${method} ${url} hints at membership: ${r.body.error.message}`,
        );
      }
      // the answer for a thing that exists is the answer for a thing that does not
      const real = await me("GET", `/api/agents/${w.agent}`);
      const ghost = await me("GET", `/api/agents/${ghostId("agt")}`);
      assert.deepEqual(real.body, ghost.body);

      // its own guild cannot take the organisation's agent
      const mine = (await me("GET", "/api/orgs")).body.items[0].id as string;
      const g = await me("POST", "/api/guilds", { org_id: mine, name: "mine" });
      assertStatus(g, 201);
      assertError(
        await me("POST", `/api/guilds/${g.body.id}/agents`, { agent_id: w.agent }),
        404,
        "not_found",
      );
      // nor place an agent on the organisation's machine from its own organisation
      assertError(
        await me("POST", "/api/agents", { org_id: mine, machine_id: w.machine, name: "x" }),
        404,
        "not_found",
      );
      await unchanged();
    });

    test("a removed member loses access: 404 from then on", async () => {
      const owner = as(OWNER);
      const r = await owner("PUT", `/api/orgs/${w.org}/members`, {
        email: "temp@example.com",
        role: "writer",
        areas: ["work"],
      });
      assertStatus(r, 200);
      const temp = as("temp@example.com");
      assertStatus(await temp("GET", `/api/agents/${w.agent}`), 200);
      assertStatus(await owner("DELETE", `/api/orgs/${w.org}/members/${r.body.user_id}`), 204);
      assertError(await temp("GET", `/api/agents/${w.agent}`), 404, "not_found");
      assertError(await temp("GET", `/api/orgs/${w.org}`), 404, "not_found");
      assert.deepEqual((await temp("GET", "/api/machines")).body.items, []);
    });

    test("a demoted member loses the write at the very next request, a promoted one gains it", async () => {
      const owner = as(OWNER);
      const r = await owner("PUT", `/api/orgs/${w.org}/members`, {
        email: "demoted@example.com",
        role: "admin",
      });
      assertStatus(r, 200);
      const temp = as("demoted@example.com");
      // reads and a write first, so that whatever is kept of the member is warm
      assertStatus(await temp("GET", `/api/agents/${w.agent}`), 200);
      assert.equal(
        (await temp("GET", "/api/orgs")).body.items.find((o: { id: string }) => o.id === w.org)?.role,
        "admin",
      );
      assertStatus(await temp("PATCH", `/api/machines/${w.machine}`, { name: "m" }), 200);
      assertStatus(
        await owner("PUT", `/api/orgs/${w.org}/members`, { email: "demoted@example.com", role: "viewer" }),
        200,
      );
      assertError(await temp("PATCH", `/api/machines/${w.machine}`, { name: "m" }), 403, "access.denied");
      assert.equal((await temp("GET", `/api/orgs/${w.org}`)).body.role, "viewer");
      assert.equal(
        (await temp("GET", "/api/orgs")).body.items.find((o: { id: string }) => o.id === w.org)?.role,
        "viewer",
      );
      assertStatus(
        await owner("PUT", `/api/orgs/${w.org}/members`, { email: "demoted@example.com", role: "admin" }),
        200,
      );
      assertStatus(await temp("PATCH", `/api/machines/${w.machine}`, { name: "m" }), 200);
      assertStatus(await owner("DELETE", `/api/orgs/${w.org}/members/${r.body.user_id}`), 204);
      assertError(await temp("GET", `/api/machines/${w.machine}`), 404, "not_found");
      assertError(await temp("PATCH", `/api/machines/${w.machine}`, { name: "m" }), 404, "not_found");
    });
  });
}

describe("a custom TRUSTED_HEADER", () => {
  let t: TestServer;
  before(async () => {
    t = await startTestServer({ env: { AUTH_MODE: "trusted-header", TRUSTED_HEADER: "X-Auth-User" } });
  });
  after(async () => {
    await t?.close();
  });
  test("is the one read; the default header is ignored", async () => {
    assertError(
      await t.call("GET", "/api/orgs", undefined, { "x-forwarded-email": OWNER }),
      401,
      "auth.required",
      "x-auth-user",
    );
    assertStatus(await t.call("GET", "/api/orgs", undefined, { "x-auth-user": OWNER }), 200);
  });
});

describe("Host and Origin guards", () => {
  let t: TestServer;
  let pub: TestServer;
  const orgCount = async (s: TestServer): Promise<number> =>
    (await s.call("GET", "/api/orgs")).body.items.length as number;

  before(async () => {
    t = await startTestServer({ listen: true });
    pub = await startTestServer({ env: { PUBLIC_BASE_URL: "https://warren.example.com" } });
  });
  after(async () => {
    await t?.close();
    await pub?.close();
  });

  test("a Host that is not loopback is 421 host.refused, on every path", async () => {
    for (const host of [
      "evil.example.com",
      "evil.example.com:80",
      "10.0.0.1",
      "0.0.0.0:80",
      "localhost.evil.com",
      "127.0.0.1.evil.com",
      "[::2]:80",
      "a b",
      "x@127.0.0.1",
    ]) {
      assertError(await t.call("GET", "/health", undefined, { host }), 421, "host.refused");
      assertError(await t.call("GET", "/api/orgs", undefined, { host }), 421, "host.refused");
      assertError(await t.call("GET", "/metrics", undefined, { host }), 421, "host.refused");
      assertError(await t.call("POST", "/api/orgs", { name: "via-evil" }, { host }), 421, "host.refused");
    }
    assert.ok(
      !(await t.call("GET", "/api/orgs")).body.items.some((o: { name: string }) => o.name === "via-evil"),
    );
    for (const host of [
      "localhost",
      "localhost:8080",
      "127.0.0.1",
      "127.0.0.1:8080",
      "127.1.2.3:9",
      "[::1]:8080",
      "[::1]",
      "LOCALHOST:80",
      "app.localhost",
    ]) {
      assertStatus(await t.call("GET", "/health", undefined, { host }), 200, `Host ${host}`);
    }
  });

  test("with PUBLIC_BASE_URL, its host is answered too, other hosts are refused", async () => {
    for (const host of [
      "warren.example.com",
      "warren.example.com:443",
      "WARREN.example.com",
      "localhost:8080",
    ]) {
      assertStatus(await pub.call("GET", "/health", undefined, { host }), 200, `Host ${host}`);
    }
    for (const host of [
      "evil.example.com",
      "example.com",
      "warren.example.com.evil.com",
      "sub.warren.example.com",
    ]) {
      assertError(await pub.call("GET", "/health", undefined, { host }), 421, "host.refused");
    }
    const ok = await pub.call(
      "POST",
      "/api/orgs",
      { name: "public" },
      { host: "warren.example.com", origin: "https://warren.example.com" },
    );
    assertStatus(ok, 201);
    assertError(
      await pub.call(
        "POST",
        "/api/orgs",
        { name: "x" },
        { host: "warren.example.com", origin: "https://evil.example.com" },
      ),
      403,
      "origin.refused",
    );
    assertError(
      await pub.call(
        "POST",
        "/api/orgs",
        { name: "x" },
        { host: "warren.example.com", origin: "http://warren.example.com.evil.com" },
      ),
      403,
      "origin.refused",
    );
  });

  test("a change from another site's Origin is 403 origin.refused and changes nothing", async () => {
    const org = await t.call("POST", "/api/orgs", { name: "o" });
    assertStatus(org, 201, "no Origin (a CLI) passes");
    const before = await orgCount(t);
    for (const origin of [
      "https://evil.example.com",
      "http://localhost.evil.com",
      "null",
      "file://",
      "http://localhost:9999",
      "http://127.0.0.1:1",
      "not a url",
    ]) {
      assertError(await t.call("POST", "/api/orgs", { name: "csrf" }, { origin }), 403, "origin.refused");
      assertError(
        await t.call("PATCH", `/api/orgs/${org.body.id}`, { name: "csrf" }, { origin }),
        403,
        "origin.refused",
      );
      assertError(
        await t.call(
          "PUT",
          `/api/orgs/${org.body.id}/members`,
          { email: "x@y.z", role: "owner" },
          { origin },
        ),
        403,
        "origin.refused",
      );
      assertError(
        await t.call("DELETE", `/api/orgs/${org.body.id}`, undefined, { origin }),
        403,
        "origin.refused",
      );
    }
    assert.equal(await orgCount(t), before);
    assert.equal((await t.call("GET", `/api/orgs/${org.body.id}`)).body.name, "o");
    assert.equal((await t.call("GET", `/api/orgs/${org.body.id}/members`)).body.items.length, 1);
  });

  test("a same-origin change passes; a GET from another site passes", async () => {
    // inject's Host is localhost:80
    assertStatus(await t.call("POST", "/api/orgs", { name: "same" }, { origin: "http://localhost:80" }), 201);
    assertStatus(await t.call("POST", "/api/orgs", { name: "same" }, { origin: "http://localhost" }), 201);
    assertStatus(
      await t.call("POST", "/api/orgs", { name: "alias" }, { origin: "http://127.0.0.1" }),
      201,
      "a loopback alias on the same port",
    );
    assertStatus(
      await t.call(
        "POST",
        "/api/orgs",
        { name: "h" },
        { host: "127.0.0.1:8080", origin: "http://127.0.0.1:8080" },
      ),
      201,
    );
    for (const url of ["/api/orgs", "/health", "/api/openapi.json"]) {
      assertStatus(
        await t.call("GET", url, undefined, { origin: "https://evil.example.com" }),
        200,
        `GET ${url}`,
      );
    }
  });

  test("a WebSocket upgrade from another site's Origin is 403 origin.refused", async () => {
    const upgrade = {
      upgrade: "websocket",
      connection: "Upgrade",
      "sec-websocket-version": "13",
      "sec-websocket-key": "dGhlIHNhbXBsZSBub25jZQ==",
    };
    const r = await t.call("GET", "/api/orgs", undefined, { ...upgrade, origin: "https://evil.example.com" });
    assertError(r, 403, "origin.refused");
    const r2 = await t.call("GET", "/api/agents/agt_zzzzzzzzzzzzzzzz/cli/tty", undefined, {
      ...upgrade,
      origin: "https://evil.example.com",
    });
    assertError(r2, 403, "origin.refused");
    const same = await t.call("GET", "/api/orgs", undefined, { ...upgrade, origin: "http://localhost:80" });
    assert.notEqual(same.status, 403, "a same-origin upgrade is not refused by the guard");

    // and over a real socket: an upgrade request as a WebSocket client sends it
    assert.ok(t.url);
    const status = await new Promise<number>((resolve, reject) => {
      const req = http.request(`${t.url}/api/orgs`, {
        headers: { ...upgrade, origin: "https://evil.example.com" },
      });
      req.on("response", (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      });
      req.on("upgrade", (_res, socket) => {
        socket.destroy();
        reject(new Error("the upgrade from another origin was accepted"));
      });
      req.on("error", reject);
      req.end();
    });
    assert.equal(status, 403);
  });
});
