#!/usr/bin/env node
// Builds what boxes need besides the TypeScript output:
//   dist/native/boxd-spawn  the exec helper (gcc, no libraries)
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

const helperSrc = join(root, "native", "boxd-spawn.c");
const helperOut = join(root, "dist", "native", "boxd-spawn");
if (stale(helperOut, [helperSrc])) {
  mkdirSync(dirname(helperOut), { recursive: true });
  const tmp = `${helperOut}.${process.pid}.tmp`;
  const flags = ["-O2", "-Wall", "-Wextra", "-Werror", "-D_FORTIFY_SOURCE=2", "-fstack-protector-strong"];
  execFileSync("gcc", [...flags, "-o", tmp, helperSrc], { stdio: "inherit" });
  renameSync(tmp, helperOut);
  console.log(`built ${helperOut}`);
}

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
