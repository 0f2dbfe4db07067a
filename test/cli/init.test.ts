// `warren init` writes the .env every start reads: STATE_ROOT made absolute (a relative one
// against the folder it runs in), other lines kept; a .env naming another STATE_ROOT is refused
// without --force; and the server's configuration, started from another folder, finds it.
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { parseConfig } from "../../src/config/index.js";
import { withDotEnv } from "../../src/config/dotenv.js";
import { runWarren } from "../support/cli.js";

describe("warren init", () => {
  let dir = "";
  let envFile = "";
  const cwd = process.cwd();
  before(() => {
    dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "warren-init-")));
    envFile = path.join(dir, "checkout", ".env");
  });
  after(() => {
    process.chdir(cwd);
    fs.rmSync(dir, { recursive: true, force: true });
  });
  const init = (argv: string[], env: Record<string, string> = {}) =>
    runWarren(["init", ...argv], { env: { WARREN_ENV_FILE: envFile, ...env } });

  test("no .env: STATE_ROOT defaults to .state beside it, written and printed", async () => {
    const r = await init([]);
    assert.equal(r.code, 0, r.stderr);
    const root = path.join(dir, "checkout", ".state");
    assert.equal(r.stdout, `wrote STATE_ROOT=${root} to ${envFile}\n`);
    assert.match(fs.readFileSync(envFile, "utf8"), new RegExp(`^# .*\\nSTATE_ROOT=${root}\\n$`));
    // again: nothing to change
    const again = await init(["--json"]);
    assert.equal(again.code, 0, again.stderr);
    assert.deepEqual(JSON.parse(again.stdout), {
      env_file: envFile,
      state_root: root,
      previous: root,
      changed: false,
    });
  });

  test("a relative --state-root is made absolute against the folder it runs in; another one is refused without --force", async () => {
    fs.mkdirSync(path.join(dir, "elsewhere"));
    process.chdir(path.join(dir, "elsewhere"));
    const refused = await init(["--state-root", "data"]);
    assert.equal(refused.code, 1);
    assert.match(
      refused.stderr,
      /^error: init\.state_root_set: .* names STATE_ROOT=.*\.state already, not .*elsewhere\/data: .*--force/,
    );
    assert.match(fs.readFileSync(envFile, "utf8"), /STATE_ROOT=.*checkout\/\.state\n$/);

    fs.appendFileSync(envFile, "WARREN_PORT=8099\nexport STATE_ROOT=/also/old\n");
    const forced = await init(["--state-root", "data", "--force"]);
    assert.equal(forced.code, 0, forced.stderr);
    const root = path.join(dir, "elsewhere", "data");
    assert.equal(forced.stdout, `wrote STATE_ROOT=${root} to ${envFile} (was /also/old)\n`);
    const text = fs.readFileSync(envFile, "utf8");
    assert.equal(text.match(/STATE_ROOT=/g)?.length, 1, text);
    assert.match(text, /WARREN_PORT=8099\n/);

    // a start from another folder, with no STATE_ROOT of its own, finds the same state root
    process.chdir(os.tmpdir());
    const config = parseConfig(withDotEnv({ WARREN_ENV_FILE: envFile }));
    assert.equal(config.STATE_ROOT, root);
    assert.equal(config.WARREN_PORT, 8099);
  });

  test("STATE_ROOT in the environment is what is written; an empty --state-root is a usage error", async () => {
    const other = path.join(dir, "from-env");
    const r = await init(["--force"], { STATE_ROOT: other });
    assert.equal(r.code, 0, r.stderr);
    assert.match(fs.readFileSync(envFile, "utf8"), new RegExp(`STATE_ROOT=${other}\\n`));
    const empty = await init(["--state-root", ""]);
    assert.equal(empty.code, 2);
    assert.match(empty.stderr, /--state-root must name a folder/);
  });
});
