// An agent's sandbox policy decides what its commands may read and write beyond its home,
// enforced in the box (Landlock) whatever the files' modes allow.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { boxSkipReason } from "../box/fixture.js";
import { startTestServer, type TestServer } from "../support/server.js";

describe("the file part of the sandbox policy", { skip: boxSkipReason() ?? false }, () => {
  let t: TestServer;
  let org: { id: string };
  let a: { id: string; home: string };
  let b: { id: string; home: string };
  let shared: { a: { id: string }; b: { id: string; home: string } };

  const sh = async (agentId: string, command: string) => {
    const r = await t.call("POST", `/api/agents/${agentId}/exec`, { command });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    return r.body as { stdout: string; stderr: string; exit_code: number | null };
  };
  const policy = async (agentId: string, files: { read?: string[]; write?: string[] }) => {
    const r = await t.call("PATCH", `/api/agents/${agentId}`, { sandbox_policy: { files } });
    assert.equal(r.status, 200, JSON.stringify(r.body));
  };

  before(async () => {
    t = await startTestServer({ listen: true });
    org = (await t.call("POST", "/api/orgs", { name: "policy" })).body;
    const m = (await t.call("POST", "/api/machines", { org_id: org.id, name: "m" })).body;
    a = (await t.call("POST", "/api/agents", { org_id: org.id, machine_id: m.id, name: "a" })).body;
    b = (await t.call("POST", "/api/agents", { org_id: org.id, machine_id: m.id, name: "b" })).body;
    // b opens its home to everyone by its modes: only the policy keeps a out
    const setup = await sh(
      b.id,
      "chmod 711 ~ && mkdir -p pub drop && chmod 755 pub && chmod 777 drop && echo b-public > pub/f && chmod 644 pub/f",
    );
    assert.equal(setup.exit_code, 0, setup.stderr);
    const s = (await t.call("POST", "/api/machines", { org_id: org.id, name: "s", trust: "shared" })).body;
    shared = {
      a: (await t.call("POST", "/api/agents", { org_id: org.id, machine_id: s.id, name: "a" })).body,
      b: (await t.call("POST", "/api/agents", { org_id: org.id, machine_id: s.id, name: "b" })).body,
    };
  });
  after(async () => t.close());

  test("an empty policy: the system to read, the home, /tmp and /dev to write, nothing else", async () => {
    const ok = await sh(
      a.id,
      "echo mine > ~/f && cat ~/f && echo t > /tmp/t && cat /tmp/t && echo > /dev/null && " +
        "head -c 3 /etc/os-release >/dev/null && ls /usr/bin | grep -c '^sh$' && chmod +x ~/f && mkdir -p ~/d && mv ~/f ~/d/g && rm -r ~/d && echo done",
    );
    assert.equal(ok.exit_code, 0, ok.stderr);
    assert.equal(ok.stdout, "mine\nt\n1\ndone\n");

    const denied = await sh(a.id, `exec 2>&1; cat ${b.home}/pub/f; echo x > ${b.home}/drop/x; echo end`);
    assert.equal(denied.stdout.includes("b-public"), false, denied.stdout);
    assert.equal((denied.stdout.match(/Permission denied/g) ?? []).length, 2, denied.stdout);
    assert.equal((await sh(b.id, "ls drop")).stdout, "");
  });

  test("every folder can be listed and stat'ed as its modes allow; files outside the policy stay closed", async () => {
    const root = await sh(a.id, "ls /; stat -c '%U %a' / /usr /home");
    assert.equal(root.exit_code, 0, root.stderr);
    const names = root.stdout.split("\n");
    for (const n of ["data", "etc", "home", "proc", "tmp", "usr"]) assert.ok(names.includes(n), root.stdout);
    assert.match(root.stdout, /(?:^\S+ 755\n){3}$/m, root.stdout);
    const system = await sh(a.id, "ls /usr /opt/warren /home | wc -l");
    assert.equal(system.exit_code, 0, system.stderr);

    // names of a folder its owner opened (755), never the contents of its files (644)
    const listed = await sh(
      a.id,
      `exec 2>&1; ls ${b.home}/pub; cat ${b.home}/pub/f; head -c 1 ${b.home}/pub/f; echo end`,
    );
    assert.equal(listed.stdout.includes("b-public"), false, listed.stdout);
    assert.match(listed.stdout, /^f\n/);
    assert.equal((listed.stdout.match(/Permission denied/g) ?? []).length, 2, listed.stdout);
    // a home closed by its modes stays closed: b's is 711 now, a's 0700
    const closed = await sh(b.id, `exec 2>&1; ls ${a.home}; cat ${a.home}/f; echo end`);
    assert.equal((closed.stdout.match(/Permission denied/g) ?? []).length, 2, closed.stdout);
    const own = await sh(a.id, `exec 2>&1; ls ${b.home}; echo end`);
    assert.match(own.stdout, /Permission denied/);
    // boxd's own folder is box root's 0700
    assert.match((await sh(a.id, "exec 2>&1; ls /run/boxd; echo end")).stdout, /Permission denied/);
  });

  test("read paths open reading only; write paths open writing; the change reaches the next command", async () => {
    await policy(a.id, { read: [`${b.home}/pub`] });
    const read = await sh(a.id, `exec 2>&1; cat ${b.home}/pub/f; echo x > ${b.home}/drop/x || echo refused`);
    assert.equal(read.stdout.startsWith("b-public\n"), true, read.stdout);
    assert.match(read.stdout, /Permission denied/);

    await policy(a.id, { write: [`${b.home}/drop`] });
    const write = await sh(
      a.id,
      `exec 2>&1; echo from-a > ${b.home}/drop/x && echo wrote; cat ${b.home}/pub/f`,
    );
    assert.match(write.stdout, /^wrote\n/);
    assert.match(write.stdout, /Permission denied/, "the read grant went with the policy change");
    assert.equal((await sh(b.id, "cat drop/x")).stdout, "from-a\n");

    // a policy path does not lift the files' own modes: b's home itself stays closed to writes
    await policy(a.id, { write: [b.home] });
    const modes = await sh(a.id, `exec 2>&1; echo x > ${b.home}/new; echo end`);
    assert.match(modes.stdout, /Permission denied/);
    await policy(a.id, {});
  });

  test("paths that do not exist or that the agent cannot reach are left out, not an error", async () => {
    await policy(a.id, { read: ["/nowhere/at/all", "/run/boxd"], write: ["/home/none"] });
    const r = await sh(a.id, "echo fine");
    assert.equal(r.stdout, "fine\n");
    await policy(a.id, {});
  });

  test("a run reads its /agent input under the same walls", async () => {
    const run = await t.call("POST", `/api/agents/${a.id}/runs`, {
      kind: "command",
      command: `cat /agent/input; cat ${b.home}/pub/f 2>/dev/null || echo walled`,
      input: "the input",
    });
    assert.equal(run.status, 202, JSON.stringify(run.body));
    let rec: { status: string; output: string } = run.body;
    for (let i = 0; i < 200 && (rec.status === "queued" || rec.status === "running"); i++) {
      await new Promise((r) => setTimeout(r, 50));
      rec = (await t.call("GET", `/api/runs/${run.body.id}`)).body;
    }
    assert.equal(rec.status, "succeeded", JSON.stringify(rec));
    assert.equal(rec.output, "the inputwalled\n");
  });

  test("on a trust: shared machine the other homes are readable by default, never writable", async () => {
    const setup = await sh(shared.b.id, "echo shared-b > f");
    assert.equal(setup.exit_code, 0, setup.stderr);
    const r = await sh(
      shared.a.id,
      `exec 2>&1; cat ${shared.b.home}/f; echo x > ${shared.b.home}/g; echo end`,
    );
    assert.match(r.stdout, /^shared-b\n/);
    assert.match(r.stdout, /Permission denied/);
  });
});
