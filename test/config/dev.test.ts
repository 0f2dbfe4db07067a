// `make dev`'s server: the Makefile's own `tsx watch` command, run in a copy of the checkout's
// src/ and drizzle/ (so that the test edits neither), restarts the server when a file of src/
// changes (the restarted server takes the state root's lock again) and when a migration is
// added to drizzle/, and the server that boots after it has applied the new migration.
import assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, test } from "node:test";
import { fileURLToPath } from "node:url";
import { PGlite } from "@electric-sql/pglite";

const checkout = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");

/** The dev recipe's server command: the Makefile's `npx tsx watch ...` up to its `&`. */
function devCommand(): string {
  const makefile = fs.readFileSync(path.join(checkout, "Makefile"), "utf8");
  const recipe = /^dev:.*\n((?:\t.*\n)+)/m.exec(makefile)?.[1] ?? "";
  const m = /(npx tsx watch [^&]*?)\s*&/.exec(recipe.replace(/\\\n\s*/g, " "));
  assert.ok(m, `no tsx watch in the dev recipe:\n${recipe}`);
  return m[1]!;
}

let dir = "";
let child: ChildProcess | undefined;
let out = "";

before(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "warren-dev-"));
  fs.cpSync(path.join(checkout, "src"), path.join(dir, "src"), { recursive: true });
  fs.cpSync(path.join(checkout, "drizzle"), path.join(dir, "drizzle"), { recursive: true });
  for (const f of ["package.json", "tsconfig.json"])
    fs.copyFileSync(path.join(checkout, f), path.join(dir, f));
  // the packages and the built native parts (boxd) are the checkout's
  for (const d of ["node_modules", "dist"]) fs.symlinkSync(path.join(checkout, d), path.join(dir, d));
});

after(async () => {
  if (child && child.exitCode === null && child.signalCode === null) {
    const exited = new Promise((r) => child!.once("exit", r));
    process.kill(-child.pid!, "SIGKILL");
    await exited;
  }
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

/** The `warren is serving` lines so far, as logged. */
const serving = () =>
  out
    .split("\n")
    .filter((l) => l.includes('"msg":"warren is serving"'))
    .map((l) => JSON.parse(l) as { address: string });

/** Resolves once `n` servers have said they serve (rejects when the watcher ends first). */
function servingCount(n: number): Promise<{ address: string }> {
  return new Promise((resolve, reject) => {
    const check = () => {
      const s = serving();
      if (s.length >= n) {
        child?.stdout?.off("data", check);
        resolve(s[n - 1]!);
      }
    };
    child?.stdout?.on("data", check);
    child?.once("exit", () => reject(new Error(`the watcher ended before ${n} starts:\n${out}`)));
    check();
  });
}

const health = async (address: string) => (await fetch(`${address}/health`)).status;

test(
  "make dev's server restarts on a change to src/ and on a new migration, which it applies at boot",
  { timeout: 300_000 },
  async () => {
    const state = path.join(dir, "state");
    child = spawn("bash", ["-c", `exec ${devCommand()}`], {
      cwd: dir,
      detached: true,
      env: {
        PATH: process.env.PATH ?? "/usr/bin:/bin",
        HOME: process.env.HOME ?? "/root",
        STATE_ROOT: state,
        WARREN_HOST: "127.0.0.1",
        WARREN_PORT: "0",
        WARREN_PREVIEW_PORT: "0",
        LOG_LEVEL: "info",
      },
      stdio: ["ignore", "pipe", "pipe"],
    });
    child.stdout?.setEncoding("utf8").on("data", (c: string) => (out += c));
    child.stderr?.setEncoding("utf8").on("data", (c: string) => (out += c));

    const first = await servingCount(1);
    assert.equal(await health(first.address), 200);

    // an edit of a file the server runs: a new server, on the same state root (the lock given back)
    fs.appendFileSync(path.join(dir, "src/cli/main.ts"), "\n// an edit\n");
    const second = await servingCount(2);
    assert.equal(await health(second.address), 200);
    assert.doesNotMatch(out, /another warren server/);

    // a new migration: staged under names the watcher ignores, then renamed into place at once
    const journalFile = path.join(dir, "drizzle/meta/_journal.json");
    const journal = JSON.parse(fs.readFileSync(journalFile, "utf8")) as {
      entries: { idx: number; version: string; when: number; tag: string; breakpoints: boolean }[];
    };
    const last = journal.entries.at(-1)!;
    const tag = `${String(last.idx + 1).padStart(4, "0")}_dev_probe`;
    journal.entries.push({ ...last, idx: last.idx + 1, when: last.when + 1000, tag });
    fs.writeFileSync(
      path.join(dir, "drizzle/.probe.sql"),
      'CREATE TABLE "dev_probe" ("id" text PRIMARY KEY);\n',
    );
    fs.writeFileSync(path.join(dir, "drizzle/meta/.journal.json"), `${JSON.stringify(journal, null, 2)}\n`);
    fs.renameSync(path.join(dir, "drizzle/.probe.sql"), path.join(dir, `drizzle/${tag}.sql`));
    fs.renameSync(path.join(dir, "drizzle/meta/.journal.json"), journalFile);
    const third = await servingCount(3);
    assert.equal(await health(third.address), 200);

    // the watcher ends its server on SIGTERM; the state's database has the new table
    const exited = new Promise((r) => child!.once("exit", r));
    process.kill(-child.pid!, "SIGTERM");
    await exited;
    assert.equal(serving().length, 3, out);
    const db = new PGlite(path.join(state, "pglite"));
    try {
      const r = await db.query<{ t: string | null }>("select to_regclass('public.dev_probe')::text as t");
      assert.equal(r.rows[0]?.t, "dev_probe");
    } finally {
      await db.close();
    }
  },
);
