import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { test } from "node:test";
import { MASTER_KEY_FILE, MasterKeyError, resolveMasterKey } from "./master-key.js";

const tmp = () => fs.mkdtempSync(path.join(os.tmpdir(), "warren-key-"));

test("without WARREN_MASTER_KEY a key is generated once, 0600, and read back at every start", async () => {
  const dir = tmp();
  const first = await resolveMasterKey({}, dir);
  assert.equal(first.source, "generated");
  assert.equal(first.key.length, 32);
  const file = path.join(dir, MASTER_KEY_FILE);
  assert.equal(fs.statSync(file).mode & 0o777, 0o600);
  assert.equal(fs.readFileSync(file, "utf8"), `${first.key.toString("hex")}\n`);
  const again = await resolveMasterKey({}, dir);
  assert.equal(again.source, "file");
  assert.ok(again.key.equals(first.key));
  // two starts at once agree on one key
  const other = tmp();
  const both = await Promise.all([resolveMasterKey({}, other), resolveMasterKey({}, other)]);
  assert.ok(both[0].key.equals(both[1].key));
});

test("WARREN_MASTER_KEY wins and writes nothing", async () => {
  const dir = tmp();
  const hex = "ab".repeat(32);
  const k = await resolveMasterKey({ WARREN_MASTER_KEY: hex }, dir);
  assert.equal(k.source, "env");
  assert.equal(k.key.toString("hex"), hex);
  assert.equal(fs.existsSync(path.join(dir, MASTER_KEY_FILE)), false);
  await assert.rejects(resolveMasterKey({ WARREN_MASTER_KEY: "0".repeat(64) }, dir), /all-zero/);
  const zero = await resolveMasterKey(
    { WARREN_MASTER_KEY: "0".repeat(64), ALLOW_ZERO_MASTER_KEY: true },
    dir,
  );
  assert.equal(zero.key.toString("hex"), "0".repeat(64));
});

test("a key file that is damaged, open to others or a link is refused with what to do", async () => {
  const dir = tmp();
  const file = path.join(dir, MASTER_KEY_FILE);
  fs.writeFileSync(file, "not a key\n", { mode: 0o600 });
  await assert.rejects(
    resolveMasterKey({}, dir),
    (e: unknown) => e instanceof MasterKeyError && /64 hex/.test(e.message),
  );
  fs.writeFileSync(file, `${"cd".repeat(32)}\n`);
  fs.chmodSync(file, 0o644);
  await assert.rejects(resolveMasterKey({}, dir), /chmod 600/);
  fs.rmSync(file);
  fs.symlinkSync("/etc/hostname", file);
  await assert.rejects(resolveMasterKey({}, dir), /not a regular file/);
  assert.equal(fs.readFileSync("/etc/hostname", "utf8").length > 0, true);
});
