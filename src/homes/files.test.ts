import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import fs from "node:fs/promises";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, it } from "node:test";
import { isWarrenError } from "../errors.js";
import { listHomeFolder, readHomeFile, writeHomeFile, type WriteOptions } from "./files.js";

const LIMIT = { maxBytes: 1024 };
const OWNER = { uid: 12345, gid: 23456 };
const SECRET = "the outside secret";

let base: string;
let home: string;
let outside: string;

beforeEach(async () => {
  base = await fs.realpath(await fs.mkdtemp(path.join(os.tmpdir(), "warren-files-")));
  home = path.join(base, "home");
  outside = path.join(base, "outside");
  await fs.mkdir(home, { mode: 0o700 });
  await fs.mkdir(outside);
  await fs.writeFile(path.join(outside, "secret.txt"), SECRET);
});

afterEach(async () => {
  await fs.rm(base, { recursive: true, force: true });
});

async function refused(promise: Promise<unknown>, code: string): Promise<void> {
  await assert.rejects(promise, (err: unknown) => {
    assert.ok(isWarrenError(err), `expected a WarrenError, got ${String(err)}`);
    assert.equal(err.code, code, err.message);
    return true;
  });
}

const read = (p: string, options = LIMIT): Promise<Buffer> => readHomeFile(home, p.split("/"), options);
const write = (p: string, data: string, options: WriteOptions = { ...LIMIT, ...OWNER }): Promise<void> =>
  writeHomeFile(home, p.split("/"), Buffer.from(data), options);

async function outsideUnchanged(): Promise<void> {
  assert.deepEqual(await fs.readdir(outside), ["secret.txt"]);
  assert.equal(await fs.readFile(path.join(outside, "secret.txt"), "utf8"), SECRET);
}

/** Fails the test instead of hanging when a read blocks (a FIFO opened without O_NONBLOCK would). */
function within<T>(ms: number, promise: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`still waiting after ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

describe("readHomeFile", () => {
  it("reads a regular file, at any depth", async () => {
    await fs.mkdir(path.join(home, "a/b"), { recursive: true });
    await fs.writeFile(path.join(home, "a/b/f.txt"), "hello");
    await fs.writeFile(path.join(home, "top"), "");
    assert.equal((await read("a/b/f.txt")).toString(), "hello");
    assert.equal((await read("top")).length, 0);
  });

  it("follows links that stay inside the home: relative, to folders, chained, and absolute by the host path", async () => {
    await fs.mkdir(path.join(home, "a/b"), { recursive: true });
    await fs.writeFile(path.join(home, "a/b/f.txt"), "inside");
    await fs.symlink("a/b/f.txt", path.join(home, "rel"));
    await fs.symlink("a", path.join(home, "dir"));
    await fs.symlink("rel", path.join(home, "chain"));
    await fs.symlink("../a/b/f.txt", path.join(home, "a/up"));
    await fs.symlink(path.join(home, "a/b/f.txt"), path.join(home, "abs"));
    await fs.symlink(path.join(home, "a"), path.join(home, "absdir"));
    for (const p of ["rel", "dir/b/f.txt", "chain", "a/up", "abs", "absdir/b/f.txt", "dir/up"]) {
      assert.equal((await read(p)).toString(), "inside", p);
    }
  });

  it("with noLinks, refuses every link on the way, even one that stays in the home (file.link)", async () => {
    await fs.mkdir(path.join(home, "a/b"), { recursive: true });
    await fs.writeFile(path.join(home, "a/b/f.txt"), "inside");
    await fs.symlink("a/b/f.txt", path.join(home, "rel"));
    await fs.symlink("a", path.join(home, "dir"));
    const strict = { ...LIMIT, noLinks: true };
    assert.equal((await read("a/b/f.txt", strict)).toString(), "inside");
    for (const p of ["rel", "dir/b/f.txt"]) {
      await assert.rejects(read(p, strict), (e: unknown) => isWarrenError(e) && e.code === "file.link", p);
    }
  });

  it("resolves .. after a link to a folder physically, from the folder the link points at", async () => {
    await fs.mkdir(path.join(home, "x/y"), { recursive: true });
    await fs.writeFile(path.join(home, "x/f"), "x/f");
    await fs.writeFile(path.join(home, "f"), "top f");
    await fs.symlink("x/y", path.join(home, "ly"));
    await fs.symlink("ly/../f", path.join(home, "l"));
    assert.equal((await read("l")).toString(), "x/f");
  });

  it("refuses links that lead out, absolute or relative, to a file or to a folder (file.link)", async () => {
    await fs.symlink(path.join(outside, "secret.txt"), path.join(home, "abs"));
    await fs.symlink("../outside/secret.txt", path.join(home, "rel"));
    await fs.symlink(outside, path.join(home, "dir"));
    await fs.symlink("/etc/passwd", path.join(home, "passwd"));
    await fs.symlink("/", path.join(home, "root"));
    for (const p of ["abs", "rel", "dir/secret.txt", "passwd", "root/etc/passwd"])
      await refused(read(p), "file.link");
  });

  it("refuses a link that leaves the home even when it would come back in", async () => {
    await fs.writeFile(path.join(home, "f"), "inside");
    await fs.symlink(`../${path.basename(home)}/f`, path.join(home, "back"));
    await fs.symlink(`${home}/../home/f`, path.join(home, "absback"));
    await fs.symlink(`${outside}/../home/f`, path.join(home, "viaoutside"));
    await refused(read("back"), "file.link");
    await refused(read("absback"), "file.link");
    await refused(read("viaoutside"), "file.link");
  });

  it("refuses a link written with the in-box path, which on the host leads elsewhere", async () => {
    await fs.writeFile(path.join(home, "f"), "inside");
    await fs.symlink("/home/ag_1/f", path.join(home, "boxpath"));
    await refused(read("boxpath"), "file.link");
  });

  it("answers file.not_found for a missing file, a missing folder, a dangling link and a file used as a folder", async () => {
    await fs.writeFile(path.join(home, "file"), "x");
    await fs.symlink("nowhere", path.join(home, "dangling"));
    await fs.symlink(path.join(home, "nowhere"), path.join(home, "absdangling"));
    for (const p of ["missing", "no/such/file", "dangling", "absdangling", "file/x"])
      await refused(read(p), "file.not_found");
  });

  it("refuses a link loop (file.link)", async () => {
    await fs.symlink("b", path.join(home, "a"));
    await fs.symlink("a", path.join(home, "b"));
    await refused(read("a"), "file.link");
  });

  it("refuses folders, FIFOs, sockets and devices (file.not_regular), without blocking on a FIFO", async () => {
    await fs.mkdir(path.join(home, "folder"));
    await fs.symlink("folder", path.join(home, "tofolder"));
    execFileSync("mkfifo", [path.join(home, "fifo")]);
    await fs.symlink("fifo", path.join(home, "tofifo"));
    await refused(read("folder"), "file.not_regular");
    await refused(read("tofolder"), "file.not_regular");
    await refused(within(2000, read("fifo")), "file.not_regular");
    await refused(within(2000, read("tofifo")), "file.not_regular");

    const server = net.createServer();
    await new Promise<void>((resolve) => server.listen(path.join(home, "sock"), resolve));
    try {
      await refused(within(2000, read("sock")), "file.not_regular");
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it("refuses a device node (file.not_regular)", async (t) => {
    try {
      execFileSync("mknod", [path.join(home, "null"), "c", "1", "3"], { stdio: "ignore" });
    } catch {
      t.skip("mknod needs root (CAP_MKNOD)");
      return;
    }
    await refused(within(2000, read("null")), "file.not_regular");
  });

  it("refuses a file over maxBytes (file.too_large) and reads one of exactly maxBytes", async () => {
    await fs.writeFile(path.join(home, "big"), Buffer.alloc(1025));
    await fs.writeFile(path.join(home, "fits"), Buffer.alloc(1024, 7));
    await refused(read("big"), "file.too_large");
    assert.equal((await read("fits")).length, 1024);
  });

  it("reads a hard link to a file outside: it is a regular file inside the home", async () => {
    await fs.link(path.join(outside, "secret.txt"), path.join(home, "hard"));
    assert.equal((await read("hard")).toString(), SECRET);
  });

  it("refuses a home that is a link, and a home that is missing", async () => {
    await fs.symlink(home, path.join(base, "homelink"));
    await fs.writeFile(path.join(home, "f"), "x");
    await refused(readHomeFile(path.join(base, "homelink"), ["f"], LIMIT), "file.link");
    await refused(readHomeFile(path.join(base, "nohome"), ["f"], LIMIT), "file.not_found");
  });

  it("refuses components that are not plain names (file.invalid_path)", async () => {
    await refused(readHomeFile(home, ["..", "outside", "secret.txt"], LIMIT), "file.invalid_path");
    await refused(readHomeFile(home, ["a/b"], LIMIT), "file.invalid_path");
    await refused(readHomeFile(home, [], LIMIT), "file.invalid_path");
    await refused(readHomeFile(home, ["x".repeat(300)], LIMIT), "file.invalid_path");
  });
});

describe("writeHomeFile", () => {
  it("creates a file owned by the agent, mode 0600 unless told, and replaces it", async () => {
    await write("f.txt", "one");
    let st = await fs.stat(path.join(home, "f.txt"));
    assert.equal(await fs.readFile(path.join(home, "f.txt"), "utf8"), "one");
    assert.deepEqual([st.uid, st.gid, st.mode & 0o7777], [OWNER.uid, OWNER.gid, 0o600]);

    await write("f.txt", "two", { ...LIMIT, ...OWNER, mode: 0o640 });
    st = await fs.stat(path.join(home, "f.txt"));
    assert.equal(await fs.readFile(path.join(home, "f.txt"), "utf8"), "two");
    assert.equal(st.mode & 0o7777, 0o640);
    assert.deepEqual(await fs.readdir(home), ["f.txt"], "no temporary file is left behind");
  });

  it("creates missing folders one at a time, 0700 and owned by the agent, and keeps existing ones as they are", async () => {
    await fs.mkdir(path.join(home, "kept"), { mode: 0o755 });
    await write("kept/new1/new2/f", "deep");
    assert.equal(await fs.readFile(path.join(home, "kept/new1/new2/f"), "utf8"), "deep");
    for (const made of ["kept/new1", "kept/new1/new2"]) {
      const st = await fs.stat(path.join(home, made));
      assert.deepEqual([st.uid, st.gid, st.mode & 0o7777], [OWNER.uid, OWNER.gid, 0o700], made);
    }
    const kept = await fs.stat(path.join(home, "kept"));
    assert.deepEqual([kept.uid, kept.mode & 0o7777], [0, 0o755]);
  });

  it("refuses a link anywhere on the path, even one that stays inside the home (file.link)", async () => {
    await fs.mkdir(path.join(home, "real"));
    await fs.writeFile(path.join(home, "real/f"), "before");
    await fs.symlink("real", path.join(home, "inlink"));
    await fs.symlink("real/f", path.join(home, "filelink"));
    await fs.symlink(outside, path.join(home, "outlink"));
    await fs.symlink("../outside/secret.txt", path.join(home, "outfile"));
    await fs.symlink(path.join(outside, "new"), path.join(home, "dangling"));
    for (const p of [
      "inlink/f",
      "inlink/new",
      "filelink",
      "outlink/secret.txt",
      "outlink/new/f",
      "outfile",
      "dangling",
    ]) {
      await refused(write(p, "changed"), "file.link");
    }
    assert.equal(await fs.readFile(path.join(home, "real/f"), "utf8"), "before");
    await outsideUnchanged();
  });

  it("refuses a home that is a link", async () => {
    await fs.symlink(outside, path.join(base, "homelink"));
    await refused(
      writeHomeFile(path.join(base, "homelink"), ["x"], Buffer.from("x"), { ...LIMIT, ...OWNER }),
      "file.link",
    );
    await outsideUnchanged();
  });

  it("refuses a file where a folder is needed, and a folder, FIFO or socket at the name (file.not_regular)", async () => {
    await fs.writeFile(path.join(home, "file"), "x");
    await fs.mkdir(path.join(home, "folder"));
    execFileSync("mkfifo", [path.join(home, "fifo")]);
    await refused(write("file/f", "x"), "file.not_regular");
    await refused(write("folder", "x"), "file.not_regular");
    await refused(within(2000, write("fifo", "x")), "file.not_regular");
    const server = net.createServer();
    await new Promise<void>((resolve) => server.listen(path.join(home, "sock"), resolve));
    try {
      await refused(write("sock", "x"), "file.not_regular");
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it("refuses data over maxBytes (file.too_large) and writes nothing", async () => {
    await refused(write("big", "x".repeat(1025)), "file.too_large");
    await assert.rejects(fs.stat(path.join(home, "big")));
  });

  it("replaces a hard link to a file outside instead of writing through it", async () => {
    await fs.link(path.join(outside, "secret.txt"), path.join(home, "hard"));
    await write("hard", "mine");
    assert.equal(await fs.readFile(path.join(home, "hard"), "utf8"), "mine");
    await outsideUnchanged();
  });

  it("refuses components that are not plain names (file.invalid_path)", async () => {
    await refused(
      writeHomeFile(home, ["..", "outside", "x"], Buffer.from("x"), { ...LIMIT, ...OWNER }),
      "file.invalid_path",
    );
    await outsideUnchanged();
  });
});

// One loop, in a worker thread so that it truly runs beside the API calls, keeps swapping a
// folder of the home (and a file in it) for links to the outside folder and back.
const SWAPPER = `
const fs = require("node:fs");
const { workerData } = require("node:worker_threads");
const { home, outside, stop } = workerData;
const flag = new Int32Array(stop);
const d = home + "/d", dReal = home + "/d.real", tmp = home + "/swap.tmp";
// Renames over "to"; a folder that a write made there meanwhile is removed first.
function place(from, to) {
  for (let tries = 0; ; tries++) {
    try { return fs.renameSync(from, to); } catch (err) {
      if (tries > 1000 || !["EISDIR", "ENOTEMPTY", "EEXIST"].includes(err.code)) throw err;
      try { fs.rmSync(to, { recursive: true, force: true }); } catch (e) { if (e.code !== "ENOTEMPTY") throw e; }
    }
  }
}
let swaps = 0;
while (Atomics.load(flag, 0) === 0) {
  fs.rmSync(tmp, { recursive: true, force: true });
  fs.symlinkSync(outside + "/g", tmp); place(tmp, d + "/g");      // d/g: a link to the outside secret
  fs.renameSync(d, dReal);
  fs.symlinkSync(outside, tmp); place(tmp, d);                    // d: a link to the outside folder
  fs.unlinkSync(d); place(dReal, d);                              // d: the real folder again
  fs.writeFileSync(tmp, "inside"); place(tmp, d + "/g");          // d/g: a file in the home again
  swaps++;
}
Atomics.store(flag, 1, swaps);
`;

describe("races", () => {
  it("never reads or writes outside the home while a folder on the path is swapped for a link", async (t) => {
    const { Worker } = await import("node:worker_threads");
    await fs.mkdir(path.join(home, "d"));
    await fs.writeFile(path.join(home, "d/g"), "inside");
    await fs.writeFile(path.join(outside, "g"), SECRET);
    const outsideBefore = (await fs.readdir(outside)).sort();

    const stop = new SharedArrayBuffer(8);
    const swapper = new Worker(SWAPPER, { eval: true, workerData: { home, outside, stop } });
    let swapperError: Error | undefined;
    swapper.once("error", (err) => (swapperError = err));
    const exited = new Promise((resolve) => swapper.once("exit", resolve));
    const outcomes = new Map<string, number>();
    const note = (what: string): void => void outcomes.set(what, (outcomes.get(what) ?? 0) + 1);
    const attempt = async (what: string, op: Promise<unknown>): Promise<unknown> => {
      try {
        const value = await op;
        note(`${what}: ok`);
        return value;
      } catch (err) {
        if (!isWarrenError(err)) throw err;
        note(`${what}: ${err.code}`);
        return undefined;
      }
    };

    const ITERATIONS = 3000;
    try {
      for (let i = 0; i < ITERATIONS; i++) {
        if (swapperError !== undefined) throw swapperError;
        const got = await attempt("read d/g", readHomeFile(home, ["d", "g"], LIMIT));
        assert.notEqual(got?.toString(), SECRET, `read ${i} returned the outside secret`);
        const data = Buffer.from(`write ${i}`);
        await attempt("write d/g", writeHomeFile(home, ["d", "g"], data, { ...LIMIT, ...OWNER }));
        await attempt(
          "write d/new/f",
          writeHomeFile(home, ["d", `new${i % 7}`, "f"], data, { ...LIMIT, ...OWNER }),
        );
        await attempt(
          "write d/secret.txt",
          writeHomeFile(home, ["d", "secret.txt"], data, { ...LIMIT, ...OWNER }),
        );
      }
    } finally {
      Atomics.store(new Int32Array(stop), 0, 1);
      await exited;
    }
    if (swapperError !== undefined) throw swapperError;
    const swaps = new Int32Array(stop)[1] ?? 0;
    t.diagnostic(
      `race: ${ITERATIONS} iterations, ${swaps} full swap cycles, outcomes ${JSON.stringify(Object.fromEntries(outcomes))}`,
    );

    // Nothing outside was created or changed.
    assert.deepEqual((await fs.readdir(outside)).sort(), outsideBefore);
    assert.equal(await fs.readFile(path.join(outside, "secret.txt"), "utf8"), SECRET);
    assert.equal(await fs.readFile(path.join(outside, "g"), "utf8"), SECRET);
    // The race really happened: the swapper went round many times, and the API saw both states.
    assert.ok(swaps > 100, `only ${swaps} swaps happened`);
    assert.ok((outcomes.get("read d/g: ok") ?? 0) > 0, "no read went through");
    assert.ok((outcomes.get("read d/g: file.link") ?? 0) > 0, "no read met a link");
    const writes = (code: string): number =>
      [...outcomes]
        .filter(([what]) => what.startsWith("write") && what.endsWith(code))
        .reduce((n, [, count]) => n + count, 0);
    assert.ok(writes(": ok") > 0, "no write went through");
    assert.ok(writes(": file.link") > 0, "no write met a link");
  });
});

describe("listing a folder of the home", () => {
  it("lists entries sorted, without following links, and cuts at the limit", async () => {
    await fs.mkdir(path.join(home, "docs"));
    await fs.writeFile(path.join(home, "docs", "b.txt"), "bb");
    await fs.writeFile(path.join(home, "docs", "a.txt"), "a");
    await fs.mkdir(path.join(home, "docs", "sub"));
    await fs.symlink(outside, path.join(home, "docs", "out"));
    const all = await listHomeFolder(home, ["docs"], 10);
    // each entry carries its modification time (lstat's, so a link's own)
    for (const e of all.entries)
      assert.ok(e.modifiedAt instanceof Date && !Number.isNaN(e.modifiedAt.getTime()));
    assert.deepEqual(
      { ...all, entries: all.entries.map(({ modifiedAt: _m, ...e }) => e) },
      {
        entries: [
          { name: "a.txt", type: "file", size: 1 },
          { name: "b.txt", type: "file", size: 2 },
          { name: "out", type: "link", size: 0 },
          { name: "sub", type: "folder", size: 0 },
        ],
        truncated: false,
      },
    );
    assert.deepEqual(
      (await listHomeFolder(home, [], 10)).entries.map(({ modifiedAt: _m, ...e }) => e),
      [{ name: "docs", type: "folder", size: 0 }],
    );
    const cut = await listHomeFolder(home, ["docs"], 2);
    assert.equal(cut.entries.length, 2);
    assert.equal(cut.truncated, true);
  });

  it("refuses a link on the way, a file on the way and what is missing", async () => {
    await fs.symlink(outside, path.join(home, "out"));
    await fs.mkdir(path.join(home, "real"));
    await fs.symlink("real", path.join(home, "inside"));
    await fs.writeFile(path.join(home, "file"), "x");
    await refused(listHomeFolder(home, ["out"], 10), "file.link");
    await refused(listHomeFolder(home, ["inside"], 10), "file.link");
    await refused(listHomeFolder(home, ["file"], 10), "file.not_found");
    await refused(listHomeFolder(home, ["nothing"], 10), "file.not_found");
    await refused(listHomeFolder(home, [".."], 10), "file.invalid_path");
  });
});
