// One state root: STATE_ROOT is absolute (a relative one is refused with the fix), the
// server reads the checkout's .env (here WARREN_ENV_FILE names one) under the variables
// already set, says at start which state tree and master key it uses, and a second server
// on the same tree refuses while the first holds it.
import assert from "node:assert/strict";
import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { chmod, copyFile, mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { after, test } from "node:test";
import { fileURLToPath, pathToFileURL } from "node:url";
import { withDotEnv } from "../../src/config/dotenv.js";
import { ConfigError, parseConfig } from "../../src/config/index.js";

const checkout = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const tsx = pathToFileURL(path.join(checkout, "node_modules/tsx/dist/loader.mjs")).href;
const cli = path.join(checkout, "src/cli/main.ts");

test("a relative STATE_ROOT is refused with the fix; unset, it is the checkout's .state", () => {
  assert.throws(
    () => parseConfig({ STATE_ROOT: ".state" }),
    (err: unknown) =>
      err instanceof ConfigError &&
      /STATE_ROOT must be an absolute path/.test(err.message) &&
      /STATE_ROOT=\$PWD\/\.state/.test(err.message),
  );
  assert.equal(parseConfig({}).STATE_ROOT, path.join(checkout, ".state"));
  assert.equal(parseConfig({ STATE_ROOT: "/srv/warren" }).STATE_ROOT, "/srv/warren");
});

const children: ChildProcess[] = [];
const dirs: string[] = [];

test("scripts/env.sh (make up) writes STATE_ROOT made absolute to the checkout's .env once", async () => {
  // a copy of the script in a checkout of its own: it writes the .env beside its scripts/
  const copy = await mkdtemp(path.join(os.tmpdir(), "warren-envsh-"));
  dirs.push(copy);
  await mkdir(path.join(copy, "scripts"));
  await copyFile(path.join(checkout, "scripts/env.sh"), path.join(copy, "scripts/env.sh"));
  await chmod(path.join(copy, "scripts/env.sh"), 0o755);
  const envSh = (env: Record<string, string>) =>
    execFileSync(path.join(copy, "scripts/env.sh"), {
      cwd: os.tmpdir(),
      env: { PATH: process.env.PATH ?? "/usr/bin:/bin", ...env },
      encoding: "utf8",
    });
  // a relative STATE_ROOT is made absolute against the checkout, not the folder it runs in
  assert.equal(envSh({ STATE_ROOT: "data/state" }), `${path.join(copy, "data/state")}\n`);
  const written = await readFile(path.join(copy, ".env"), "utf8");
  assert.match(written, new RegExp(`\\nSTATE_ROOT=${path.join(copy, "data/state")}\\n$`));
  // again, with another STATE_ROOT: the .env already names one and is left as it is
  assert.equal(envSh({ STATE_ROOT: "/elsewhere" }), `${path.join(copy, "data/state")}\n`);
  assert.equal(await readFile(path.join(copy, ".env"), "utf8"), written);
  // and a start from anywhere reads it
  assert.equal(
    parseConfig(withDotEnv({ WARREN_ENV_FILE: path.join(copy, ".env") })).STATE_ROOT,
    path.join(copy, "data/state"),
  );
});

after(async () => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill("SIGKILL");
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

/** `warren serve` from src/, started in `cwd`, with only `env` (no STATE_ROOT of the test's own). */
function serve(cwd: string, env: Record<string, string>) {
  const child = spawn(process.execPath, ["--import", tsx, cli, "serve"], {
    cwd,
    env: {
      PATH: process.env.PATH ?? "/usr/bin:/bin",
      HOME: process.env.HOME ?? "/root",
      WARREN_HOST: "127.0.0.1",
      WARREN_PORT: "0",
      WARREN_PREVIEW_PORT: "0",
      LOG_LEVEL: "info",
      ...env,
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  children.push(child);
  let out = "";
  child.stdout?.setEncoding("utf8").on("data", (c: string) => (out += c));
  child.stderr?.setEncoding("utf8").on("data", (c: string) => (out += c));
  const exited = new Promise<number | null>((r) => child.once("exit", (code) => r(code)));
  /** Resolves once the output holds `re` (rejects when the server exits first). */
  const waitFor = (re: RegExp) =>
    new Promise<string>((resolve, reject) => {
      const check = () => {
        const m = re.exec(out);
        if (m) {
          child.stdout?.off("data", check);
          child.stderr?.off("data", check);
          resolve(m[0]);
        }
      };
      child.stdout?.on("data", check);
      child.stderr?.on("data", check);
      void exited.then(() => {
        check();
        reject(new Error(`warren serve exited before ${re}: ${out}`));
      });
      check();
    });
  return { child, exited, waitFor, out: () => out };
}

test("a server started from another folder finds the state root through .env; a second one refuses", async () => {
  const home = await mkdtemp(path.join(os.tmpdir(), "warren-envfile-"));
  const elsewhere = await mkdtemp(path.join(os.tmpdir(), "warren-elsewhere-"));
  dirs.push(home, elsewhere);
  const stateRoot = path.join(home, "state");
  const envFile = path.join(home, ".env");
  await writeFile(envFile, `# written as scripts/env.sh does\nSTATE_ROOT=${stateRoot}\nLOG_LEVEL=silent\n`);
  // LOG_LEVEL of the file is under the one set: the start line is still logged
  const first = serve(elsewhere, { WARREN_ENV_FILE: envFile });
  const line = await first.waitFor(/\{[^\n]*"msg":"state tree and master key"[^\n]*\}/);
  const said = JSON.parse(line) as { stateRoot: string; keyFrom: string };
  assert.equal(said.stateRoot, stateRoot);
  assert.equal(said.keyFrom, path.join(stateRoot, "run", "master.key"));
  assert.doesNotMatch(first.out(), /[0-9a-f]{64}/, "the key itself is never logged");
  await first.waitFor(/warren is serving/);

  // the same tree from a third folder: refused while the first holds it
  const second = serve(home, { WARREN_ENV_FILE: envFile });
  assert.equal(await second.exited, 2, second.out());
  assert.match(second.out(), /another warren server \(pid \d+\) is using STATE_ROOT /);

  first.child.kill("SIGTERM");
  await first.exited;
});
