// Secrets on real boxes, through the API, on PGlite and PostgreSQL: sealed at rest, granted,
// on the command's environment alone, redacted from every output that leaves the box, the
// server's log and the state tree; a wrong or zero key refused; rotation keeps every value.
import assert from "node:assert/strict";
import { createHash, randomBytes } from "node:crypto";
import { mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { parseConfig } from "../../src/config/index.js";
import { rotateKey } from "../../src/main.js";
import { MasterKeyError } from "../../src/secrets/master-key.js";
import { boxSkipReason } from "../box/fixture.js";
import { dbLegs } from "../support/db.js";
import { startTestServer, type TestServer } from "../support/server.js";

const sha = (s: string) => createHash("sha256").update(s).digest("hex");
/** A value that looks like a token: letters and digits, never in ordinary text. */
const token = (n: number) => randomBytes(n).toString("base64url");

/** Every file under `dir` whose raw bytes hold `needle`. */
async function filesHolding(dir: string, needle: Buffer): Promise<string[]> {
  const found: string[] = [];
  const walk = async (d: string): Promise<void> => {
    for (const e of await readdir(d, { withFileTypes: true })) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) await walk(p);
      else if (e.isFile() && (await readFile(p)).includes(needle)) found.push(p);
    }
  };
  await walk(dir);
  return found;
}

/** The environment of every boxd on this host (argv[0] /run/warren/boxd). */
async function boxdEnvirons(): Promise<{ pid: string; environ: Buffer }[]> {
  const out: { pid: string; environ: Buffer }[] = [];
  for (const pid of await readdir("/proc")) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      const argv0 = (await readFile(`/proc/${pid}/cmdline`)).toString().split("\0")[0];
      if (argv0 !== "/run/warren/boxd") continue;
      out.push({ pid, environ: await readFile(`/proc/${pid}/environ`) });
    } catch {
      // gone, or not ours to read
    }
  }
  return out;
}

const terminal = ["succeeded", "failed", "timed_out", "cancelled", "lost"];

for (const leg of dbLegs) {
  describe(`secrets on ${leg.name}`, { skip: leg.skip ?? boxSkipReason() ?? false }, () => {
    let t: TestServer;
    let stateRoot: string;
    let db: { url: string | undefined; drop(): Promise<void> };
    const log: string[] = [];
    const dbEnv = (): Record<string, string> => (db.url ? { DATABASE_URL: db.url } : {});
    let org: string;
    let other: string;
    let a: { id: string };
    let b: { id: string };
    let c: { id: string };
    let guild: string;
    const values = {
      org: token(24),
      guild: token(30),
      agent: token(48), // longer than the automaton's prefix: compared in full
      model: token(36), // a model's key (use model): the gateway's alone
    };
    const ids: Record<string, string> = {};
    const start = (env: Record<string, string> = {}) =>
      startTestServer({
        stateRoot,
        listen: true,
        env: { LOG_LEVEL: "debug", ...dbEnv(), ...env },
        logDestination: { write: (line: string) => void log.push(line) },
      });
    const exec = (agentId: string, body: unknown) => t.call("POST", `/api/agents/${agentId}/exec`, body);

    before(async () => {
      stateRoot = await mkdtemp(path.join(os.tmpdir(), "warren-secrets-"));
      db = await leg.fresh();
      t = await start();
      org = (await t.call("POST", "/api/orgs", { name: "sec" })).body.id;
      other = (await t.call("POST", "/api/orgs", { name: "other" })).body.id;
      const m = (await t.call("POST", "/api/machines", { org_id: org, name: "m" })).body.id;
      const agent = async (name: string) =>
        (await t.call("POST", "/api/agents", { org_id: org, machine_id: m, name })).body;
      a = await agent("a");
      b = await agent("b");
      c = await agent("c");
      guild = (await t.call("POST", "/api/guilds", { org_id: org, name: "g" })).body.id;
      assert.equal((await t.call("POST", `/api/guilds/${guild}/agents`, { agent_id: c.id })).status, 204);
    });
    after(async () => {
      await t?.close();
      await db?.drop();
      if (stateRoot) await rm(stateRoot, { recursive: true, force: true, maxRetries: 3 });
    });

    test("created with grants; answers never hold the value", async () => {
      const create = async (body: Record<string, unknown>) => {
        const r = await t.call("POST", "/api/secrets", { org_id: org, ...body });
        assert.equal(r.status, 201, JSON.stringify(r.body));
        for (const v of Object.values(values)) assert.ok(!JSON.stringify(r.body).includes(v));
        assert.equal("value" in r.body, false);
        return r.body;
      };
      const s = await create({
        name: "ORG_TOKEN",
        description: "every agent",
        value: values.org,
        grants: [{ scope: "org", id: org }],
      });
      ids.org = s.id;
      assert.match(s.id, /^sec_[0-9a-z]{16}$/);
      assert.deepEqual(s.grants, [{ scope: "org", id: org }]);
      assert.equal(s.alias_of, null);
      ids.guild = (
        await create({ name: "GUILD_TOKEN", value: values.guild, grants: [{ scope: "guild", id: guild }] })
      ).id;
      ids.agent = (
        await create({ name: "A_TOKEN", value: values.agent, grants: [{ scope: "agent", id: a.id }] })
      ).id;
      ids.alias = (
        await create({ name: "A_ALIAS", alias_of: ids.agent, grants: [{ scope: "agent", id: a.id }] })
      ).id;
      const list = await t.call("GET", `/api/secrets?org_id=${org}`);
      assert.equal(list.status, 200);
      assert.deepEqual(
        list.body.items.map((x: { name: string }) => x.name),
        ["A_ALIAS", "A_TOKEN", "GUILD_TOKEN", "ORG_TOKEN"],
      );
      const one = await t.call("GET", `/api/secrets/${ids.alias}`);
      assert.equal(one.body.alias_of, ids.agent);
      for (const v of Object.values(values)) assert.ok(!JSON.stringify(list.body).includes(v));
      const openapi = await t.call("GET", "/api/openapi.json");
      for (const v of Object.values(values)) assert.ok(!JSON.stringify(openapi.body).includes(v));
    });

    test("bad names, short values and foreign grants are request.invalid", async () => {
      const bad: [Record<string, unknown>, RegExp][] = [
        [{ name: "lower", value: "12345678" }, /body\.name/],
        [{ name: "1ABC", value: "12345678" }, /body\.name/],
        [{ name: "HOME", value: "12345678" }, /warren's own/],
        [{ name: "PATH", value: "12345678" }, /warren's own/],
        [{ name: "WARREN_X", value: "12345678" }, /warren's own/],
        [{ name: "LD_PRELOAD", value: "12345678" }, /warren's own/],
        [{ name: "SHORT", value: "1234567" }, /at least 8 bytes/],
        [{ name: "NUL", value: "1234567\u00008" }, /NUL/],
        [{ name: "BOTH", value: "12345678", alias_of: "sec_0000000000000000" }, /exactly one/],
        [{ name: "NONE" }, /exactly one/],
        [{ name: "X", value: "12345678", grants: [{ scope: "org", id: other }] }, /own organisation/],
        [
          { name: "X", value: "12345678", grants: [{ scope: "agent", id: "agt_0000000000000000" }] },
          /no agent/,
        ],
        [{ name: "X", value: "12345678", grants: [{ scope: "guild", id: a.id }] }, /scope's kind/],
        [{ name: "ORG_TOKEN", value: "12345678" }, /already has/],
        [{ name: "H", value: "12345678", hosts: ["api.openai.com"] }, /hosts are for a secret of use model/],
        [{ name: "H", value: "12345678", use: "model", hosts: ["https://evil.example/"] }, /body\.hosts\.0/],
        [{ name: "H", value: "12345678", use: "model", hosts: ["evil.example/v1"] }, /no scheme, no path/],
        [{ name: "H", value: "12345678", use: "model", hosts: ["evil.example:99999"] }, /body\.hosts\.0/],
      ];
      for (const [body, msg] of bad) {
        const r = await t.call("POST", "/api/secrets", { org_id: org, ...body });
        assert.equal(r.status, 400, JSON.stringify([body, r.body]));
        assert.equal(r.body.error.code, "request.invalid");
        assert.match(r.body.error.message, msg);
      }
      const missing = await t.call("GET", "/api/secrets/sec_0000000000000000");
      assert.equal(missing.status, 404);
    });

    test("a command sees the values that reach its agent, and only those", async () => {
      const probe =
        'for v in ORG_TOKEN GUILD_TOKEN A_TOKEN A_ALIAS; do printf "%s=" $v; printf %s "${!v-unset}" | sha256sum | cut -c1-16; done';
      const seen = async (agentId: string) => {
        const r = await exec(agentId, { command: probe });
        assert.equal(r.status, 200, JSON.stringify(r.body));
        return Object.fromEntries(
          (r.body.stdout as string)
            .trim()
            .split("\n")
            .map((l) => l.split("=")),
        );
      };
      const h = (v: string) => sha(v).slice(0, 16);
      assert.deepEqual(await seen(a.id), {
        ORG_TOKEN: h(values.org),
        GUILD_TOKEN: h("unset"),
        A_TOKEN: h(values.agent),
        A_ALIAS: h(values.agent),
      });
      assert.deepEqual(await seen(b.id), {
        ORG_TOKEN: h(values.org),
        GUILD_TOKEN: h("unset"),
        A_TOKEN: h("unset"),
        A_ALIAS: h("unset"),
      });
      assert.deepEqual(await seen(c.id), {
        ORG_TOKEN: h(values.org),
        GUILD_TOKEN: h(values.guild),
        A_TOKEN: h("unset"),
        A_ALIAS: h("unset"),
      });
    });

    test("exec answers hide every value, on stdout and stderr", async () => {
      const r = await exec(a.id, {
        command: 'echo "a $A_TOKEN b"; echo "$ORG_TOKEN$A_ALIAS" >&2; printf %s "$ORG_TOKEN" | rev | rev',
      });
      assert.equal(r.body.stdout, "a [redacted] b\n[redacted]");
      assert.equal(r.body.stderr, "[redacted]\n");
    });

    test("a streamed exec hides a value split across two chunks", async () => {
      const res = await fetch(`${t.url}/api/agents/${a.id}/exec`, {
        method: "POST",
        headers: { "content-type": "application/json", accept: "application/x-ndjson" },
        body: JSON.stringify({
          command:
            'printf "x%s" "${A_TOKEN:0:20}"; sleep 0.5; printf "%sy\\n" "${A_TOKEN:20}"; echo "$ORG_TOKEN" >&2',
        }),
      });
      const text = await res.text();
      const lines = text
        .trim()
        .split("\n")
        .map((l) => JSON.parse(l));
      for (const v of Object.values(values)) assert.ok(!text.includes(v), text);
      for (const v of Object.values(values)) assert.ok(!text.includes(v.slice(0, 20)), text);
      const out = lines
        .filter((l) => l.stream === "stdout")
        .map((l) => l.data)
        .join("");
      const err = lines
        .filter((l) => l.stream === "stderr")
        .map((l) => l.data)
        .join("");
      assert.equal(out, "x[redacted]y\n");
      assert.equal(err, "[redacted]\n");
      assert.equal(lines.at(-1).exit_code, 0);
    });

    test("run output and its events hide every value, split or whole", async () => {
      const r = await t.call("POST", `/api/agents/${a.id}/runs`, {
        kind: "command",
        command:
          'echo "$A_TOKEN"; echo "$ORG_TOKEN" >&2; printf %s "${A_ALIAS:0:9}"; sleep 0.4; printf "%s\\n" "${A_ALIAS:9}"',
      });
      assert.equal(r.status, 202, JSON.stringify(r.body));
      let run;
      for (const end = Date.now() + 20_000; ;) {
        run = (await t.call("GET", `/api/runs/${r.body.id}`)).body;
        if (terminal.includes(run.status)) break;
        assert.ok(Date.now() < end, "the run ends");
        await new Promise((res) => setTimeout(res, 50));
      }
      assert.equal(run.status, "succeeded", JSON.stringify(run));
      assert.equal(run.output, "[redacted]\n[redacted]\n");
      const events = await t.call("GET", `/api/runs/${run.id}/events`);
      const all = JSON.stringify(events.body);
      for (const v of Object.values(values)) assert.ok(!all.includes(v), all);
      assert.ok(all.includes("[redacted]"));
    });

    test("a secret of use model reaches no command, yet an echo of it is redacted", async () => {
      const s = await t.call("POST", "/api/secrets", {
        org_id: org,
        name: "MODEL_KEY",
        value: values.model,
        use: "model",
        grants: [{ scope: "org", id: org }],
      });
      assert.equal(s.status, 201, JSON.stringify(s.body));
      assert.equal(s.body.use, "model");
      ids.model = s.body.id;
      // the list and one secret show each one's use
      const list = await t.call("GET", `/api/secrets?org_id=${org}`);
      assert.deepEqual(
        Object.fromEntries(list.body.items.map((x: { name: string; use: string }) => [x.name, x.use])),
        { A_ALIAS: "env", A_TOKEN: "env", GUILD_TOKEN: "env", MODEL_KEY: "model", ORG_TOKEN: "env" },
      );
      assert.equal((await t.call("GET", `/api/secrets/${s.body.id}`)).body.use, "model");
      // the use is set once: PATCH refuses it, an alias takes its secret's
      const patch = await t.call("PATCH", `/api/secrets/${s.body.id}`, { use: "env" });
      assert.equal(patch.status, 400, JSON.stringify(patch.body));
      assert.equal(patch.body.error.code, "request.invalid");
      assert.match(patch.body.error.message, /use/);
      const envAlias = await t.call("POST", "/api/secrets", {
        org_id: org,
        name: "MODEL_AS_ENV",
        alias_of: s.body.id,
        use: "env",
        grants: [{ scope: "org", id: org }],
      });
      assert.equal(envAlias.status, 400, JSON.stringify(envAlias.body));
      assert.match(
        envAlias.body.error.message,
        /body\.use: an alias takes the use of the secret it names \(model\)/,
      );
      const badUse = await t.call("POST", "/api/secrets", {
        org_id: org,
        name: "X",
        value: "12345678",
        use: "box",
      });
      assert.equal(badUse.status, 400);
      assert.match(badUse.body.error.message, /body\.use/);
      const alias = await t.call("POST", "/api/secrets", {
        org_id: org,
        name: "MODEL_ALIAS",
        alias_of: s.body.id,
        grants: [{ scope: "agent", id: a.id }],
      });
      assert.equal(alias.status, 201, JSON.stringify(alias.body));
      assert.equal(alias.body.use, "model");

      // an exec: neither name in its environment, the other secrets as before
      const r = await exec(a.id, {
        command: 'env | cut -d= -f1 | sort; printf "[%s]" "${MODEL_KEY-unset}${MODEL_ALIAS-unset}"',
      });
      assert.equal(r.status, 200, JSON.stringify(r.body));
      const names = (r.body.stdout as string).split("\n");
      assert.ok(names.includes("ORG_TOKEN") && names.includes("A_TOKEN"), r.body.stdout);
      assert.ok(!names.includes("MODEL_KEY") && !names.includes("MODEL_ALIAS"), r.body.stdout);
      assert.match(r.body.stdout, /\[unsetunset\]$/);
      // the value, put in a file of the home by other means, is redacted when a command prints it
      const w = await exec(a.id, { command: "cat > model-key.txt", stdin: values.model });
      assert.equal(w.body.exit_code, 0, JSON.stringify(w.body));
      const echoed = await exec(a.id, { command: 'echo "key: $(cat model-key.txt)"' });
      assert.equal(echoed.body.stdout, "key: [redacted]\n");
      // a command run: `env` holds neither its name nor its value; the file's echo is redacted
      const run0 = await t.call("POST", `/api/agents/${a.id}/runs`, {
        kind: "command",
        command: "env; cat model-key.txt; rm model-key.txt",
      });
      assert.equal(run0.status, 202, JSON.stringify(run0.body));
      let run;
      for (const end = Date.now() + 20_000; ;) {
        run = (await t.call("GET", `/api/runs/${run0.body.id}`)).body;
        if (terminal.includes(run.status)) break;
        assert.ok(Date.now() < end, "the run ends");
        await new Promise((res) => setTimeout(res, 50));
      }
      assert.equal(run.status, "succeeded", JSON.stringify(run));
      assert.match(run.output, /^ORG_TOKEN=\[redacted\]$/m);
      assert.doesNotMatch(run.output, /MODEL_KEY|MODEL_ALIAS/);
      assert.ok(run.output.endsWith("\n[redacted]"), run.output);
      assert.ok(!run.output.includes(values.model));
      assert.equal((await t.call("DELETE", `/api/secrets/${alias.body.id}`)).status, 204);
    });

    test("boxd's environment and the box's files never hold a value", async () => {
      const running = exec(a.id, { command: "sleep 1.5; echo done" });
      await new Promise((res) => setTimeout(res, 700));
      const boxds = await boxdEnvirons();
      assert.ok(boxds.length > 0, "a boxd runs");
      for (const { pid, environ } of boxds)
        for (const v of Object.values(values)) assert.ok(!environ.includes(v), `/proc/${pid}/environ`);
      assert.equal((await running).body.stdout, "done\n");
      const grep = await exec(a.id, {
        command:
          "grep -rslF -f /dev/stdin /tmp /home /run /var/tmp /dev/shm /etc /agent 2>/dev/null; echo end",
        stdin: `${values.agent}\n${values.org}\n`,
      });
      assert.equal(grep.body.stdout, "end\n");
    });

    test("what reaches an agent is read again at the next command once it changes (new secret, guild left)", async () => {
      const probe = 'printf "%s|%s" "${NEW_TOKEN-unset}" "${GUILD_TOKEN-unset}"';
      const h = (v: string) => sha(v).slice(0, 16);
      const seen = async () => {
        const r = await exec(c.id, { command: `${probe} | sha256sum | cut -c1-16; ${probe}` });
        assert.equal(r.status, 200, JSON.stringify(r.body));
        return (r.body.stdout as string).split("\n");
      };
      // the agent's secrets are read (and kept) before each change
      assert.deepEqual(await seen(), [h(`unset|${values.guild}`), "unset|[redacted]"]);
      const fresh = token(28);
      const created = await t.call("POST", "/api/secrets", {
        org_id: org,
        name: "NEW_TOKEN",
        value: fresh,
        grants: [{ scope: "org", id: org }],
      });
      assert.equal(created.status, 201);
      // the new value is in the next command's environment and hidden from its output
      assert.deepEqual(await seen(), [h(`${fresh}|${values.guild}`), "[redacted]|[redacted]"]);
      assert.equal((await t.call("DELETE", `/api/guilds/${guild}/agents/${c.id}`)).status, 204);
      assert.deepEqual(await seen(), [h(`${fresh}|unset`), "[redacted]|unset"]);
      assert.equal((await t.call("DELETE", `/api/secrets/${created.body.id}`)).status, 204);
      assert.equal((await t.call("POST", `/api/guilds/${guild}/agents`, { agent_id: c.id })).status, 204);
      assert.deepEqual(await seen(), [h(`unset|${values.guild}`), "unset|[redacted]"]);
    });

    test("grants changed reach the next command; a deleted secret takes its aliases", async () => {
      const p = await t.call("PATCH", `/api/secrets/${ids.agent}`, {
        grants: [{ scope: "agent", id: b.id }],
        description: "now b's",
      });
      assert.equal(p.status, 200);
      assert.deepEqual(p.body.grants, [{ scope: "agent", id: b.id }]);
      assert.equal(p.body.description, "now b's");
      const check = async (agentId: string) =>
        (await exec(agentId, { command: 'printf %s "${A_TOKEN-unset}" | sha256sum | cut -c1-16' })).body
          .stdout;
      assert.equal(await check(a.id), `${sha("unset").slice(0, 16)}\n`);
      assert.equal(await check(b.id), `${sha(values.agent).slice(0, 16)}\n`);
      const del = await t.call("DELETE", `/api/secrets/${ids.agent}`);
      assert.equal(del.status, 204);
      assert.equal((await t.call("GET", `/api/secrets/${ids.alias}`)).status, 404);
      assert.equal(await check(b.id), `${sha("unset").slice(0, 16)}\n`);
      // a deleted guild or agent leaves no grant behind
      const g2 = (await t.call("POST", "/api/guilds", { org_id: org, name: "short-lived" })).body.id;
      const m2 = (await t.call("GET", `/api/agents/${c.id}`)).body.machine_id;
      const a2 = (await t.call("POST", "/api/agents", { org_id: org, machine_id: m2, name: "short-lived" }))
        .body.id;
      const temp = await t.call("POST", "/api/secrets", {
        org_id: org,
        name: "TEMP_TOKEN",
        value: "temporary-value",
        grants: [
          { scope: "guild", id: g2 },
          { scope: "agent", id: a2 },
          { scope: "org", id: org },
        ],
      });
      assert.equal(temp.body.grants.length, 3);
      assert.equal((await t.call("DELETE", `/api/guilds/${g2}`)).status, 204);
      assert.equal((await t.call("DELETE", `/api/agents/${a2}`)).status, 204);
      assert.deepEqual((await t.call("GET", `/api/secrets/${temp.body.id}`)).body.grants, [
        { scope: "org", id: org },
      ]);
      assert.equal((await t.call("DELETE", `/api/secrets/${temp.body.id}`)).status, 204);
      // put it back for the rest
      ids.agent = (
        await t.call("POST", "/api/secrets", {
          org_id: org,
          name: "A_TOKEN",
          value: values.agent,
          grants: [{ scope: "agent", id: a.id }],
        })
      ).body.id;
    });

    test("the server's log never holds a value", async () => {
      t.server.logger.info({ detail: `before ${values.agent} after`, quoted: `"${values.org}"` }, "probe");
      const line = log.find((l) => l.includes('"probe"'));
      assert.ok(line, "the probe was logged");
      assert.match(line, /before \[redacted\] after/);
      for (const v of Object.values(values)) assert.ok(!log.join("").includes(v));
    });

    test("the state tree never holds a value; rotation keeps every value; a wrong key is refused", async () => {
      await t.close();
      for (const v of Object.values(values)) {
        assert.deepEqual(await filesHolding(stateRoot, Buffer.from(v)), [], "no file of the state tree");
        assert.ok(!log.join("").includes(v), "nor the log");
      }
      const keyFile = path.join(stateRoot, "run", "master.key");
      const before = await readFile(keyFile, "utf8");
      const rotated = await rotateKey({ STATE_ROOT: stateRoot, ...dbEnv() }, {});
      assert.equal(rotated.secrets, 4, "four values (the alias has none)");
      assert.equal(rotated.file, keyFile);
      assert.notEqual(await readFile(keyFile, "utf8"), before);
      await assert.rejects(
        start({ WARREN_MASTER_KEY: randomBytes(32).toString("hex") }),
        (err: unknown) =>
          err instanceof MasterKeyError && /do not open under this master key/.test(err.message),
      );
      t = await start();
      const r = await exec(a.id, {
        command: 'for v in ORG_TOKEN A_TOKEN; do printf %s "${!v}" | sha256sum | cut -c1-16; done',
      });
      assert.equal(r.body.stdout, `${sha(values.org).slice(0, 16)}\n${sha(values.agent).slice(0, 16)}\n`);
      // from the environment's key to another one given in a file
      await t.close();
      const current = (await readFile(keyFile, "utf8")).trim();
      const next = randomBytes(32).toString("hex");
      const nextFile = path.join(stateRoot, "next.key");
      await import("node:fs/promises").then((fs) => fs.writeFile(nextFile, next, { mode: 0o600 }));
      await rm(keyFile);
      const r2 = await rotateKey(
        { STATE_ROOT: stateRoot, WARREN_MASTER_KEY: current, ...dbEnv() },
        { newKeyFile: nextFile },
      );
      assert.deepEqual(r2, { secrets: 4, file: null });
      await rm(nextFile);
      t = await start({ WARREN_MASTER_KEY: next });
      const r3 = await exec(a.id, { command: 'printf %s "$GUILD_TOKEN$ORG_TOKEN" | sha256sum | cut -c1-16' });
      assert.equal(r3.body.stdout, `${sha(values.org).slice(0, 16)}\n`);
    });

    test("the all-zero key is refused", () => {
      assert.throws(
        () => parseConfig({ STATE_ROOT: stateRoot, WARREN_MASTER_KEY: "0".repeat(64) }),
        /all-zero master key is refused/,
      );
    });
  });
}
