// The box launcher (native/box-launch.c, src/boxes/local/launcher.ts): what it starts, what
// the started program gets (fds 3 and 4, a session of its own, the log), and how a start
// that fails or ends early is told.
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { BoxLauncher } from "../../src/boxes/local/launcher.js";
import { ensureBuilt } from "./fixture.js";

const binary = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../dist/native/box-launch");

describe("the box launcher", () => {
  let dir: string;
  let launcher: BoxLauncher;
  let log: string;
  let filter: string;
  before(() => {
    ensureBuilt();
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "warren-launch-"));
    log = path.join(dir, "box.log");
    filter = path.join(dir, "filter");
    fs.writeFileSync(filter, "the filter's bytes");
    launcher = new BoxLauncher(binary);
  });
  after(() => {
    launcher.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it("starts a program in a session of its own, with the filter on fd 4, the log on 1 and 2, and passes on its ready", async () => {
    const out = path.join(dir, "seen");
    const script = [
      `cat <&4 > ${out}.filter`,
      `ps -o sid= -p $$ > ${out}.sid`,
      `echo $$ > ${out}.pid`,
      `echo "to the log"; echo "err to the log" >&2`,
      "printf 'rea' >&3; printf 'dy\\n' >&3",
    ].join("; ");
    const started = await launcher.launch({
      argv: ["/bin/sh", "-c", script],
      env: { PATH: "/usr/bin:/bin" },
      log,
      filter,
    });
    await started.ready;
    assert.equal(fs.readFileSync(`${out}.pid`, "utf8").trim(), String(started.pid));
    assert.equal(fs.readFileSync(`${out}.sid`, "utf8").trim(), String(started.pid), "its own session");
    assert.equal(fs.readFileSync(`${out}.filter`, "utf8"), "the filter's bytes");
    assert.match(fs.readFileSync(log, "utf8"), /to the log\nerr to the log\n/);
  });

  it("rejects ready when the program ends first, and says how", async () => {
    const started = await launcher.launch({ argv: ["/bin/sh", "-c", "exit 3"], env: {}, log, filter });
    await assert.rejects(started.ready, /exited during start \(code 3\)/);
    const missing = await launcher.launch({
      argv: [path.join(dir, "no-such-program")],
      env: {},
      log,
      filter,
    });
    await assert.rejects(missing.ready, /exited during start \(code 127\)/);
  });

  it("refuses what it cannot start: a log it cannot open, a NUL in an argument", async () => {
    await assert.rejects(
      launcher.launch({ argv: ["/bin/true"], env: {}, log: path.join(dir, "no", "such", "log"), filter }),
      /cannot open the log file/,
    );
    await assert.rejects(launcher.launch({ argv: ["/bin/true\0x"], env: {}, log, filter }), /NUL/);
    // and goes on starting others
    const ok = await launcher.launch({ argv: ["/bin/sh", "-c", "echo ready >&3"], env: {}, log, filter });
    await ok.ready;
  });
});
