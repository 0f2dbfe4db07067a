#!/usr/bin/env node
// The `warren` command: parse, run, exit with the answer's code.
import { runCli } from "./run.js";

process.exitCode = await runCli(process.argv.slice(2), {
  stdout: process.stdout,
  stderr: process.stderr,
  stdin: process.stdin,
  env: process.env,
});
