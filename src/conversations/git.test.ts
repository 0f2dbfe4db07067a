import assert from "node:assert/strict";
import { test } from "node:test";
import { hardened, refusedSettings } from "./git.js";

const listing = (pairs: [string, string][]) => pairs.map(([k, v]) => `${k}\n${v}\0`).join("");

test("refusedSettings names every setting that starts a program or looks elsewhere, and no other", () => {
  assert.deepEqual(
    refusedSettings(
      listing([
        ["core.repositoryformatversion", "0"],
        ["core.hookspath", ".husky"],
        ["core.fsmonitor", "false"],
        ["user.name", "x"],
        ["diff.algorithm", "histogram"],
        ["merge.conflictstyle", "diff3"],
      ]),
    ),
    [],
  );
  assert.deepEqual(
    refusedSettings(
      listing([
        ["core.fsmonitor", "touch /tmp/x"],
        ["filter.leak.clean", "cat"],
        ["diff.external", "sh"],
        ["diff.a.b.textconv", "cat"],
        ["diff.x.command", "sh"],
        ["merge.m.driver", "sh"],
        ["include.path", "../../other/config"],
        ["includeif.gitdir:/.path", "x"],
        ["core.worktree", "/home/a/other"],
      ]),
    ),
    [
      "core.fsmonitor",
      "filter.leak.clean",
      "diff.external",
      "diff.a.b.textconv",
      "diff.x.command",
      "merge.m.driver",
      "include.path",
      "includeif.gitdir:/.path",
      "core.worktree",
    ],
  );
  // a key with no value (`[core] fsmonitor`) means true
  assert.deepEqual(refusedSettings("core.fsmonitor\0"), ["core.fsmonitor"]);
  assert.deepEqual(refusedSettings("core.fsmonitor\ntrue\0"), ["core.fsmonitor"]);
});

test("hardened turns hooks and fsmonitor off and pins safe.directory to the repository alone", () => {
  const args = hardened("/home/a/proj/app");
  const set = args.filter((_, i) => i % 2 === 1);
  assert.ok(args.filter((_, i) => i % 2 === 0).every((a) => a === "-c"));
  for (const s of [
    "core.hooksPath=/dev/null",
    "core.fsmonitor=false",
    "protocol.allow=never",
    "safe.directory=/home/a/proj/app",
  ])
    assert.ok(set.includes(s), s);
});
