// The container's freezer folders are found only where its cgroup path names its id.
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { test } from "node:test";
import { freezerDirsOf } from "./freezer.js";

const id = "0123456789abcdef".repeat(4);

function hierarchy(): { root: string; mountinfo: string; v1Dir: string; v2Dir: string } {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), "freezer-"));
  const v1Dir = path.join(root, "freezer", "libpod_parent", `libpod-${id}`);
  const v2Dir = path.join(root, "unified", "machine.slice", `libpod-${id}.scope`);
  fs.mkdirSync(v1Dir, { recursive: true });
  fs.mkdirSync(v2Dir, { recursive: true });
  fs.writeFileSync(path.join(v1Dir, "freezer.state"), "THAWED\n");
  fs.writeFileSync(path.join(v2Dir, "cgroup.freeze"), "0\n");
  const mountinfo = [
    `30 25 0:26 / ${root}/freezer rw,relatime - cgroup cgroup rw,freezer`,
    `31 25 0:27 / ${root}/memory rw,relatime - cgroup cgroup rw,memory`,
    `32 25 0:28 / ${root}/unified rw,relatime - cgroup2 cgroup2 rw`,
  ].join("\n");
  return { root, mountinfo, v1Dir, v2Dir };
}

test("v1: the freezer hierarchy's folder of the container", () => {
  const h = hierarchy();
  try {
    const cg = `7:freezer:/libpod_parent/libpod-${id}\n4:memory:/libpod_parent/libpod-${id}\n0::/\n`;
    assert.deepEqual(freezerDirsOf(cg, h.mountinfo, id), [h.v1Dir]);
  } finally {
    fs.rmSync(h.root, { recursive: true, force: true });
  }
});

test("v2 alone: the unified folder with cgroup.freeze", () => {
  const h = hierarchy();
  try {
    assert.deepEqual(freezerDirsOf(`0::/machine.slice/libpod-${id}.scope\n`, h.mountinfo, id), [h.v2Dir]);
  } finally {
    fs.rmSync(h.root, { recursive: true, force: true });
  }
});

test("a cgroup that does not name the container (an engine elsewhere, a reused pid) gives none", () => {
  const h = hierarchy();
  try {
    const other = "f".repeat(64);
    assert.deepEqual(freezerDirsOf(`7:freezer:/libpod_parent/libpod-${id}\n`, h.mountinfo, other), []);
    assert.deepEqual(freezerDirsOf(`7:freezer:/user.slice\n0::/\n`, h.mountinfo, id), []);
    assert.deepEqual(freezerDirsOf(`7:freezer:/x-${id}\n`, h.mountinfo, "../etc"), [], "a bad id");
  } finally {
    fs.rmSync(h.root, { recursive: true, force: true });
  }
});
