// Everyday use of `warren` against a real server (trusted-header mode, PGlite, real boxes):
// --version and completion, -q for ids only, names where ids go (an agent by name in its
// organisation; an ambiguous name refused with its candidates), `files cp` of a folder both
// ways (a planted link not followed), and `runs logs -f` printing output as it arrives.
import assert from "node:assert/strict";
import { lstat, mkdir, mkdtemp, readFile, readdir, rm, symlink, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { Readable, Writable } from "node:stream";
import { after, before, describe, test } from "node:test";
import { runCli } from "../../src/cli/run.js";
import { boxSkipReason, waitFor } from "../box/fixture.js";
import { runWarren } from "../support/cli.js";
import { startTestServer, type TestServer } from "../support/server.js";

const AS = "me@example.com";

test("warren --version prints the package's version; completion lists the commands", async () => {
  const pkg = JSON.parse(await readFile(new URL("../../package.json", import.meta.url), "utf8"));
  const v = await runWarren(["--version"]);
  assert.equal(v.code, 0, v.stderr);
  assert.equal(v.stdout, `warren ${pkg.version}\n`);
  const bash = await runWarren(["completion", "bash"]);
  assert.equal(bash.code, 0, bash.stderr);
  assert.match(bash.stdout, /complete -F _warren warren/);
  for (const word of ["exec", "runs", "files", "completion"])
    assert.ok(bash.stdout.includes(` ${word} `), word);
  assert.match(bash.stdout, /"runs logs"\) words="[^"]*--follow/);
  assert.match(bash.stdout, /files\) COMPREPLY=\(\$\(compgen -W "[^"]*\bcp\b/);
  const zsh = await runWarren(["completion", "zsh"]);
  assert.match(zsh.stdout, /^#compdef warren\n/);
  assert.match(zsh.stdout, /"exec"\) compadd -- [^\n]*--org/);
  const bad = await runWarren(["completion", "fish"]);
  assert.equal(bad.code, 2);
});

describe("warren by names, files cp, runs logs -f", { skip: boxSkipReason() ?? false }, () => {
  let t: TestServer | undefined;
  let dir = "";
  let machine = "";
  const warren = (argv: string[], stdin?: string) => runWarren(argv, { url: t?.url, as: AS, stdin });
  const ok = async (argv: string[]) => {
    const r = await warren(argv);
    assert.equal(r.code, 0, `${argv.join(" ")}: ${r.stderr}`);
    return r.stdout;
  };

  before(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), "warren-everyday-"));
    t = await startTestServer({ listen: true, env: { AUTH_MODE: "trusted-header" } });
    // -q: only the id of what was made
    const org = await ok(["-q", "orgs", "create", "acme"]);
    assert.match(org, /^org_[0-9a-z]{16}\n$/);
    await ok(["-q", "orgs", "create", "other"]);
    // by name from here on: the organisation, then the machine in it
    machine = (await ok(["machines", "create", "m1", "--org", "acme", "-q"])).trim();
    assert.match(machine, /^mch_[0-9a-z]{16}$/);
    const agent = await ok(["agents", "create", "builder", "--org", "acme", "--machine", "m1", "-q"]);
    assert.match(agent, /^agt_[0-9a-z]{16}\n$/);
  });
  after(async () => {
    try {
      if (machine) await warren(["machines", "stop", machine]);
      await t?.close();
    } finally {
      if (dir) await rm(dir, { recursive: true, force: true });
    }
  });

  test("-q lists only ids; exec by agent name; an ambiguous name is refused with its candidates", async () => {
    const orgs = await ok(["orgs", "list", "-q"]);
    assert.match(orgs, /^(org_[0-9a-z]{16}\n){2}$/);
    const byName = await warren(["exec", "builder", "--org", "acme", "--", "true"]);
    assert.equal(byName.code, 0, byName.stderr);
    // one agent of that name among every organisation: no --org needed
    const echo = await warren(["exec", "builder", "--", "sh", "-c", "echo hi"]);
    assert.equal(echo.code, 0, echo.stderr);
    assert.equal(echo.stdout, "hi\n");
    // an agent, a machine and an organisation named where `get` takes its id
    const first0 = (await ok(["agents", "list", "--org", "acme", "-q"])).trim();
    assert.equal((await ok(["agents", "get", "builder", "--org", "acme", "-q"])).trim(), first0);
    assert.equal((await ok(["machines", "get", "m1", "--org", "acme", "-q"])).trim(), machine);
    assert.match(await ok(["orgs", "get", "acme", "-q"]), /^org_[0-9a-z]{16}\n$/);
    const unknown = await warren(["exec", "nobody", "--org", "acme", "--", "true"]);
    assert.equal(unknown.code, 1);
    assert.match(unknown.stderr, /^error: not_found: /);

    const first = (await ok(["agents", "list", "--org", "acme", "-q"])).trim();
    const second = (
      await ok(["agents", "create", "builder", "--org", "acme", "--machine", "m1", "-q"])
    ).trim();
    const twice = await warren(["exec", "builder", "--org", "acme", "--", "true"]);
    assert.equal(twice.code, 1);
    assert.match(twice.stderr, /^error: name\.ambiguous: 2 agents are named "builder"/);
    assert.ok(twice.stderr.includes(first) && twice.stderr.includes(second), twice.stderr);
    // the API's answer lists them
    const answer = await fetch(`${t?.url}/api/names?kind=agent&name=builder`, {
      headers: { "x-forwarded-email": AS },
    });
    assert.equal(answer.status, 400);
    const body = (await answer.json()) as { error: { code: string; candidates: { id: string }[] } };
    assert.equal(body.error.code, "name.ambiguous");
    assert.deepEqual(body.error.candidates.map((c) => c.id).sort(), [first, second].sort());
    await ok(["agents", "delete", second]);
  });

  test("files cp copies a folder up and back; links are skipped, never followed", async () => {
    const up = path.join(dir, "up");
    await mkdir(path.join(up, "a", "b"), { recursive: true });
    await writeFile(path.join(up, "top.txt"), "top\n");
    await writeFile(path.join(up, "a", "mid.txt"), "mid\n");
    await writeFile(path.join(up, "a", "b", "deep.bin"), Buffer.from([0, 1, 2, 255]));
    await symlink("/etc/passwd", path.join(up, "a", "passwd"));
    const agent = (await ok(["agents", "list", "--org", "acme", "-q"])).trim();
    const sent = await warren(["files", "cp", up, "builder:proj", "--org", "acme"]);
    assert.equal(sent.code, 0, sent.stderr);
    assert.equal(sent.stdout, `copied 3 files from ${up} to ${agent}:proj\n`);
    assert.match(sent.stderr, /skipped .*passwd: a link/);

    // links planted in the home: one out of it, one to a folder above
    const plant = await warren([
      "exec",
      "builder",
      "--",
      "sh",
      "-c",
      "ln -s /etc proj/etc && ln -s .. proj/a/up",
    ]);
    assert.equal(plant.code, 0, plant.stderr);
    const ls = await ok(["files", "ls", "builder", "proj"]);
    assert.match(ls, /^link\s+.*\betc$/m);
    assert.match(ls, /^folder\s+.*\ba$/m);

    const back = path.join(dir, "back");
    const got = await warren(["files", "cp", "builder:proj", back]);
    assert.equal(got.code, 0, got.stderr);
    assert.equal(got.stdout, `copied 3 files from ${agent}:proj to ${back}\n`);
    assert.match(got.stderr, /skipped proj\/etc: a link/);
    assert.match(got.stderr, /skipped proj\/a\/up: a link/);
    assert.equal(await readFile(path.join(back, "top.txt"), "utf8"), "top\n");
    assert.equal(await readFile(path.join(back, "a", "mid.txt"), "utf8"), "mid\n");
    assert.deepEqual([...(await readFile(path.join(back, "a", "b", "deep.bin")))], [0, 1, 2, 255]);
    assert.deepEqual((await readdir(back)).sort(), ["a", "top.txt"]);
    assert.deepEqual((await readdir(path.join(back, "a"))).sort(), ["b", "mid.txt"]);
    await assert.rejects(lstat(path.join(back, "etc")));
  });

  test("runs logs -f prints a run's output as it arrives and ends with the run", async () => {
    const run = (
      await ok([
        "runs",
        "start",
        "builder",
        "-q",
        "--",
        "sh",
        "-c",
        'echo one; while [ ! -e "$HOME/go" ]; do sleep 0.05; done; echo two',
      ])
    ).trim();
    assert.match(run, /^run_[0-9a-z]{16}$/);
    let out = "";
    const stdout = new Writable({
      write(chunk: Buffer, _enc, done) {
        out += chunk.toString("utf8");
        done();
      },
    });
    let err = "";
    const stderr = new Writable({
      write(chunk: Buffer, _enc, done) {
        err += chunk.toString("utf8");
        done();
      },
    });
    let ended = false;
    const following = runCli(["runs", "logs", "-f", run], {
      stdout,
      stderr,
      stdin: Readable.from([]),
      env: { WARREN_URL: t?.url, WARREN_HEADERS: `x-forwarded-email: ${AS}` },
    }).finally(() => (ended = true));
    try {
      await waitFor("the run's first line on the followed logs", () => out === "one\n", 60_000);
      assert.equal(ended, false, "logs -f must still be following a run that has not ended");
    } finally {
      // the run ends once this file is there, whatever happened above
      await ok(["files", "put", "builder", "go"]);
    }
    assert.equal(await following, 0, err);
    assert.equal(out, "one\ntwo\n");
    const again = await warren(["runs", "logs", run]);
    assert.equal(again.code, 0, again.stderr);
    assert.equal(again.stdout, "one\ntwo\n");
  });
});
