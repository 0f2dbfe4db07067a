// A reporter for node's test runner: appends, for each test file, the time its top-level
// tests and suites took ("<ms>\t<file>" lines) to the file WARREN_TEST_TIMES names, so
// scripts/test.sh can print the slowest files of the whole suite at its end.
import fs from "node:fs";
import path from "node:path";

export default async function* testTimes(source) {
  const byFile = new Map();
  for await (const event of source) {
    if (event.type !== "test:pass" && event.type !== "test:fail") continue;
    const { file, nesting, details } = event.data;
    if (!file || nesting !== 0) continue;
    byFile.set(file, (byFile.get(file) ?? 0) + (details?.duration_ms ?? 0));
  }
  const out = process.env.WARREN_TEST_TIMES;
  if (out) {
    const lines = [...byFile].map(
      ([file, ms]) => `${Math.round(ms)}\t${path.relative(process.cwd(), file)}\n`,
    );
    fs.appendFileSync(out, lines.join(""));
  }
  yield "";
}
