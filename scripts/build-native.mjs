#!/usr/bin/env node
// Builds what boxes need besides the TypeScript output:
//   dist/native/boxd-spawn  the exec helper (gcc, no libraries)
//   dist/native/boxd        boxd in C (native/boxd/*.c; gcc, libc only), the same protocol
//                           and behaviour as src/boxd/main.ts
//   dist/boxd/boxd.cjs      boxd bundled into one CommonJS file (esbuild): it starts
//                           faster and smaller than the ES module tree
// Runs after `tsc` in `npm run build`; box tests run it on demand. Builds only what is
// older than its sources unless --force is given.
import { execFileSync } from "node:child_process";
import { mkdirSync, readdirSync, renameSync, statSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const force = process.argv.includes("--force");

function mtime(path) {
  try {
    return statSync(path).mtimeMs;
  } catch {
    return 0;
  }
}

function stale(output, inputs) {
  if (force) return true;
  const out = mtime(output);
  return out === 0 || inputs.some((i) => mtime(i) > out);
}

const flags = ["-O2", "-Wall", "-Wextra", "-Werror", "-D_FORTIFY_SOURCE=2", "-fstack-protector-strong"];

function gcc(output, sources, inputs = sources) {
  if (!stale(output, inputs)) return;
  mkdirSync(dirname(output), { recursive: true });
  const tmp = `${output}.${process.pid}.tmp`;
  execFileSync("gcc", [...flags, "-o", tmp, ...sources], { stdio: "inherit" });
  renameSync(tmp, output);
  console.log(`built ${output}`);
}

gcc(join(root, "dist", "native", "boxd-spawn"), [join(root, "native", "boxd-spawn.c")]);

const cBoxdDir = join(root, "native", "boxd");
const cBoxdFiles = readdirSync(cBoxdDir).map((f) => join(cBoxdDir, f));
gcc(
  join(root, "dist", "native", "boxd"),
  cBoxdFiles.filter((f) => f.endsWith(".c")),
  cBoxdFiles.filter((f) => f.endsWith(".c") || f.endsWith(".h")),
);

const boxdDir = join(root, "src", "boxd");
const boxdInputs = readdirSync(boxdDir)
  .filter((f) => f.endsWith(".ts") && !f.endsWith(".test.ts"))
  .map((f) => join(boxdDir, f));
const bundleOut = join(root, "dist", "boxd", "boxd.cjs");
if (stale(bundleOut, boxdInputs)) {
  const esbuild = await import("esbuild");
  mkdirSync(dirname(bundleOut), { recursive: true });
  const tmp = `${bundleOut}.${process.pid}.tmp`;
  await esbuild.build({
    entryPoints: [join(boxdDir, "main.ts")],
    outfile: tmp,
    bundle: true,
    platform: "node",
    format: "cjs",
    target: "node20",
    logLevel: "warning",
  });
  renameSync(tmp, bundleOut);
  console.log(`built ${bundleOut}`);
}
