#!/usr/bin/env node
// Builds what boxes need besides the TypeScript output:
//   dist/native/boxd-spawn  the exec helper (gcc, linked static: boxd starts one per command,
//                           and a static image loads and tears down with the fewest pages)
//   dist/native/box-userns  starts a box's bubblewrap in its own user namespace
//   dist/native/box-launch  starts boxes for the local provider (the server never forks)
//   dist/native/warren-secret  agents' commands call the server with it from inside
//                           the box (bound at /opt/warren/bin; see native/boxd/calls.h)
//   dist/native/box-bridge  joins stdin and stdout to boxd's socket: the kubernetes
//                           provider reaches boxd through the API server's exec with it
//   dist/native/boxd        boxd, the daemon in every box (native/boxd/*.c; gcc, libc
//                           only); its protocol is src/boxd/protocol.ts
//   dist/native/boxd-asan   with --sanitize only: boxd built with AddressSanitizer and
//                           UndefinedBehaviorSanitizer (their runtimes linked in, since
//                           the box's root is read-only and its environment is boxd's
//                           own); any report aborts it, leaks are checked at exit.
//                           scripts/test.sh runs the box tests once against it
//                           (WARREN_TEST_SANITIZE=1)
//   dist/native/boxd-spawn-asan  with --sanitize only: the exec helper built the same way,
//                           which those boxes start for each command
// Runs after `tsc` in `npm run build`; box tests run it on demand. Builds only what is
// older than its sources unless --force is given. Everything is built with
// -Wall -Wextra -Werror.
import { execFileSync } from "node:child_process";
import { mkdirSync, readdirSync, renameSync, statSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const force = process.argv.includes("--force");
const sanitize = process.argv.includes("--sanitize");

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

const warnings = ["-Wall", "-Wextra", "-Werror"];
const flags = ["-O2", ...warnings, "-D_FORTIFY_SOURCE=2", "-fstack-protector-strong"];
const sanitizerFlags = [
  "-O1",
  "-g",
  ...warnings,
  "-fno-omit-frame-pointer",
  "-fsanitize=address,undefined",
  "-fno-sanitize-recover=all",
  "-static-libasan",
  "-static-libubsan",
  "-DBOXD_SANITIZE",
];

// every output is rebuilt when this script (its flags) changes, as when its sources do
const self = fileURLToPath(import.meta.url);

function gcc(output, sources, inputs = sources, cflags = flags) {
  if (!stale(output, [...inputs, self])) return;
  mkdirSync(dirname(output), { recursive: true });
  const tmp = `${output}.${process.pid}.tmp`;
  execFileSync("gcc", [...cflags, "-o", tmp, ...sources], { stdio: "inherit" });
  renameSync(tmp, output);
  console.log(`built ${output}`);
}

const spawnSource = join(root, "native", "boxd-spawn.c");
gcc(join(root, "dist", "native", "boxd-spawn"), [spawnSource], [spawnSource], [...flags, "-static-pie"]);
gcc(join(root, "dist", "native", "box-userns"), [join(root, "native", "box-userns.c")]);
gcc(join(root, "dist", "native", "box-launch"), [join(root, "native", "box-launch.c")]);
gcc(join(root, "dist", "native", "warren-secret"), [join(root, "native", "warren-secret.c")]);
gcc(join(root, "dist", "native", "box-bridge"), [join(root, "native", "box-bridge.c")]);

const boxdDir = join(root, "native", "boxd");
const boxdFiles = readdirSync(boxdDir).map((f) => join(boxdDir, f));
const boxdSources = boxdFiles.filter((f) => f.endsWith(".c"));
const boxdInputs = boxdFiles.filter((f) => f.endsWith(".c") || f.endsWith(".h"));
// boxd runs the exec helper's code in a terminal's forked shell without loading it (native/boxd-spawn.c)
const inBoxd = [...boxdSources, spawnSource];
const inBoxdInputs = [...boxdInputs, spawnSource];
gcc(join(root, "dist", "native", "boxd"), inBoxd, inBoxdInputs, [...flags, "-DBOXD_SPAWN_IN_BOXD"]);
if (sanitize) {
  gcc(join(root, "dist", "native", "boxd-asan"), inBoxd, inBoxdInputs, [
    ...sanitizerFlags,
    "-DBOXD_SPAWN_IN_BOXD",
  ]);
  // the command's helper as boxd-asan's boxes start it (test/box/fixture.ts): a report before
  // its exec aborts it, and the command fails with the report on its stderr
  gcc(join(root, "dist", "native", "boxd-spawn-asan"), [spawnSource], [spawnSource], sanitizerFlags);
}
