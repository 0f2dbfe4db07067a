import assert from "node:assert/strict";
import { execFileSync, spawn } from "node:child_process";
import { once } from "node:events";
import { closeSync, constants, openSync, statSync } from "node:fs";
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { after, afterEach, beforeEach, describe, it } from "node:test";
import { Worker } from "node:worker_threads";
import { isWarrenError } from "../errors.js";
import { HomeMeter, startWorker, toMib } from "./measure.js";
import { walk } from "./walk.js";

const meter = new HomeMeter({ threads: 2 });
after(() => meter.close());

let base: string;
let home: string;

beforeEach(async () => {
  base = await fs.realpath(await fs.mkdtemp(path.join(os.tmpdir(), "warren-measure-")));
  home = path.join(base, "home");
  await fs.mkdir(home);
});

afterEach(async () => {
  await fs.rm(base, { recursive: true, force: true });
});

function du(dir: string): number {
  const out = execFileSync("du", ["-s", "-B1", "-x", dir], { encoding: "utf8" });
  return Number(out.split("\t")[0]);
}

const MIB = 1024 * 1024;

const isMeasureError = (err: unknown): boolean => isWarrenError(err) && err.code === "workspace.measure";

/**
 * A stand-in measurement worker: reports ready like the real one, then runs `onTask` (plain
 * JavaScript with `fs` and `workerData` in scope) for each task and never answers it.
 */
function standIn(onTask: string, workerData?: unknown): Worker {
  const source = `
    const { parentPort, workerData } = require("node:worker_threads");
    const fs = require("node:fs");
    parentPort.on("message", () => { ${onTask} });
    parentPort.postMessage({ type: "ready" });`;
  return new Worker(source, { eval: true, workerData });
}

describe("measure", () => {
  it("matches du -s -B1 -x on a sample tree (nested folders, sparse file, links of both kinds)", async () => {
    for (let a = 0; a < 6; a++) {
      await fs.mkdir(path.join(home, `a${a}/b/c`), { recursive: true });
      for (let f = 0; f < 25; f++) await fs.writeFile(path.join(home, `a${a}/b/f${f}`), "x".repeat(f * 700));
      await fs.writeFile(path.join(home, `a${a}/b/c/big`), Buffer.alloc(300_000, 1));
    }
    await fs.mkdir(path.join(home, "empty"));
    const sparse = await fs.open(path.join(home, "sparse"), "w");
    await sparse.truncate(64 * MIB);
    await sparse.write("end", 0);
    await sparse.close();
    await fs.link(path.join(home, "a0/b/c/big"), path.join(home, "hard1"));
    await fs.link(path.join(home, "a0/b/c/big"), path.join(home, "a5/hard2"));
    await fs.symlink("a1", path.join(home, "soft"));
    await fs.symlink("/usr", path.join(home, "usr"));

    const got = await meter.measure(home);
    assert.equal(got.bytes, du(home));
    assert.equal(got.mib, Math.ceil(got.bytes / MIB));
  });

  it("counts a hard-linked file once", async () => {
    await fs.mkdir(path.join(home, "x"));
    await fs.writeFile(path.join(home, "f"), Buffer.alloc(2 * MIB, 1));
    const before = await meter.measure(home);
    for (let i = 0; i < 5; i++)
      await fs.link(path.join(home, "f"), path.join(home, i % 2 === 0 ? `l${i}` : `x/l${i}`));
    const after = await meter.measure(home);
    assert.equal(after.bytes, before.bytes);
    assert.ok(after.bytes >= 2 * MIB);
  });

  it("does not follow links to a large file or folder outside", async () => {
    const outside = path.join(base, "outside");
    await fs.mkdir(outside);
    await fs.writeFile(path.join(outside, "big"), Buffer.alloc(8 * MIB, 1));
    await fs.symlink(path.join(outside, "big"), path.join(home, "tofile"));
    await fs.symlink(outside, path.join(home, "tofolder"));
    await fs.symlink("/", path.join(home, "toroot"));
    const got = await meter.measure(home);
    assert.ok(got.bytes < 64 * 1024, `${got.bytes} bytes`);
    assert.equal(got.bytes, du(home));
  });

  it("does not cross into another mount", async (t) => {
    const mnt = path.join(home, "mnt");
    await fs.mkdir(mnt);
    try {
      execFileSync("mount", ["-t", "tmpfs", "-o", "size=32m", "tmpfs", mnt], { stdio: "pipe" });
    } catch (err) {
      t.skip(`cannot mount a tmpfs here (needs root): ${String(err).split("\n")[0]}`);
      return;
    }
    try {
      await fs.mkdir(path.join(mnt, "sub"));
      await fs.writeFile(path.join(mnt, "sub/big"), Buffer.alloc(8 * MIB, 1));
      assert.notEqual(statSync(mnt).dev, statSync(home).dev);
      const got = await meter.measure(home);
      assert.ok(got.bytes < 64 * 1024, `${got.bytes} bytes`);
      assert.equal(got.bytes, du(home));
    } finally {
      execFileSync("umount", [mnt]);
    }
  });

  it("fails with workspace.measure when the root itself cannot be measured", async () => {
    await fs.writeFile(path.join(base, "file"), "x");
    await fs.symlink(home, path.join(base, "link"));
    for (const dir of [path.join(base, "missing"), path.join(base, "file"), path.join(base, "link")]) {
      await assert.rejects(
        meter.measure(dir),
        (err: unknown) => isWarrenError(err) && err.code === "workspace.measure",
      );
    }
    assert.ok((await meter.measure(home)).bytes > 0, "the meter still works after a refusal");
  });

  it("skips and counts an entry it cannot look at (a path past PATH_MAX) instead of failing", async () => {
    await fs.writeFile(path.join(home, "kept"), Buffer.alloc(MIB, 1));
    // 24 folders of 200-character names: the deepest paths pass PATH_MAX (4096), so their
    // lstat by path is ENAMETOOLONG; made from inside, one folder at a time
    const name = "n".repeat(200);
    execFileSync("bash", [
      "-c",
      `cd "$1" && for i in $(seq 24); do mkdir ${name} && cd ${name}; done && head -c 1048576 /dev/zero >deep`,
      "-",
      home,
    ]);
    try {
      const got = await meter.measure(home);
      assert.ok(got.skipped > 0, `skipped ${got.skipped}`);
      assert.ok(got.bytes >= MIB && got.bytes < du(home), `${got.bytes} of du's ${du(home)}`);
    } finally {
      execFileSync("rm", ["-rf", path.join(home, name)]);
    }
  });

  it("keeps working while folders are removed during the walk", async () => {
    for (let a = 0; a < 40; a++) {
      await fs.mkdir(path.join(home, `d${a}/e`), { recursive: true });
      for (let f = 0; f < 50; f++) await fs.writeFile(path.join(home, `d${a}/e/f${f}`), "x");
    }
    const rm = spawn("rm", ["-rf", ...Array.from({ length: 40 }, (_, a) => path.join(home, `d${a}`))]);
    // listened for at once: rm may well end before the measurements do
    const rmEnded = once(rm, "exit");
    const results = await Promise.all([meter.measure(home), meter.measure(home), meter.measure(home)]);
    await rmEnded;
    for (const r of results) assert.ok(r.bytes > 0);
  });

  it("every measurement ends while folders and files are removed and swapped for links, round after round", async () => {
    const outside = path.join(base, "outside");
    await fs.mkdir(outside);
    await fs.writeFile(path.join(outside, "big"), Buffer.alloc(8 * MIB, 1));
    const N = 8;
    const build = async (d: string): Promise<void> => {
      await fs.mkdir(path.join(d, "e/g/h"), { recursive: true });
      for (let f = 0; f < 8; f++) await fs.writeFile(path.join(d, `e/f${f}`), "x");
    };
    const rm = (p: string): Promise<void> => fs.rm(p, { recursive: true, force: true });
    // Each change hits one folder d<i> of the home while the walkers may be inside it.
    const changes: ((d: string, moved: string) => Promise<void>)[] = [
      (d) => rm(d), // a folder vanishes
      async (d, moved) => {
        // moved out of the home, a link to where it went left in its place
        await fs.rename(d, moved);
        await fs.symlink(moved, d);
      },
      async (d) => {
        // a folder inside swapped for a link out of the home
        await rm(path.join(d, "e"));
        await fs.symlink(outside, path.join(d, "e"));
      },
      async (d) => {
        await rm(path.join(d, "e/g"));
        await fs.symlink("/", path.join(d, "e/g"));
      },
      async (d) => {
        // files swapped for a link that loops and a link to a big file outside
        await rm(path.join(d, "e/f1"));
        await fs.symlink("f1", path.join(d, "e/f1"));
        await rm(path.join(d, "e/f2"));
        await fs.symlink(path.join(outside, "big"), path.join(d, "e/f2"));
      },
      async (d) => {
        // a folder becomes a file, then a link to itself
        await rm(d);
        await fs.writeFile(d, "now a file");
        await rm(d);
        await fs.symlink(d, d);
      },
      async (d) => {
        // a folder inside becomes a file
        await rm(path.join(d, "e/g"));
        await fs.writeFile(path.join(d, "e/g"), "x");
      },
    ];
    for (let i = 0; i < N; i++) await build(path.join(home, `d${i}`));
    let stop = false;
    let changed = 0;
    const mutators = Array.from({ length: N }, async (_, i) => {
      const d = path.join(home, `d${i}`);
      const moved = path.join(base, `moved${i}`);
      for (let k = i; !stop; k++) {
        await changes[k % changes.length]!(d, moved);
        changed++;
        await rm(d);
        await rm(moved);
        await build(d);
      }
    });
    let rounds = 0;
    try {
      // Until the tree has changed many times under the walkers (a count, not a duration).
      while (rounds < 25 || changed < 25 * N) {
        const results = await Promise.allSettled([
          meter.measure(home),
          meter.measure(home),
          meter.measure(home),
        ]);
        for (const r of results) {
          assert.equal(r.status, "fulfilled", r.status === "rejected" ? String(r.reason) : "");
          const { bytes } = (r as PromiseFulfilledResult<{ bytes: number }>).value;
          // the home's own folder at least; never the big file outside, through any link
          assert.ok(bytes > 0 && bytes < 8 * MIB, `${bytes} bytes`);
        }
        rounds++;
      }
    } finally {
      stop = true;
      await Promise.all(mutators);
    }
    assert.ok((await meter.measure(home)).bytes > 0, "the meter still works afterwards");
  });

  it("ends a measurement whose walk never answers at its time limit, and the one waiting behind it", async () => {
    // The stand-in workers block in open(2) on a FIFO nobody writes: a walk stuck in the kernel,
    // as on storage that does not answer. Nothing but the limit can end these measurements.
    const fifo = path.join(base, "fifo");
    execFileSync("mkfifo", [fifo]);
    let stuck = true;
    const standIns: Worker[] = [];
    const exits: Promise<unknown>[] = [];
    const m = new HomeMeter({
      threads: 2,
      startWorker: () => {
        if (!stuck) return startWorker();
        const w = standIn("fs.closeSync(fs.openSync(workerData, 'r'));", fifo);
        standIns.push(w);
        exits.push(once(w, "exit"));
        return w;
      },
    });
    const timeoutMs = 100;
    try {
      const t0 = performance.now();
      const ends: number[] = [];
      const asked = [m.measure(home, { timeoutMs }), m.measure(home, { timeoutMs })].map((p) =>
        p.finally(() => ends.push(performance.now() - t0)),
      );
      const results = await Promise.allSettled(asked);
      for (const r of results) {
        assert.equal(r.status, "rejected");
        const err = r.reason as Error;
        assert.ok(isMeasureError(err), String(err));
        assert.match(err.message, /within 0\.1 s/);
      }
      // each had its whole limit: the second's turn came when the first's limit ran out
      assert.ok(ends[0]! >= timeoutMs - 2 && ends[1]! >= 2 * timeoutMs - 4, ends.join(", "));
      // the stuck workers were let go: the next measurement starts a fresh pool and succeeds
      stuck = false;
      assert.ok((await m.measure(home)).bytes > 0);
    } finally {
      // Free the blocked threads (a reader and writer in one: open(2) of the FIFO returns at
      // once and unblocks its waiting readers), and wait until each has stopped. The meter let
      // them go unreferenced; held again here, so that waiting for their exit keeps the loop alive.
      for (const w of standIns) w.ref();
      const fd = openSync(fifo, constants.O_RDWR | constants.O_NONBLOCK);
      try {
        await Promise.all(exits);
      } finally {
        closeSync(fd);
      }
      await m.close();
    }
  });

  it("ends a measurement whose worker dies, and measures again with fresh workers", async () => {
    let dying = true;
    const m = new HomeMeter({
      threads: 2,
      startWorker: () => (dying ? standIn("process.exit(3);") : startWorker()),
    });
    try {
      await assert.rejects(
        m.measure(home),
        (err: unknown) => isMeasureError(err) && /exited/.test(String(err)),
      );
      dying = false;
      assert.ok((await m.measure(home)).bytes > 0);
    } finally {
      await m.close();
    }
  });

  it("refuses a time limit that is not a positive number of ms", async () => {
    for (const timeoutMs of [0, -1, Number.NaN]) {
      assert.throws(() => new HomeMeter({ timeoutMs }), RangeError);
      await assert.rejects(meter.measure(home, { timeoutMs }), RangeError);
    }
  });

  it("rounds MiB up", () => {
    assert.deepEqual([toMib(0), toMib(1), toMib(MIB), toMib(MIB + 1)], [0, 1, 1, 2]);
  });
});

describe("walk", () => {
  it("ignores files and folders that vanish or change kind between listing and looking", async () => {
    for (const d of ["a", "b", "c", "d"]) {
      await fs.mkdir(path.join(home, d, "sub"), { recursive: true });
      for (let f = 0; f < 5; f++) await fs.writeFile(path.join(home, d, `f${f}`), Buffer.alloc(10_000, 1));
    }
    const root = await fs.realpath(home);
    const dev = statSync(root).dev;
    const seen: string[] = [];
    const result = walk(
      { dirs: [root], root, dev },
      {
        listed: (dir, names) => {
          seen.push(path.relative(root, dir));
          if (dir !== root) return;
          // Listed but not looked at yet: files vanish, a folder vanishes, one becomes a file, one a link.
          for (const name of names) if (name !== "a") execFileSync("rm", ["-rf", path.join(root, name)]);
          execFileSync("touch", [path.join(root, "b")]);
          execFileSync("ln", ["-s", "/usr", path.join(root, "c")]);
        },
      },
    );
    assert.ok(seen.includes("a") && !seen.includes("d") && !seen.includes("c"), seen.join(","));
    assert.ok(result.bytes > 0);
  });

  it("never lists a folder reached through a link swapped in after the folder was found", async () => {
    await fs.mkdir(path.join(home, "x/y/z"), { recursive: true });
    await fs.mkdir(path.join(home, "p/q"), { recursive: true });
    const root = await fs.realpath(home);
    const moved = path.join(base, "moved");
    const listedDirs: string[] = [];
    walk(
      { dirs: [root], root, dev: statSync(root).dev },
      {
        listed: (dir) => {
          listedDirs.push(path.relative(root, dir));
          if (dir === path.join(root, "x")) {
            // x/y is pending now. Move x out of the home and leave a link in its place: the
            // path x/y then leads to moved/y, outside.
            execFileSync("mv", [path.join(root, "x"), moved]);
            execFileSync("ln", ["-s", moved, path.join(root, "x")]);
          }
          if (dir === path.join(root, "p")) {
            // p/q is pending: swap it for a link to /usr.
            execFileSync("rmdir", [path.join(root, "p/q")]);
            execFileSync("ln", ["-s", "/usr", path.join(root, "p/q")]);
          }
        },
      },
    );
    assert.deepEqual(listedDirs.sort(), ["", "p", "x"]);
  });
});
