import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { test } from "node:test";
import { LocalProvider } from "./provider.js";

test("a missing bubblewrap says which package to install", async () => {
  const stateRoot = fs.mkdtempSync(path.join(os.tmpdir(), "wp-"));
  const p = new LocalProvider({ stateRoot, bwrap: "/nonexistent/bwrap", cgroupParent: "warren-test" });
  try {
    await p.create({
      id: "nobwrap",
      labels: {
        "warren.kind": "machine",
        "warren.org": "o",
        "warren.machine": "nobwrap",
        "warren.provider": "local",
      },
      mounts: [],
      limits: { memoryMib: 64, cpus: 1, pids: 64, tmpMib: 8 },
    });
    await assert.rejects(p.start("nobwrap"), (err: Error) => {
      assert.match(err.message, /apt-get install bubblewrap/);
      assert.match(err.message, /make up/);
      assert.doesNotMatch(err.message, /npm run build/);
      return true;
    });
  } finally {
    await p.remove("nobwrap");
    fs.rmSync(stateRoot, { recursive: true, force: true });
  }
});

test("homes and a run's files live where the provider says", () => {
  const p = new LocalProvider({ stateRoot: "/srv/state" });
  const m = "mch_0123456789abcdef";
  assert.equal(p.homes.machineDir(m), `/srv/state/workspaces/${m}`);
  assert.equal(p.homes.homeDir(m, "agt_0123456789abcdef"), `/srv/state/workspaces/${m}/agt_0123456789abcdef`);
  assert.deepEqual(p.runFilesDir(m), { hostDir: `/srv/state/run/boxes/${m}/boxd`, boxDir: "/run/boxd" });
  assert.deepEqual(p.homes.identity(10003, "isolated"), { uid: 10003, gid: 10003, groups: [] });
  assert.deepEqual(p.homes.identity(10003, "shared"), { uid: 10003, gid: 10003, groups: [9999] });
  assert.deepEqual(p.homes.fileOwner(10003, "isolated"), { uid: 10003, gid: 10003, mode: 0o600 });
  assert.deepEqual(p.homes.fileOwner(10003, "shared"), { uid: 10003, gid: 9999, mode: 0o640 });
  assert.throws(() => p.homes.homeDir(m, "../x"), /malformed id/);
});
