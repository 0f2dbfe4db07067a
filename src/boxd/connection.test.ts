// boxd's socket under a folder deeper than a unix socket's address holds (108 bytes): the
// client reaches it through the folder's descriptor, as it does a short path.
import assert from "node:assert/strict";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { after, test } from "node:test";
import { connector } from "./connection.js";

const dirs: string[] = [];
after(() => {
  for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
});

/** A socket listening at `<deep folder>/boxd.sock`; answers the bytes of its first connection. */
async function listenDeep(depth: number): Promise<{ file: string; first: Promise<Buffer>; close(): void }> {
  const top = fs.mkdtempSync(path.join(os.tmpdir(), "warren-sock-"));
  dirs.push(top);
  const dir = path.join(top, "d".repeat(depth));
  fs.mkdirSync(dir);
  const fd = fs.openSync(dir, fs.constants.O_RDONLY | fs.constants.O_DIRECTORY);
  let got!: (b: Buffer) => void;
  const first = new Promise<Buffer>((r) => (got = r));
  const server = net.createServer((c) => c.once("data", (b: Buffer) => (got(b), c.destroy())));
  // bound through the folder's descriptor, so the test does not depend on the client's way
  await new Promise<void>((r, j) => server.once("error", j).listen(`/proc/self/fd/${fd}/boxd.sock`, r));
  fs.closeSync(fd);
  return { file: path.join(dir, "boxd.sock"), first, close: () => server.close() };
}

for (const [what, depth] of [
  ["a short path", 10],
  ["a path longer than a socket's address", 120],
] as const) {
  test(`boxd's socket at ${what} is reached`, async () => {
    const s = await listenDeep(depth);
    try {
      assert.equal(Buffer.byteLength(s.file) > 107, depth > 100);
      const sock = await connector({ kind: "unix", path: s.file }, 5000)({ v: 1, op: "ping" });
      sock.destroy();
      assert.match((await s.first).toString("latin1"), /"op":"ping"/);
    } finally {
      s.close();
    }
  });
}

test("a socket folder that is not there is box.unavailable, not a throw", async () => {
  const missing = path.join(os.tmpdir(), "warren-no-such", "e".repeat(120), "boxd.sock");
  await assert.rejects(connector({ kind: "unix", path: missing }, 5000)({ v: 1, op: "ping" }), {
    code: "box.unavailable",
  });
});
