import assert from "node:assert/strict";
import { test } from "node:test";
import { boxdFence, heldBy, onDisk, type HomeView } from "./home-view.js";

const place = { from: ".warren/worktrees/cnv_1", at: "proj/app" };

test("a branch turn's paths below its repository are its worktree's; its .git is not there when fenced", () => {
  const fenced: HomeView = { fence: ["proj"], hide: [], place };
  assert.deepEqual(onDisk(fenced, ["proj", "app", "README.md"]), [
    ".warren",
    "worktrees",
    "cnv_1",
    "README.md",
  ]);
  assert.deepEqual(onDisk(fenced, ["proj", "app"]), [".warren", "worktrees", "cnv_1"]);
  assert.deepEqual(onDisk(fenced, ["proj", "application"]), ["proj", "application"]);
  assert.deepEqual(onDisk(fenced, ["proj", "lib", "x"]), ["proj", "lib", "x"]);
  assert.equal(onDisk(fenced, ["proj", "lib", ".git", "config"]), null);
  assert.equal(onDisk(fenced, ["proj", "app", ".git"]), null);
  // the whole home: history is there, the repository's own folder is still the worktree
  const whole: HomeView = { fence: null, hide: [], place };
  assert.deepEqual(onDisk(whole, ["proj", "lib", ".git", "config"]), ["proj", "lib", ".git", "config"]);
  assert.deepEqual(onDisk(whole, ["proj", "app", "x"]), [".warren", "worktrees", "cnv_1", "x"]);
  assert.equal(onDisk({ fence: null, hide: ["a/b"] }, ["a", "b", "c"]), null);
});

test("the repository's folder is held even when an area edit left it outside the fence; boxd gets the place", () => {
  assert.deepEqual(heldBy({ fence: ["proj"], hide: [], place }), ["proj"]);
  assert.deepEqual(heldBy({ fence: ["docs"], hide: [], place }), ["docs", "proj/app"]);
  assert.equal(heldBy({ fence: null, hide: [], place }), null);
  assert.equal(boxdFence("/home/a", { fence: null, hide: [] }), undefined);
  assert.deepEqual(boxdFence("/home/a", { fence: null, hide: [], place }), { home: "/home/a", place });
  assert.deepEqual(boxdFence("/home/a", { fence: ["proj"], hide: [], place }), {
    home: "/home/a",
    keep: ["proj"],
    place,
  });
});
