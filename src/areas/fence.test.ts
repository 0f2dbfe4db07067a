import assert from "node:assert/strict";
import { test } from "node:test";
import { folderProblem, namesOnTheWay, narrow, outermost, standing } from "./fence.js";

test("an area's folder is plain names relative to the home", () => {
  assert.equal(folderProblem("support"), null);
  assert.equal(folderProblem("teams/support/"), null);
  assert.match(folderProblem("/etc") ?? "", /relative/);
  assert.match(folderProblem("a/../b") ?? "", /plain/);
  assert.match(folderProblem("") ?? "", /home itself/);
  assert.match(folderProblem("a\0b") ?? "", /NUL/);
});

test("a path stands inside, above or outside a fence", () => {
  const fence = ["support", "teams/a"];
  assert.equal(standing(["x"], null), "inside");
  assert.equal(standing(["support"], fence), "inside");
  assert.equal(standing(["support", "f.txt"], fence), "inside");
  assert.equal(standing([], fence), "above");
  assert.equal(standing(["teams"], fence), "above");
  assert.equal(standing(["teams", "b"], fence), "outside");
  assert.equal(standing(["supportx"], fence), "outside");
  assert.deepEqual([...namesOnTheWay([], fence)].sort(), ["support", "teams"]);
  assert.deepEqual([...namesOnTheWay(["teams"], fence)], ["a"]);
});

test("fences narrow, never widen", () => {
  assert.equal(narrow(null, null), null);
  assert.deepEqual(narrow(null, ["a"]), ["a"]);
  assert.deepEqual(narrow(["a", "b"], ["a/x", "c"]), ["a/x"]);
  assert.deepEqual(narrow(["a/x"], ["a"]), ["a/x"]);
  assert.deepEqual(narrow(["a"], ["b"]), []);
  assert.deepEqual(outermost(["a", "a/b", "c"]), ["a", "c"]);
});
