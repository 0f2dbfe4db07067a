// Hostile package names for a machine's environment: a proposal (through the API and through an
// agent's env_propose) or a set environment naming something that is not a Debian package name
// (an option, a shell word, a path, a name with spaces or a newline) is 400 request.invalid
// before apt, npm or dpkg-deb runs at all, and nothing is stored. The host's apt-get, apt-cache,
// npm and dpkg-deb are stood in for by scripts first on PATH that write down every argv they
// get (and answer as apt would for one package the base has), so the test sees what would have
// run: nothing for a hostile name; for a good one, the names after `--`.
import assert from "node:assert/strict";
import { chmod, mkdir, mkdtemp, readFile, rm, stat, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import type { Access } from "../../src/access/index.js";
import { buildLayer, EnvBuildFailed, resolveDebian } from "../../src/machines/env-build.js";
import { Environments } from "../../src/machines/environment.js";
import { boxSkipReason } from "../box/fixture.js";
import { waitFor } from "../conversations/support.js";
import { eventsOfType, putHomeFile, runAgent } from "../support/agent-runs.js";
import { orgWithAgent } from "../support/org.js";
import { startTestServer, type TestServer } from "../support/server.js";

const HOSTILE = [
  "-o APT::Get::Trivial-Only=false",
  "-oAPT::Sandbox::User=root",
  "--simulate",
  "-s",
  "foo;rm -rf /",
  "../x",
  "/etc/passwd",
  "$(id)",
  "`id`",
  "two words",
  "line\nbreak",
  "foo=1.0",
  "Foo",
  "",
];

describe("hostile environment package names", () => {
  let t: TestServer;
  let tmp: string;
  let calls: string;
  let machine: string;
  let agent: string;
  const savedPath = process.env.PATH;
  const call = (m: string, u: string, b?: unknown) => t.call(m, u, b);
  /** Every argv the stand-ins were run with, one line each (tool, then its arguments by NUL). */
  const ran = async () => (await readFile(calls, "utf8").catch(() => "")).split("\n").filter(Boolean);
  const nothingStored = async () => {
    const props = (await call("GET", `/api/machines/${machine}/environment/proposals`)).body.items;
    assert.deepEqual(props, [], "no proposal was stored");
    const revs = (await call("GET", `/api/machines/${machine}/environment/revisions`)).body.items;
    assert.deepEqual(revs, [], "no revision was made");
    assert.deepEqual(await ran(), [], "nothing ran");
  };

  before(async () => {
    tmp = await mkdtemp(path.join(os.tmpdir(), "warren-envhostile-"));
    calls = path.join(tmp, "calls");
    const bin = path.join(tmp, "bin");
    await mkdir(bin);
    for (const tool of ["apt-get", "apt-cache", "npm", "dpkg-deb"]) {
      const script = [
        "#!/bin/sh",
        // one line per call: the tool, then each argument (a newline in one kept visible as \n)
        `{ printf '%s' "${tool}"; for a in "$@"; do printf '\\t%s' "$(printf '%s' "$a" | tr '\\n' '~')"; done; echo; } >> "${calls}"`,
        tool === "apt-cache" ? `echo "hello:"; echo "  Candidate: 2.10-3"` : "",
        tool === "npm" ? `echo '"1.0.0"'` : "",
        "exit 0",
      ];
      await writeFile(path.join(bin, tool), script.join("\n") + "\n");
      await chmod(path.join(bin, tool), 0o755);
    }
    process.env.PATH = `${bin}:${savedPath ?? "/usr/bin:/bin"}`;
    t = await startTestServer();
    ({ machine, agent } = await orgWithAgent(call, { tools: ["env_propose"] }));
  });
  after(async () => {
    process.env.PATH = savedPath;
    await t?.close();
    await rm(tmp, { recursive: true, force: true });
  });

  test("a proposal naming a hostile package is 400 request.invalid; nothing runs or is stored", async () => {
    for (const name of HOSTILE) {
      const r = await call("POST", `/api/machines/${machine}/environment/proposals`, {
        packages: ["hello", name],
        why: "tools",
      });
      assert.equal(r.status, 400, `${JSON.stringify(name)}: ${JSON.stringify(r.body)}`);
      assert.equal(r.body.error.code, "request.invalid", JSON.stringify(name));
    }
    const npm = await call("POST", `/api/machines/${machine}/environment/proposals`, {
      packages: ["hello"],
      npm: [{ name: "--prefix=/etc" }],
      why: "tools",
    });
    assert.equal(npm.status, 400, JSON.stringify(npm.body));
    assert.equal(npm.body.error.code, "request.invalid");
    await nothingStored();
  });

  test("setting an environment with a hostile name or version is refused the same way", async () => {
    const specs = [
      ...HOSTILE.filter((n) => n !== "foo=1.0"),
      "hello=1.0;id",
      "hello=$(id)",
      "hello=-o",
      "hello=1=2",
      "-o=1",
      "hello= 1",
    ];
    for (const spec of specs) {
      const r = await call("PUT", `/api/machines/${machine}/environment`, { packages: [spec] });
      assert.equal(r.status, 400, `${JSON.stringify(spec)}: ${JSON.stringify(r.body)}`);
      assert.equal(r.body.error.code, "request.invalid", JSON.stringify(spec));
    }
    const npm = await call("PUT", `/api/machines/${machine}/environment`, {
      packages: ["hello"],
      npm: [{ name: "left-pad", version: "1.0 --global" }],
    });
    assert.equal(npm.status, 400, JSON.stringify(npm.body));
    await nothingStored();
  });

  test("the server's own checks hold without the HTTP schema", async () => {
    for (const name of HOSTILE)
      await assert.rejects(resolveDebian(["hello", name]), (e: any) => e.code === "request.invalid");
    await nothingStored();
    // a layer whose stored packages were never checked fails whole, running nothing
    const dir = path.join(tmp, "layer");
    await assert.rejects(
      buildLayer(dir, [{ name: "-o", version: "APT::Get::Simulate=0" }], []),
      (e: unknown) => e instanceof EnvBuildFailed && /not a Debian package name/.test(e.log),
    );
    await assert.rejects(
      buildLayer(dir, [{ name: "hello", version: "1;id" }], []),
      (e: unknown) => e instanceof EnvBuildFailed,
    );
    await assert.rejects(
      buildLayer(dir, [], [{ name: "x", version: "$(id)" }]),
      (e: unknown) => e instanceof EnvBuildFailed,
    );
    await assert.rejects(stat(dir), "no layer was made");
    assert.deepEqual(await ran(), [], "nothing ran");
  });

  test("an agent's proposal is held to the API's bounds without the HTTP schema", async () => {
    // the service an agent's env_propose calls, as the server makes it (no HTTP schema in front)
    const envs = new Environments({
      db: t.server.store.db,
      access: {} as Access,
      logger: t.server.logger,
      root: path.join(tmp, "environments"),
      base: "host",
    });
    const by = { agent: { id: agent, machineId: machine } };
    const many = Array.from({ length: 51 }, (_, i) => `pkg${i}`);
    const cases: [Parameters<Environments["propose"]>[2], RegExp][] = [
      [{ packages: many, why: "all of them" }, /packages: at most 50/],
      [
        { packages: ["hello"], npm: many.slice(0, 21).map((name) => ({ name })), why: "x" },
        /npm: at most 20/,
      ],
      [{ packages: ["hello"], why: "w".repeat(2001) }, /why:/],
      [{ packages: ["hello"], why: " \n\t " }, /why:/],
    ];
    for (const [input, field] of cases)
      await assert.rejects(
        envs.propose(by, machine, input),
        (e: any) => e.code === "request.invalid" && field.test(e.message),
        JSON.stringify(input).slice(0, 80),
      );
    await nothingStored();
  });

  test(
    "an agent's env_propose with a hostile name is refused, nothing stored",
    {
      skip: boxSkipReason() ?? false,
    },
    async () => {
      const turns = [
        { tool_calls: [{ name: "env_propose", input: { packages: ["-o APT::X=1", "$(id)"], why: "x" } }] },
        { text: "done" },
      ];
      await putHomeFile(t, agent, "turns.json", JSON.stringify({ turns }));
      const { run, events } = await runAgent(t, agent, "propose");
      assert.equal(run.status, "succeeded", JSON.stringify(events).slice(0, 2000));
      const results = JSON.stringify(eventsOfType(events, "tool_call"));
      assert.match(results, /not a Debian package name/);
      await nothingStored();
      // a proposal past the API's bounds through the tool: refused the same way
      const many = Array.from({ length: 51 }, (_, i) => `pkg${i}`);
      const over = [
        { tool_calls: [{ name: "env_propose", input: { packages: many, why: "x" } }] },
        { text: "done" },
      ];
      await putHomeFile(t, agent, "turns.json", JSON.stringify({ turns: over }));
      const second = await runAgent(t, agent, "propose many");
      assert.equal(second.run.status, "succeeded", JSON.stringify(second.events).slice(0, 2000));
      assert.match(JSON.stringify(eventsOfType(second.events, "tool_call")), /at most 50/);
      await nothingStored();
    },
  );

  test("a good name reaches apt only after `--`, as name=version", async () => {
    const r = await call("PUT", `/api/machines/${machine}/environment`, {
      packages: ["hello"],
      npm: [{ name: "left-pad", version: "1.3.0" }],
    });
    assert.equal(r.status, 202, JSON.stringify(r.body));
    const built = await waitFor("the revision to finish", async () => {
      const rev = (await call("GET", `/api/machines/${machine}/environment/revisions/${r.body.revision}`))
        .body;
      return rev.status === "building" ? undefined : rev;
    });
    assert.equal(built.status, "ready", built.log);
    const lines = (await ran()).map((l) => l.split("\t"));
    const policy = lines.find((l) => l[0] === "apt-cache");
    assert.deepEqual(policy, ["apt-cache", "policy", "--", "hello"]);
    const install = lines.find((l) => l[0] === "apt-get");
    assert.ok(install, JSON.stringify(lines));
    assert.deepEqual(install.slice(install.indexOf("--")), ["--", "hello=2.10-3"]);
    const npm = lines.find((l) => l[0] === "npm");
    assert.ok(npm, JSON.stringify(lines));
    assert.deepEqual(npm.slice(npm.indexOf("--")), ["--", "left-pad@1.3.0"]);
  });
});
