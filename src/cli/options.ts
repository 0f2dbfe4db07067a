// Options more than one command group takes, the global ones, and the readers of their values.
import type { CommandLimits } from "../sdk/index.js";
import { UsageError, type Input, type OptionDef } from "./command.js";

export const DEFAULT_URL = "http://127.0.0.1:8080";

/** Options every command takes. */
export const GLOBAL_OPTIONS: readonly OptionDef[] = [
  { name: "url", value: "<url>", help: "the server (default $WARREN_URL, else http://127.0.0.1:8080)" },
  {
    name: "header",
    value: '<"Name: value">',
    repeatable: true,
    help: '"Name: value" sent with every request; repeatable (also $WARREN_HEADERS, one a line)',
  },
  { name: "json", help: "print the server's answer as JSON, for scripts" },
  { name: "quiet", short: "q", help: "print only the ids of what a list or create answers, one a line" },
  { name: "help", short: "h", help: "show help" },
];

export const orgOption: OptionDef = {
  name: "org",
  value: "<org>",
  help: "the organisation: its id (org_...) or its name; agents and machines named are looked up in it (default $WARREN_ORG)",
};
export const machineOption: OptionDef = {
  name: "machine",
  value: "<machine>",
  help: "the machine: its id (mch_...) or its name",
};
export const nameOption: OptionDef = { name: "name", value: "<name>", help: "a new name" };
export const maxWorkspaceOption: OptionDef = {
  name: "max-workspace-mib",
  value: "<mib>",
  help: "the disk cap, in MiB",
};
export const commandOption: OptionDef = {
  name: "command",
  value: "<text>",
  help: "shell text to run instead of the argv after --",
};
export const timeoutMsOption: OptionDef = {
  name: "timeout-ms",
  value: "<ms>",
  help: "give up after this many milliseconds",
};
export const limitOptions: readonly OptionDef[] = [
  {
    name: "limit-memory-mib",
    value: "<mib>",
    help: "the command's own memory limit, in MiB (at least 16; never above its machine's)",
  },
  { name: "limit-pids", value: "<n>", help: "the command's own limit on processes (1-4096)" },
];

/** What to run: argv after `--`, or `--command` shell text. */
export type Target = { argv: string[] } | { command: string };

/** The argv after `--` or the `--command` text; exactly one of them. */
export function readTarget(i: Input): Target {
  const command = i.str("command");
  if (command !== undefined && i.rest.length > 0)
    throw i.error("give the command after -- or as --command, not both");
  if (command !== undefined) {
    if (command === "") throw i.error("--command must not be empty");
    return { command };
  }
  if (i.rest.length === 0)
    throw i.error('give the command after --, e.g. -- ls -la, or as --command "ls -la"');
  return { argv: [...i.rest] };
}

/** --limit-memory-mib and --limit-pids, when given. */
export function readLimits(i: Input): CommandLimits | undefined {
  const memory = i.whole("limit-memory-mib");
  const pids = i.whole("limit-pids");
  if (memory === undefined && pids === undefined) return undefined;
  return { ...(memory !== undefined ? { memory_mib: memory } : {}), ...(pids !== undefined ? { pids } : {}) };
}

/** `NAME=value` pairs; the value may hold `=`. */
export function parseEnvPairs(
  pairs: readonly string[] | undefined,
  topic?: string,
): Record<string, string> | undefined {
  if (!pairs || pairs.length === 0) return undefined;
  const env: Record<string, string> = {};
  for (const pair of pairs) {
    const eq = pair.indexOf("=");
    const name = eq === -1 ? "" : pair.slice(0, eq);
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name))
      throw new UsageError(`--env takes NAME=value, not "${pair}"`, topic);
    env[name] = pair.slice(eq + 1);
  }
  return env;
}

/** One `Name: value` header. */
export function parseHeader(text: string): [string, string] {
  const colon = text.indexOf(":");
  const name = colon === -1 ? "" : text.slice(0, colon).trim();
  if (!/^[A-Za-z0-9!#$%&'*+.^_`|~-]+$/.test(name))
    throw new UsageError(`a header is "Name: value", not "${text}"`);
  return [name.toLowerCase(), text.slice(colon + 1).trim()];
}

/** Headers from `WARREN_HEADERS` (one a line), then `--header` flags, later ones winning. */
export function parseHeaders(
  envValue: string | undefined,
  flags: readonly string[] | undefined,
): Record<string, string> {
  const headers: Record<string, string> = {};
  const lines = (envValue ?? "").split(/\r?\n/).filter((l) => l.trim() !== "");
  for (const line of [...lines, ...(flags ?? [])]) {
    const [name, value] = parseHeader(line);
    headers[name] = value;
  }
  return headers;
}

/** The server URL: `--url`, else `$WARREN_URL`, else the default; http or https only. */
export function parseUrl(flag: string | undefined, envValue: string | undefined): string {
  const text = flag ?? envValue ?? DEFAULT_URL;
  if (!URL.canParse(text) || !/^https?:$/.test(new URL(text).protocol)) {
    throw new UsageError(`the server URL must be like http://127.0.0.1:8080, not "${text}"`);
  }
  return text;
}
