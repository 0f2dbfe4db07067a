// Every route of organisations, machines, agents and guilds, in-process (Fastify inject), on
// PGlite and on a real PostgreSQL server: answers field by field against the contract
// (../shared/api.md), placement, validation and the error envelope.
import assert from "node:assert/strict";
import { stat } from "node:fs/promises";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { dbLegs } from "../support/db.js";
import { startTestServer, type TestServer } from "../support/server.js";
import { assertError, assertStatus, contractRoutes, ghostId, idRe, isoRe, type Answer } from "./expect.js";

const emptyPolicy = { files: { read: [], write: [] }, network: { allow: [] } };

const exists = async (p: string): Promise<boolean> =>
  stat(p).then(
    () => true,
    () => false,
  );

for (const leg of dbLegs) {
  describe(`routes on ${leg.name}`, { skip: leg.skip ?? false }, () => {
    let t: TestServer;
    const call = (
      method: string,
      url: string,
      body?: unknown,
      headers?: Record<string, string>,
    ): Promise<Answer> => t.call(method, url, body, headers);

    const newOrg = async (name = "acme"): Promise<string> => {
      const r = await call("POST", "/api/orgs", { name });
      assertStatus(r, 201, "create org");
      return r.body.id as string;
    };
    const newMachine = async (orgId: string, extra: Record<string, unknown> = {}): Promise<any> => {
      const r = await call("POST", "/api/machines", { org_id: orgId, name: "box", ...extra });
      assertStatus(r, 201, "create machine");
      return r.body;
    };
    const newAgent = async (
      orgId: string,
      machineId: string,
      extra: Record<string, unknown> = {},
    ): Promise<any> => {
      const r = await call("POST", "/api/agents", {
        org_id: orgId,
        machine_id: machineId,
        name: "ada",
        ...extra,
      });
      assertStatus(r, 201, "create agent");
      return r.body;
    };

    before(async () => {
      t = await startTestServer({ leg });
    });
    after(async () => {
      await t?.close();
    });

    test("GET /health answers 200 {ok: true}", async () => {
      const r = await call("GET", "/health");
      assertStatus(r, 200);
      assert.deepEqual(r.body, { ok: true });
    });

    test("organisations: create, list, get, rename, members, delete", async () => {
      const c = await call("POST", "/api/orgs", { name: "  Acme Corp  " });
      assertStatus(c, 201);
      assert.match(c.body.id, idRe("org"));
      assert.equal(c.body.name, "Acme Corp", "the name is trimmed");
      assert.equal(c.body.role, "owner", "the operator owns what it creates");
      const id = c.body.id as string;

      const list = await call("GET", "/api/orgs");
      assertStatus(list, 200);
      assert.ok(Array.isArray(list.body.items));
      assert.deepEqual(
        list.body.items.find((o: { id: string }) => o.id === id),
        { id, name: "Acme Corp", role: "owner", areas: [] },
      );

      const g = await call("GET", `/api/orgs/${id}`);
      assertStatus(g, 200);
      assert.deepEqual(g.body, { id, name: "Acme Corp", role: "owner", areas: [] });

      const p = await call("PATCH", `/api/orgs/${id}`, { name: "Acme" });
      assertStatus(p, 200);
      assert.deepEqual(p.body, { id, name: "Acme", role: "owner", areas: [] });
      assert.equal((await call("GET", `/api/orgs/${id}`)).body.name, "Acme");

      const m = await call("GET", `/api/orgs/${id}/members`);
      assertStatus(m, 200);
      assert.equal(m.body.items.length, 1);
      assert.match(m.body.items[0].user_id, idRe("usr"));
      assert.equal(m.body.items[0].email, "operator@localhost");
      assert.equal(m.body.items[0].role, "owner");

      const put = await call("PUT", `/api/orgs/${id}/members`, {
        email: " Bob@Example.COM ",
        role: "viewer",
      });
      assertStatus(put, 200);
      assert.match(put.body.user_id, idRe("usr"));
      assert.equal(put.body.email, "bob@example.com", "emails are trimmed and lowercased");
      assert.equal(put.body.role, "viewer");
      const again = await call("PUT", `/api/orgs/${id}/members`, {
        email: "bob@example.com",
        role: "auditor",
      });
      assertStatus(again, 200);
      assert.equal(again.body.user_id, put.body.user_id, "the same email is the same user");
      assert.equal(again.body.role, "auditor");
      const m2 = await call("GET", `/api/orgs/${id}/members`);
      assert.deepEqual(
        m2.body.items.map((x: { email: string; role: string }) => [x.email, x.role]),
        [
          ["operator@localhost", "owner"],
          ["bob@example.com", "auditor"],
        ],
      );
      // text that is not Unicode (a lone surrogate, escaped in JSON) is refused on every route
      assertError(await call("POST", "/api/orgs", { name: "a\ud800b" }), 400, "request.invalid", "body.name");
      assertError(
        await call("PUT", `/api/orgs/${id}/members`, { email: "a@b.c", role: "viewer", ["x\udc00"]: 1 }),
        400,
        "request.invalid",
        "body (a name)",
      );
      // bytes that are not UTF-8 are refused, never taken as U+FFFD
      for (const bad of [
        Buffer.from([0x7b, 0x22, 0x6e, 0x61, 0x6d, 0x65, 0x22, 0x3a, 0x22, 0xff, 0x22, 0x7d]), // {"name":"\xff"}
        Buffer.concat([Buffer.from('{"name":"a'), Buffer.from([0xc3]), Buffer.from('"}')]), // a cut sequence
        Buffer.concat([Buffer.from('{"name":"'), Buffer.from([0xed, 0xa0, 0x80]), Buffer.from('"}')]), // an encoded surrogate
        Buffer.concat([Buffer.from('{"name":"'), Buffer.from([0xc0, 0xaf]), Buffer.from('"}')]), // an overlong form
      ]) {
        const r = await t.inject({
          method: "POST",
          url: "/api/orgs",
          payload: bad,
          headers: { "content-type": "application/json" },
        });
        assert.equal(r.statusCode, 400, r.body);
        const e = JSON.parse(r.body) as { error: { code: string; message: string } };
        assert.equal(e.error.code, "request.invalid");
        assert.match(e.error.message, /not valid UTF-8/);
      }
      assert.ok(
        !(await call("GET", "/api/orgs")).body.items.some((o: { name: string }) => o.name.includes("\ufffd")),
        "no organisation was made of them",
      );
      const fox = await call("POST", "/api/orgs", { name: "den \ud83e\udd8a" });
      assertStatus(fox, 201);
      assert.equal(fox.body.name, "den 🦊", "a well-formed pair is kept");
      assertError(
        await call("PUT", `/api/orgs/${id}/members`, { email: "not-an-email", role: "viewer" }),
        400,
        "request.invalid",
        "body.email",
      );
      assertError(
        await call("PUT", `/api/orgs/${id}/members`, { email: "a@b.c", role: "king" }),
        400,
        "request.invalid",
        "body.role",
      );
      assertError(
        await call("PUT", `/api/orgs/${id}/members`, { email: "operator@localhost", role: "viewer" }),
        400,
        "request.invalid",
        "owner",
      );

      const del = await call("DELETE", `/api/orgs/${id}/members/${put.body.user_id}`);
      assertStatus(del, 204);
      assert.equal(del.body, undefined, "a 204 has no body");
      assertError(await call("DELETE", `/api/orgs/${id}/members/${put.body.user_id}`), 404, "not_found");
      assert.equal((await call("GET", `/api/orgs/${id}/members`)).body.items.length, 1);

      // an organisation with a machine is not deleted
      const mch = await newMachine(id);
      assertError(await call("DELETE", `/api/orgs/${id}`), 409, "machine.not_empty");
      assertStatus(await call("DELETE", `/api/machines/${mch.id}`), 204);
      assertStatus(await call("DELETE", `/api/orgs/${id}`), 204);
      assertError(await call("GET", `/api/orgs/${id}`), 404, "not_found");
      assertError(await call("PATCH", `/api/orgs/${id}`, { name: "x" }), 404, "not_found");
      assertError(await call("DELETE", `/api/orgs/${id}`), 404, "not_found");
      assert.ok(!(await call("GET", "/api/orgs")).body.items.some((o: { id: string }) => o.id === id));
    });

    test("machines: defaults, every field, get, list, patch, stop, delete", async () => {
      const org = await newOrg();
      const other = await newOrg("other");
      const c = await call("POST", "/api/machines", { org_id: org, name: "m1" });
      assertStatus(c, 201);
      const m = c.body;
      assert.match(m.id, idRe("mch"));
      assert.equal(m.org_id, org);
      assert.equal(m.name, "m1");
      assert.equal(m.state, "stopped");
      assert.equal(typeof m.state_reason, "string");
      assert.match(m.state_changed_at, isoRe);
      assert.equal(m.max_workspace_mib, 51200);
      assert.equal(m.workspace_mib, null, "workspace_mib is null before the first measurement");
      assert.equal(m.memory_mib, 2048);
      assert.equal(m.cpus, 1);
      assert.equal(m.trust, "isolated");
      assert.equal(m.agents, 0);
      assert.equal(m.runaway_after_s, 60);
      assert.match(m.created_at, isoRe);

      const full = await call("POST", "/api/machines", {
        org_id: org,
        name: "m2",
        max_workspace_mib: 2048,
        memory_mib: 512,
        cpus: 1.5,
        trust: "shared",
      });
      assertStatus(full, 201);
      assert.equal(full.body.max_workspace_mib, 2048);
      assert.equal(full.body.memory_mib, 512);
      assert.equal(full.body.cpus, 1.5);
      assert.equal(full.body.trust, "shared");
      assert.equal(full.body.workspace_mib, null);

      const g = await call("GET", `/api/machines/${m.id}`);
      assertStatus(g, 200);
      const { box, ...machine } = g.body;
      assert.deepEqual(machine, m);
      assert.deepEqual(box, { state: "stopped", usage: null, events: [] }, "the box's health comes with GET");

      const all = await call("GET", "/api/machines");
      assertStatus(all, 200);
      const ids = all.body.items.map((x: { id: string }) => x.id);
      assert.ok(ids.includes(m.id) && ids.includes(full.body.id));
      const mine = await call("GET", `/api/machines?org_id=${org}`);
      assertStatus(mine, 200);
      assert.deepEqual(
        mine.body.items.map((x: { id: string }) => x.id),
        [m.id, full.body.id],
        "listed in creation order",
      );
      const theirs = await call("GET", `/api/machines?org_id=${other}`);
      assert.deepEqual(theirs.body.items, []);
      assertError(await call("GET", "/api/machines?org_id=nope"), 400, "request.invalid", "query.org_id");
      assertError(await call("GET", `/api/machines?org_id=${ghostId("org")}`), 404, "not_found");
      assertError(await call("GET", `/api/machines?color=red`), 400, "request.invalid", "color");

      const p = await call("PATCH", `/api/machines/${m.id}`, {
        name: "renamed",
        max_workspace_mib: 4096,
        memory_mib: 1024,
        cpus: 2,
      });
      assertStatus(p, 200);
      assert.equal(p.body.name, "renamed");
      assert.equal(p.body.max_workspace_mib, 4096);
      assert.equal(p.body.memory_mib, 1024);
      assert.equal(p.body.cpus, 2);
      assert.equal(p.body.trust, "isolated");
      assertError(
        await call("PATCH", `/api/machines/${m.id}`, { trust: "shared" }),
        400,
        "request.invalid",
        "trust",
      );
      assertError(
        await call("PATCH", `/api/machines/${m.id}`, { memory_mib: 1 }),
        400,
        "request.invalid",
        "body.memory_mib",
      );
      assertError(
        await call("PATCH", `/api/machines/${m.id}`, { cpus: 0 }),
        400,
        "request.invalid",
        "body.cpus",
      );
      assertError(
        await call("PATCH", `/api/machines/${m.id}`, { max_workspace_mib: 1.5 }),
        400,
        "request.invalid",
        "body.max_workspace_mib",
      );

      const s = await call("POST", `/api/machines/${m.id}/stop`);
      assertStatus(s, 200);
      assert.equal(s.body.id, m.id);
      assert.equal(s.body.state, "stopped");
      assert.equal(s.body.name, "renamed");

      const d = await call("DELETE", `/api/machines/${m.id}`);
      assertStatus(d, 204);
      assert.equal(d.body, undefined);
      assertError(await call("GET", `/api/machines/${m.id}`), 404, "not_found");
      assertError(await call("DELETE", `/api/machines/${m.id}`), 404, "not_found");
      assertError(await call("POST", `/api/machines/${m.id}/stop`), 404, "not_found");
      assertError(await call("PATCH", `/api/machines/${m.id}`, { name: "x" }), 404, "not_found");
      assertStatus(await call("DELETE", `/api/machines/${full.body.id}`), 204);

      // the machine's org must be one of the caller's
      assertError(
        await call("POST", "/api/machines", { org_id: ghostId("org"), name: "x" }),
        404,
        "not_found",
      );
    });

    test("agents: fields, lowest free slot, home on disk, list, delete", async () => {
      const org = await newOrg();
      const m = await newMachine(org);
      const created = [];
      for (let i = 0; i < 3; i++) {
        const c = await call("POST", "/api/agents", { org_id: org, machine_id: m.id, name: `agent-${i}` });
        assertStatus(c, 201);
        created.push(c.body);
      }
      for (const [i, a] of created.entries()) {
        assert.match(a.id, idRe("agt"));
        assert.equal(a.org_id, org);
        assert.equal(a.machine_id, m.id);
        assert.equal(a.name, `agent-${i}`);
        assert.equal(a.slot, i, "the lowest free slot");
        assert.equal(a.uid, 10000 + i);
        assert.equal(a.home, `/home/${a.id}`);
        assert.deepEqual(a.ports, { first: 20000 + 100 * i, last: 20000 + 100 * i + 99 });
        assert.equal(a.max_workspace_mib, 10240, "the default cap is min(10240, WORKSPACE_MAX_MIB)");
        assert.equal(a.workspace_mib, null);
        assert.deepEqual(a.sandbox_policy, emptyPolicy);
        assert.match(a.created_at, isoRe);
        assert.equal(a.warnings, undefined, "no warning when the cap fits");
        assert.ok(
          await exists(path.join(t.stateRoot, "workspaces", m.id, a.id)),
          "the home exists on the host",
        );
      }
      const g = await call("GET", `/api/agents/${created[1].id}`);
      assertStatus(g, 200);
      assert.deepEqual(g.body, created[1]);
      assert.equal((await call("GET", `/api/machines/${m.id}`)).body.agents, 3);

      // delete the middle one: its home goes, and the next agent takes its slot
      const d = await call("DELETE", `/api/agents/${created[1].id}`);
      assertStatus(d, 204);
      assert.equal(d.body, undefined);
      assert.ok(
        !(await exists(path.join(t.stateRoot, "workspaces", m.id, created[1].id))),
        "the home is removed",
      );
      assertError(await call("GET", `/api/agents/${created[1].id}`), 404, "not_found");
      assertError(await call("DELETE", `/api/agents/${created[1].id}`), 404, "not_found");
      assertError(await call("PATCH", `/api/agents/${created[1].id}`, { name: "x" }), 404, "not_found");
      const next = await newAgent(org, m.id, { name: "next" });
      assert.equal(next.slot, 1);
      assert.equal(next.uid, 10001);
      assert.deepEqual(next.ports, { first: 20100, last: 20199 });
      assert.equal(next.home, `/home/${next.id}`);
      const fourth = await newAgent(org, m.id, { name: "fourth", max_workspace_mib: 100 });
      assert.equal(fourth.slot, 3);
      assert.equal(fourth.max_workspace_mib, 100);

      // list: all, by org, by machine
      const all = await call("GET", "/api/agents");
      assertStatus(all, 200);
      const allIds = all.body.items.map((a: { id: string }) => a.id);
      for (const a of [created[0], created[2], next, fourth]) assert.ok(allIds.includes(a.id));
      assert.ok(!allIds.includes(created[1].id));
      const byOrg = await call("GET", `/api/agents?org_id=${org}`);
      assert.deepEqual(
        byOrg.body.items.map((a: { id: string }) => a.id),
        [created[0].id, created[2].id, next.id, fourth.id],
      );
      const m2 = await newMachine(org);
      const onM2 = await newAgent(org, m2.id);
      assert.equal(onM2.slot, 0, "slots are per machine");
      const byMachine = await call("GET", `/api/agents?machine_id=${m2.id}`);
      assert.deepEqual(
        byMachine.body.items.map((a: { id: string }) => a.id),
        [onM2.id],
      );
      assert.deepEqual((await call("GET", `/api/agents?machine_id=${ghostId("mch")}`)).body.items, []);
      assertError(
        await call("GET", "/api/agents?machine_id=bad"),
        400,
        "request.invalid",
        "query.machine_id",
      );
      assertError(await call("GET", `/api/agents?org_id=${ghostId("org")}`), 404, "not_found");

      // creation refusals
      const otherOrg = await newOrg("other");
      assertError(
        await call("POST", "/api/agents", { org_id: otherOrg, machine_id: m.id, name: "x" }),
        404,
        "not_found",
      );
      assertError(
        await call("POST", "/api/agents", { org_id: org, machine_id: ghostId("mch"), name: "x" }),
        404,
        "not_found",
      );
      assertError(
        await call("POST", "/api/agents", { org_id: ghostId("org"), machine_id: m.id, name: "x" }),
        404,
        "not_found",
      );
      // above the host's WORKSPACE_MAX_MIB: saved as the host's cap, with a warning that says so
      const over = await call("POST", "/api/agents", {
        org_id: org,
        machine_id: m.id,
        name: "over",
        max_workspace_mib: 10241,
      });
      assert.equal(over.status, 201);
      assert.equal(over.body.max_workspace_mib, 10240);
      assert.ok(
        (over.body.warnings as string[]).some((w) => /above this host's cap of 10240 MiB/.test(w)),
        JSON.stringify(over.body.warnings),
      );
      assert.equal((await call("DELETE", `/api/agents/${over.body.id}`)).status, 204);
      assertError(
        await call("POST", "/api/agents", { org_id: org, machine_id: m.id, name: "x", max_workspace_mib: 0 }),
        400,
        "request.invalid",
        "body.max_workspace_mib",
      );
      assertError(
        await call("POST", "/api/agents", { org_id: org, machine_id: m.id }),
        400,
        "request.invalid",
        "body.name",
      );
      assertError(
        await call("POST", "/api/agents", { org_id: org, name: "x" }),
        400,
        "request.invalid",
        "body.machine_id",
      );

      for (const a of [created[0], created[2], next, fourth, onM2])
        assertStatus(await call("DELETE", `/api/agents/${a.id}`), 204);
    });

    test("PATCH /api/agents/:id: name, cap, sandbox policy (valid and refused)", async () => {
      const org = await newOrg();
      const m = await newMachine(org);
      const a = await newAgent(org, m.id);

      const n = await call("PATCH", `/api/agents/${a.id}`, { name: "grace" });
      assertStatus(n, 200);
      assert.equal(n.body.name, "grace");
      assert.equal(n.body.id, a.id);
      assert.equal(n.body.slot, a.slot);
      assert.equal(n.body.home, a.home);
      assert.deepEqual(n.body.ports, a.ports);
      assert.equal(n.body.max_workspace_mib, a.max_workspace_mib);

      const cap = await call("PATCH", `/api/agents/${a.id}`, { max_workspace_mib: 2000 });
      assertStatus(cap, 200);
      assert.equal(cap.body.max_workspace_mib, 2000);
      assert.equal(cap.body.name, "grace");

      const same = await call("PATCH", `/api/agents/${a.id}`, {});
      assertStatus(same, 200);
      assert.equal(same.body.name, "grace");

      const policy = {
        files: { read: ["/opt/data", "/etc/ssl"], write: ["/var/cache/agent"] },
        network: {
          allow: [
            "example.com",
            "api.example.com:443",
            "*.github.com",
            "*.example.org:8443",
            "203.0.113.1:5432",
            "1.2.3.4",
          ],
        },
      };
      const p = await call("PATCH", `/api/agents/${a.id}`, { sandbox_policy: policy });
      assertStatus(p, 200);
      assert.deepEqual(p.body.sandbox_policy, policy);
      assert.deepEqual(
        (await call("GET", `/api/agents/${a.id}`)).body.sandbox_policy,
        policy,
        "the policy is stored",
      );

      const partial = await call("PATCH", `/api/agents/${a.id}`, {
        sandbox_policy: { network: { allow: ["pypi.org"] } },
      });
      assertStatus(partial, 200);
      assert.deepEqual(
        partial.body.sandbox_policy,
        { files: { read: [], write: [] }, network: { allow: ["pypi.org"] } },
        "absent parts are empty",
      );
      const empty = await call("PATCH", `/api/agents/${a.id}`, { sandbox_policy: {} });
      assertStatus(empty, 200);
      assert.deepEqual(empty.body.sandbox_policy, emptyPolicy);

      const refusedHosts = [
        "*",
        "*:443",
        "*.com",
        "*.com:443",
        "*.*.example.com",
        "foo.*.example.com",
        "example.com:0",
        "example.com:65536",
        "example.com:99999",
        "example.com:-1",
        "example.com:http",
        "example.com:",
        "",
        " example.com",
        "exa mple.com",
        "http://example.com",
        "example.com/path",
        "256.1.1.1",
        "1.2.3",
        "-bad.example.com",
      ];
      for (const bad of refusedHosts) {
        const r = await call("PATCH", `/api/agents/${a.id}`, {
          sandbox_policy: { network: { allow: ["ok.example.com", bad] } },
        });
        assertError(r, 400, "request.invalid", "body.sandbox_policy.network.allow.1");
      }
      for (const bad of ["relative/path", "/a/../etc", "", "/with\u0000nul"]) {
        const r = await call("PATCH", `/api/agents/${a.id}`, {
          sandbox_policy: { files: { read: [bad], write: [] } },
        });
        assertError(r, 400, "request.invalid", "body.sandbox_policy.files.read.0");
      }
      assertError(
        await call("PATCH", `/api/agents/${a.id}`, { sandbox_policy: { network: { allow: "example.com" } } }),
        400,
        "request.invalid",
        "body.sandbox_policy.network.allow",
      );
      assertError(
        await call("PATCH", `/api/agents/${a.id}`, { sandbox_policy: { network: { deny: [] } } }),
        400,
        "request.invalid",
        "deny",
      );
      assertError(
        await call("PATCH", `/api/agents/${a.id}`, { sandbox_policy: { proxy: true } }),
        400,
        "request.invalid",
        "proxy",
      );
      assertError(
        await call("PATCH", `/api/agents/${a.id}`, { sandbox_policy: null }),
        400,
        "request.invalid",
        "body.sandbox_policy",
      );
      assertError(
        await call("PATCH", `/api/agents/${a.id}`, { name: "" }),
        400,
        "request.invalid",
        "body.name",
      );
      assertError(
        await call("PATCH", `/api/agents/${a.id}`, { name: "   " }),
        400,
        "request.invalid",
        "body.name",
      );
      assertError(
        await call("PATCH", `/api/agents/${a.id}`, { name: "x".repeat(101) }),
        400,
        "request.invalid",
        "body.name",
      );
      assertError(
        await call("PATCH", `/api/agents/${a.id}`, { name: "a\nb" }),
        400,
        "request.invalid",
        "body.name",
      );
      assertError(
        await call("PATCH", `/api/agents/${a.id}`, { max_workspace_mib: "100" }),
        400,
        "request.invalid",
        "body.max_workspace_mib",
      );
      assertError(
        await call("PATCH", `/api/agents/${a.id}`, { max_workspace_mib: -5 }),
        400,
        "request.invalid",
        "body.max_workspace_mib",
      );
      assertError(await call("PATCH", `/api/agents/${a.id}`, { slot: 7 }), 400, "request.invalid", "slot");
      // nothing of the refused patches stuck
      const after = (await call("GET", `/api/agents/${a.id}`)).body;
      assert.equal(after.name, "grace");
      assert.equal(after.max_workspace_mib, 2000);
      assert.deepEqual(after.sandbox_policy, emptyPolicy);

      assertStatus(await call("DELETE", `/api/agents/${a.id}`), 204);
      assertStatus(await call("DELETE", `/api/machines/${m.id}`), 204);
    });

    test("a cap past the machine's unreserved room comes back with a warning", async () => {
      const org = await newOrg();
      const m = await newMachine(org, { max_workspace_mib: 1000 });
      const a = await newAgent(org, m.id, { max_workspace_mib: 600 });
      assert.equal(a.warnings, undefined);
      const b = await newAgent(org, m.id, { max_workspace_mib: 600 });
      assert.ok(Array.isArray(b.warnings), `expected warnings, got ${JSON.stringify(b)}`);
      assert.equal(b.warnings.length, 1);
      assert.equal(typeof b.warnings[0], "string");
      assert.match(b.warnings[0], /400/, "the warning says how much room is left");
      assert.equal(b.max_workspace_mib, 600, "the agent is still created with its cap");
      // the warning is about that answer only
      assert.equal((await call("GET", `/api/agents/${b.id}`)).body.warnings, undefined);

      // raising a cap past the room warns too; lowering does not
      const up = await call("PATCH", `/api/agents/${a.id}`, { max_workspace_mib: 900 });
      assertStatus(up, 200);
      assert.equal(up.body.max_workspace_mib, 900);
      assert.ok(
        Array.isArray(up.body.warnings) && up.body.warnings.length === 1,
        `expected a warning, got ${JSON.stringify(up.body)}`,
      );
      const down = await call("PATCH", `/api/agents/${a.id}`, { max_workspace_mib: 300 });
      assertStatus(down, 200);
      assert.equal(down.body.warnings, undefined);

      // a full machine: the default cap (10240) alone passes 1000
      const c = await newAgent(org, m.id);
      assert.ok(
        Array.isArray(c.warnings) && c.warnings.length === 1,
        `expected a warning, got ${JSON.stringify(c)}`,
      );

      // DELETE a machine with agents: 409 machine.not_empty until its agents are gone
      assertError(await call("DELETE", `/api/machines/${m.id}`), 409, "machine.not_empty");
      assertStatus(await call("GET", `/api/machines/${m.id}`), 200);
      for (const x of [a, b]) assertStatus(await call("DELETE", `/api/agents/${x.id}`), 204);
      assertError(await call("DELETE", `/api/machines/${m.id}`), 409, "machine.not_empty");
      assertStatus(await call("DELETE", `/api/agents/${c.id}`), 204);
      assertStatus(await call("DELETE", `/api/machines/${m.id}`), 204);
      assertError(await call("GET", `/api/machines/${m.id}`), 404, "not_found");
      assert.ok(
        !(await exists(path.join(t.stateRoot, "workspaces", m.id))),
        "the machine's folder is removed",
      );
    });

    test("guilds: create, get, list, add and remove agents, delete", async () => {
      const org = await newOrg();
      const m = await newMachine(org);
      const a1 = await newAgent(org, m.id, { name: "a1" });
      const a2 = await newAgent(org, m.id, { name: "a2" });
      const otherOrg = await newOrg("other");
      const om = await newMachine(otherOrg);
      const foreign = await newAgent(otherOrg, om.id);

      const c = await call("POST", "/api/guilds", { org_id: org, name: "crew" });
      assertStatus(c, 201);
      assert.match(c.body.id, idRe("gld"));
      assert.equal(c.body.org_id, org);
      assert.equal(c.body.name, "crew");
      assert.deepEqual(c.body.agent_ids, []);
      const gid = c.body.id as string;

      for (const a of [a2, a1, a1]) {
        const r = await call("POST", `/api/guilds/${gid}/agents`, { agent_id: a.id });
        assertStatus(r, 204, "add agent (twice is fine)");
        assert.equal(r.body, undefined);
      }
      const g = await call("GET", `/api/guilds/${gid}`);
      assertStatus(g, 200);
      assert.equal(g.body.id, gid);
      assert.equal(g.body.org_id, org);
      assert.equal(g.body.name, "crew");
      assert.deepEqual([...g.body.agent_ids].sort(), [a1.id, a2.id].sort());

      assertError(
        await call("POST", `/api/guilds/${gid}/agents`, { agent_id: foreign.id }),
        404,
        "not_found",
      );
      assertError(
        await call("POST", `/api/guilds/${gid}/agents`, { agent_id: ghostId("agt") }),
        404,
        "not_found",
      );
      assertError(
        await call("POST", `/api/guilds/${ghostId("gld")}/agents`, { agent_id: a1.id }),
        404,
        "not_found",
      );
      assertError(
        await call("POST", `/api/guilds/${gid}/agents`, { agent_id: "agt_x" }),
        400,
        "request.invalid",
        "body.agent_id",
      );
      assertError(
        await call("POST", `/api/guilds/${gid}/agents`, {}),
        400,
        "request.invalid",
        "body.agent_id",
      );
      assert.ok(!(await call("GET", `/api/guilds/${gid}`)).body.agent_ids.includes(foreign.id));

      const list = await call("GET", `/api/guilds?org_id=${org}`);
      assertStatus(list, 200);
      assert.deepEqual(
        list.body.items.map((x: { id: string }) => x.id),
        [gid],
      );
      assert.ok((await call("GET", "/api/guilds")).body.items.some((x: { id: string }) => x.id === gid));
      assert.deepEqual((await call("GET", `/api/guilds?org_id=${otherOrg}`)).body.items, []);
      assertError(await call("GET", `/api/guilds?org_id=${ghostId("org")}`), 404, "not_found");

      const rm = await call("DELETE", `/api/guilds/${gid}/agents/${a2.id}`);
      assertStatus(rm, 204);
      assertError(await call("DELETE", `/api/guilds/${gid}/agents/${a2.id}`), 404, "not_found");
      assert.deepEqual((await call("GET", `/api/guilds/${gid}`)).body.agent_ids, [a1.id]);

      // deleting an agent takes it out of its guilds
      assertStatus(await call("DELETE", `/api/agents/${a1.id}`), 204);
      assert.deepEqual((await call("GET", `/api/guilds/${gid}`)).body.agent_ids, []);

      const d = await call("DELETE", `/api/guilds/${gid}`);
      assertStatus(d, 204);
      assertError(await call("GET", `/api/guilds/${gid}`), 404, "not_found");
      assertError(await call("DELETE", `/api/guilds/${gid}`), 404, "not_found");
      assertError(await call("POST", "/api/guilds", { org_id: ghostId("org"), name: "x" }), 404, "not_found");
      assertStatus(await call("GET", `/api/agents/${a2.id}`), 200, "a guild's agents stay");
    });

    test("bad ids in paths are 400 request.invalid naming path.id", async () => {
      const org = await newOrg();
      const routes: [string, string, unknown?][] = [
        ["GET", "/api/orgs/X"],
        ["PATCH", "/api/orgs/mch_aaaaaaaaaaaaaaaa", { name: "x" }],
        ["DELETE", "/api/orgs/org_short"],
        ["GET", "/api/orgs/ORG_AAAAAAAAAAAAAAAA/members"],
        ["PUT", "/api/orgs/123/members", { email: "a@b.c", role: "viewer" }],
        ["GET", "/api/machines/agt_aaaaaaaaaaaaaaaa"],
        ["PATCH", "/api/machines/mch_aaaaaaaaaaaaaaaaa", { name: "x" }],
        ["POST", "/api/machines/mch_aaaaaaaaaaaaaaa!/stop"],
        ["DELETE", "/api/machines/mch_"],
        ["GET", "/api/agents/agt_aaaaaaaa%20aaaaaaa"],
        ["PATCH", "/api/agents/1", { name: "x" }],
        ["DELETE", "/api/agents/agt_aaaaaaaaaaaaaaa."],
        ["POST", "/api/agents/gld_aaaaaaaaaaaaaaaa/exec", { argv: ["true"] }],
        ["GET", "/api/guilds/gld"],
        ["DELETE", "/api/guilds/gld_aaaaaaaaaaaaaaaa%00"],
        ["POST", "/api/guilds/x/agents", { agent_id: ghostId("agt") }],
        ["DELETE", "/api/guilds/gld_-aaaaaaaaaaaaaaa/agents/agt_aaaaaaaaaaaaaaaa"],
      ];
      for (const [method, url, body] of routes)
        assertError(await call(method, url, body), 400, "request.invalid", "path.id");
      assertError(
        await call("DELETE", `/api/guilds/${ghostId("gld")}/agents/agt_nope`),
        400,
        "request.invalid",
        "path.agent_id",
      );
      assertError(
        await call("DELETE", `/api/orgs/${org}/members/bob`),
        400,
        "request.invalid",
        "path.user_id",
      );
      // well-formed ids that name nothing are 404
      for (const [method, url] of [
        ["GET", `/api/orgs/${ghostId("org")}`],
        ["GET", `/api/machines/${ghostId("mch")}`],
        ["GET", `/api/agents/${ghostId("agt")}`],
        ["GET", `/api/guilds/${ghostId("gld")}`],
        ["DELETE", `/api/orgs/${org}/members/${ghostId("usr")}`],
        ["POST", `/api/agents/${ghostId("agt")}/exec`],
      ] as const) {
        assertError(
          await call(method, url, method === "POST" ? { argv: ["true"] } : undefined),
          404,
          "not_found",
        );
      }
    });

    test("bodies: unknown fields, wrong types, missing fields, invalid JSON, not an object", async () => {
      const org = await newOrg();
      const m = await newMachine(org);
      const a = await newAgent(org, m.id);
      const g = (await call("POST", "/api/guilds", { org_id: org, name: "g" })).body;

      const unknown: [string, string, Record<string, unknown>][] = [
        ["POST", "/api/orgs", { name: "x", color: "red" }],
        ["PATCH", `/api/orgs/${org}`, { name: "x", owner: "me" }],
        ["PUT", `/api/orgs/${org}/members`, { email: "a@b.c", role: "viewer", admin: true }],
        ["POST", "/api/machines", { org_id: org, name: "x", gpu: 1 }],
        ["PATCH", `/api/machines/${m.id}`, { state: "running" }],
        ["POST", "/api/agents", { org_id: org, machine_id: m.id, name: "x", slot: 3 }],
        ["PATCH", `/api/agents/${a.id}`, { home: "/root" }],
        ["POST", "/api/guilds", { org_id: org, name: "x", agent_ids: [] }],
        ["POST", `/api/guilds/${g.id}/agents`, { agent_id: a.id, extra: 1 }],
      ];
      for (const [method, url, body] of unknown) {
        const extra = Object.keys(body).at(-1) as string;
        assertError(await call(method, url, body), 400, "request.invalid", extra);
      }

      assertError(await call("POST", "/api/orgs", {}), 400, "request.invalid", "body.name");
      assertError(await call("POST", "/api/orgs", { name: 42 }), 400, "request.invalid", "body.name");
      assertError(await call("POST", "/api/orgs", { name: null }), 400, "request.invalid", "body.name");
      assertError(await call("POST", "/api/orgs", [{ name: "x" }]), 400, "request.invalid", "body");
      assertError(await call("POST", "/api/orgs", "x"), 400, "request.invalid", "body");
      assertError(
        await call("POST", "/api/machines", { org_id: org, name: "x", trust: "open" }),
        400,
        "request.invalid",
        "body.trust",
      );
      assertError(
        await call("POST", "/api/machines", { org_id: org, name: "x", cpus: "2" }),
        400,
        "request.invalid",
        "body.cpus",
      );
      assertError(
        await call("POST", "/api/machines", { org_id: org, name: "x", memory_mib: 1e12 }),
        400,
        "request.invalid",
        "body.memory_mib",
      );
      assertError(
        await call("POST", "/api/machines", { org_id: "org_1", name: "x" }),
        400,
        "request.invalid",
        "body.org_id",
      );
      assertError(await call("POST", "/api/machines", { name: "x" }), 400, "request.invalid", "body.org_id");
      assertError(await call("POST", "/api/guilds", { org_id: org }), 400, "request.invalid", "body.name");

      for (const [method, url] of [
        ["POST", "/api/orgs"],
        ["PATCH", `/api/orgs/${org}`],
        ["PUT", `/api/orgs/${org}/members`],
        ["POST", "/api/machines"],
        ["PATCH", `/api/machines/${m.id}`],
        ["POST", "/api/agents"],
        ["PATCH", `/api/agents/${a.id}`],
        ["POST", "/api/guilds"],
        ["POST", `/api/guilds/${g.id}/agents`],
        ["POST", `/api/agents/${a.id}/exec`],
      ] as const) {
        for (const payload of ['{"name": ', "{name: 'x'}", "nope", '{"a":1}}', "\u0000"]) {
          const r = await t.inject({ method, url, payload, headers: { "content-type": "application/json" } });
          assertError({ status: r.statusCode, body: r.json() }, 400, "request.invalid", "JSON");
        }
      }
      assertStatus(await call("GET", `/api/agents/${a.id}`), 200, "the agent is unchanged");
    });

    test("unknown routes and methods: 404 not_found in the envelope", async () => {
      for (const [method, url] of [
        ["POST", "/nope"],
        ["GET", "/api"],
        ["GET", "/api/"],
        ["GET", "/api/nope/index.html"],
        ["GET", "/api/widgets"],
        ["POST", "/api/orgs/x/y/z"],
        ["PUT", "/api/agents"],
        ["DELETE", "/api/orgs"],
        ["GET", "/api/machines/mch_aaaaaaaaaaaaaaaa/start"],
      ] as const) {
        const r = await call(method, url);
        assertError(r, 404, "not_found");
      }
    });

    test("every other GET is the operator app's page (history fallback); a missing build file is a 404", async () => {
      for (const url of [
        "/",
        "/nope",
        "/agents/agt_aaaaaaaaaaaaaaaa/runs/run_aaaaaaaaaaaaaaaa",
        "/secrets?org=x",
      ]) {
        const r = await t.inject({ method: "GET", url });
        assert.equal(r.statusCode, 200, url);
        assert.match(String(r.headers["content-type"]), /^text\/html/, url);
        assert.match(r.body, /<title>warren<\/title>/, url);
      }
      const gone = await t.inject({ method: "GET", url: "/assets/none-such.js" });
      assertError({ status: gone.statusCode, body: gone.json() }, 404, "not_found");
      const up = await t.inject({ method: "GET", url: "/../../etc/passwd" });
      assert.ok(!up.body.includes("root:"), "a path climbed out of the app's folder");
    });

    test("a bad percent-escape in the path answers 400 request.invalid in the envelope", async () => {
      for (const url of ["/api/agents/%zz", "/api/orgs/%E0%A4%A", "/nope%"]) {
        const r = await t.inject({ method: "GET", url });
        assertError({ status: r.statusCode, body: r.json() }, 400, "request.invalid");
      }
    });

    test("a path id longer than the router's limit answers 400 request.invalid in the envelope", async () => {
      const r = await t.inject({ method: "GET", url: `/api/agents/${"a".repeat(3000)}` });
      assertError({ status: r.statusCode, body: r.json() }, 400, "request.invalid");
    });

    test("/api/openapi.json lists every route", async () => {
      const r = await call("GET", "/api/openapi.json");
      assertStatus(r, 200);
      assert.equal(r.body.openapi, "3.1.0");
      assert.equal(typeof r.body.info?.title, "string");
      for (const { method, path: p } of contractRoutes) {
        const op = r.body.paths?.[p]?.[method];
        assert.ok(op, `the document lacks ${method.toUpperCase()} ${p}`);
        assert.ok(op.responses, `${method} ${p} has no responses`);
        if (["post", "put", "patch"].includes(method) && !p.endsWith("/stop") && !p.endsWith("/cli")) {
          assert.ok(op.requestBody, `${method.toUpperCase()} ${p} has no request body schema`);
        }
      }
      // Operations name their shapes; the shapes are components.
      const deref = (schema: any): any => {
        const ref: unknown = schema?.$ref;
        if (typeof ref !== "string") return schema;
        const name = ref.replace("#/components/schemas/", "");
        assert.ok(r.body.components.schemas[name], `${ref} is not a component`);
        return r.body.components.schemas[name];
      };
      const agentBody = deref(
        r.body.paths["/api/agents"].post.requestBody.content["application/json"].schema,
      );
      assert.deepEqual([...agentBody.required].sort(), ["machine_id", "name", "org_id"]);
      const machine = deref(
        r.body.paths["/api/machines/{id}"].get.responses["200"].content["application/json"].schema,
      );
      for (const f of ["id", "org_id", "name", "state", "max_workspace_mib", "workspace_mib"])
        assert.ok(machine.properties[f], `machine schema lacks ${f}`);
      const agent = deref(
        r.body.paths["/api/agents/{id}"].get.responses["200"].content["application/json"].schema,
      );
      for (const f of [
        "id",
        "org_id",
        "machine_id",
        "name",
        "slot",
        "home",
        "ports",
        "max_workspace_mib",
        "workspace_mib",
      ]) {
        assert.ok(agent.properties[f], `agent schema lacks ${f}`);
      }
    });

    test("/metrics counts requests and errors by code", async () => {
      assertError(await call("GET", "/api/agents/agt_zzzzzzzzzzzzzzzz"), 404, "not_found");
      assertError(await call("POST", "/api/orgs", {}), 400, "request.invalid");
      assertError(await call("GET", "/api/nope"), 404, "not_found");
      const org = await newOrg();
      const m = await newMachine(org);
      await newAgent(org, m.id);
      assertError(await call("DELETE", `/api/machines/${m.id}`), 409, "machine.not_empty");
      const r = await t.inject({ method: "GET", url: "/metrics" });
      assert.equal(r.statusCode, 200);
      assert.match(String(r.headers["content-type"]), /text\/plain/);
      const text = r.body;
      assert.match(text, /^# TYPE warren_http_requests_total counter$/m);
      assert.match(
        text,
        /^warren_http_requests_total\{[^}]*route="\/api\/orgs"[^}]*status="201"[^}]*\} \d+/m,
      );
      assert.match(text, /^warren_http_requests_total\{[^}]*status="404"[^}]*\} \d+/m);
      assert.match(text, /^# TYPE warren_http_errors_total counter$/m);
      for (const code of ["not_found", "request.invalid", "machine.not_empty"]) {
        const line = new RegExp(
          `^warren_http_errors_total\\{code="${code.replace(".", "\\.")}"\\} (\\d+)`,
          "m",
        ).exec(text);
        assert.ok(line, `no warren_http_errors_total{code="${code}"} in /metrics`);
        assert.ok(Number(line[1]) >= 1);
      }
      assert.match(text, /^warren_http_request_duration_seconds_bucket\{/m);
    });
  });
}
