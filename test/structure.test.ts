// The shape of src/ a newcomer can read, checked: no file of the server over 500 lines (the
// generated ones aside), and a composition root of one page. Which folder may import which is
// eslint's (eslint.config.js, the layers).
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import path from "node:path";
import { test } from "node:test";
import { sourceFiles, SRC } from "./support/sources.js";

const linesOf = (file: string) => readFileSync(file, "utf8").split("\n").length - 1;

test("no file of src/ is over 500 lines", () => {
  const long = sourceFiles()
    .map((f) => ({ file: path.relative(SRC, f), lines: linesOf(f) }))
    .filter((f) => f.lines > 500);
  assert.deepEqual(long, []);
});

test("the composition root, src/server.ts, is under 150 lines", () => {
  const n = linesOf(path.join(SRC, "server.ts"));
  assert.ok(n < 150, `src/server.ts has ${n} lines`);
});
