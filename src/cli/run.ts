// Runs the CLI: parse, carry the command out with the SDK, print errors, answer the exit code.
import { readFile } from "node:fs/promises";
import { isWarrenApiError } from "../sdk/index.js";
import { UsageError } from "./command.js";
import { Context, EXIT_FAILED, EXIT_OK, EXIT_USAGE, LocalError, write, type CliIo } from "./context.js";
import { helpText, shortHelp } from "./help.js";
import { resolveNames } from "./names.js";
import { parseCli, type Cli } from "./parse.js";

export type { CliIo } from "./context.js";

/** Runs the CLI; answers the process's exit code. */
export async function runCli(argv: readonly string[], io: CliIo): Promise<number> {
  if (argv.length === 1 && (argv[0] === "--version" || argv[0] === "-V")) {
    await write(io.stdout, `warren ${await packageVersion()}\n`);
    return EXIT_OK;
  }
  let cli: Cli;
  try {
    cli = parseCli(argv, io.env);
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    return usageFailed(io, err);
  }
  try {
    const { command, ...globals } = cli;
    if (command.kind === "help") {
      await write(io.stdout, helpText(command.topic));
      return EXIT_OK;
    }
    const ctx = new Context(io, globals);
    return await command.command.run(ctx, await resolveNames(ctx.client, command.params, io.env.WARREN_ORG));
  } catch (err) {
    if (isWarrenApiError(err) || err instanceof LocalError) {
      await write(io.stderr, `error: ${err.code}: ${err.message}\n`);
      return EXIT_FAILED;
    }
    if (err instanceof UsageError) return usageFailed(io, err);
    throw err;
  }
}

/** The version of the package this CLI is part of (its package.json, two folders up). */
export async function packageVersion(): Promise<string> {
  const file = new URL("../../package.json", import.meta.url);
  try {
    return (JSON.parse(await readFile(file, "utf8")) as { version: string }).version;
  } catch {
    return "unknown";
  }
}

async function usageFailed(io: CliIo, err: UsageError): Promise<number> {
  await write(io.stderr, `error: ${err.message}\n\n${shortHelp(err.topic)}`);
  return EXIT_USAGE;
}
