// Boot checks that refuse instead of degrading, each simulated missing (its probe
// replaced), WARREN_ALLOW_DEGRADED accepting one, and one server per STATE_ROOT.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { once } from "node:events";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { BootCheckError, stateProbes } from "../../src/boot/checks.js";
import { StateLockError } from "../../src/boot/lock.js";
import { protectedSymlinks } from "../../src/boxes/local/checks.js";
import { BOOT_CHECK_NAMES, parseConfig } from "../../src/config/index.js";
import { createServer } from "../../src/server.js";
import { boxSkipReason } from "../box/fixture.js";

const missing = (detail: string, fix: string) => async () => ({ ok: false, detail, fix });

describe("boot checks", { skip: boxSkipReason() ?? false }, () => {
  let root: string;
  const config = (env: Record<string, string> = {}) =>
    parseConfig({ STATE_ROOT: root, LOG_LEVEL: "silent", WARREN_PORT: "0", ...env });

  before(async () => {
    root = await mkdtemp(path.join(os.tmpdir(), "warren-boot-"));
  });
  after(async () => rm(root, { recursive: true, force: true, maxRetries: 3 }));

  test("each missing part stops the server with one line naming it and the fix", async () => {
    for (const name of BOOT_CHECK_NAMES) {
      const err = await createServer(config(), {
        defaultMetrics: false,
        probes: { [name]: missing(`${name} is not there`, `install the ${name}`) },
      }).then(
        (s) => {
          void s.close();
          return null;
        },
        (e: unknown) => e,
      );
      assert.ok(err instanceof BootCheckError, `${name}: ${String(err)}`);
      const lines = err.message.split("\n");
      assert.equal(lines.length, 1, err.message);
      assert.equal(
        lines[0],
        `cannot start: ${name}: ${name} is not there; fix: install the ${name} (or accept running without it: WARREN_ALLOW_DEGRADED=${name})`,
      );
    }
    // the lock was given back each time
    assert.equal(fs.existsSync(path.join(root, "run", "server.pid")), false);
  });

  test("WARREN_ALLOW_DEGRADED accepts a missing part; /health says so", async () => {
    const s = await createServer(config({ WARREN_ALLOW_DEGRADED: "landlock" }), {
      defaultMetrics: false,
      probes: { landlock: missing("the kernel has no Landlock", "a newer kernel") },
    });
    try {
      const h = await s.app.inject({ method: "GET", url: "/health" });
      assert.equal(h.statusCode, 200);
      assert.deepEqual(h.json(), { ok: true, degraded: ["landlock"] });
    } finally {
      await s.close();
    }
    const unknown = () => parseConfig({ STATE_ROOT: root, WARREN_ALLOW_DEGRADED: "landlock,nonsense" });
    assert.throws(unknown, /WARREN_ALLOW_DEGRADED is a comma-separated list of/);
  });

  test("a second server on one STATE_ROOT is refused; a stale lock is taken over", async () => {
    const first = await createServer(config(), { defaultMetrics: false });
    let second: unknown;
    try {
      const h = await first.app.inject({ method: "GET", url: "/health" });
      assert.deepEqual(h.json(), { ok: true });
      second = await createServer(config(), { defaultMetrics: false }).then(
        async (s) => {
          await s.close();
          return null;
        },
        (e: unknown) => e,
      );
    } finally {
      await first.close();
    }
    assert.ok(second instanceof StateLockError, String(second));
    assert.match(
      second.message,
      new RegExp(`another warren server \\(pid ${process.pid}\\) is using STATE_ROOT`),
    );
    // a lock file left by a server that died (a pid that is not running) is taken over
    await writeFile(path.join(root, "run", "server.pid"), "2147483000 12345\n");
    const third = await createServer(config(), { defaultMetrics: false });
    await third.close();
  });

  test("the lock is the kernel's: a holder whose pid is not seen here (another container) still refuses", async () => {
    // a server in another pid namespace on the same volume: its flock held, its pid not one of ours
    const lockFile = path.join(root, "run", "server.lock");
    const holder = spawn("flock", ["--no-fork", lockFile, "sh", "-c", "echo held; exec cat >/dev/null"], {
      stdio: ["pipe", "pipe", "inherit"],
    });
    try {
      await once(holder.stdout, "data");
      await writeFile(path.join(root, "run", "server.pid"), "2147483000 12345\n");
      const refused = await createServer(config(), { defaultMetrics: false }).then(
        async (s) => {
          await s.close();
          return null;
        },
        (e: unknown) => e,
      );
      assert.ok(refused instanceof StateLockError, String(refused));
      assert.equal(
        refused.message,
        `another warren server (pid 2147483000) is using STATE_ROOT ${root}; stop it first, or give this one another STATE_ROOT`,
      );
    } finally {
      holder.kill("SIGKILL");
      if (holder.exitCode === null && holder.signalCode === null) await once(holder, "exit");
    }
    // the holder gone, its lock goes with it: the next server starts, and gives it back on close
    const next = await createServer(config(), { defaultMetrics: false });
    assert.equal(
      fs.readFileSync(path.join(root, "run", "server.pid"), "utf8").split(" ")[0],
      String(process.pid),
    );
    await next.close();
    assert.equal(fs.existsSync(path.join(root, "run", "server.pid")), false);
  });

  test("the real probes: state tree, data folder, protected_symlinks", async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), "warren-probe-"));
    try {
      for (const d of ["run", "workspaces", "contracts"]) fs.mkdirSync(path.join(dir, d));
      fs.writeFileSync(path.join(dir, "data"), "not a folder");
      const p = stateProbes({
        root: dir,
        run: path.join(dir, "run"),
        workspaces: path.join(dir, "workspaces"),
        data: path.join(dir, "data"),
        contracts: path.join(dir, "contracts"),
      });
      assert.equal((await p.state()).ok, true);
      assert.equal((await p.contracts()).ok, true);
      const data = await p.data();
      assert.equal(data.ok, false);
      assert.match(data.detail, /the data folder .* is not readable: ENOTDIR/);

      const sysctl = path.join(dir, "protected_symlinks");
      fs.writeFileSync(sysctl, "0\n");
      const looked = await protectedSymlinks(false, sysctl);
      assert.equal(looked.ok, false);
      assert.match(looked.fix, /sysctl -w fs\.protected_symlinks=1/);
      const repaired = await protectedSymlinks(true, sysctl);
      assert.deepEqual(repaired, { ok: true, detail: "fs.protected_symlinks was 0; set to 1", fix: "" });
      assert.equal(fs.readFileSync(sysctl, "utf8"), "1");
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
