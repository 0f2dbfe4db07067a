// The command line, parsed into one typed command: no I/O here, so every rule has a unit test.
import { parseArgs } from "node:util";
import type {
  AgentCreateRequest,
  CommandLimits,
  AgentUpdateRequest,
  GuildCreateRequest,
  MachineCreateRequest,
  MachineUpdateRequest,
  Role,
} from "../sdk/index.js";

export const DEFAULT_URL = "http://127.0.0.1:8080";

/** A mistake in how warren was called: exit 2 with the help of `topic`. */
export class UsageError extends Error {
  constructor(
    message: string,
    readonly topic?: string,
  ) {
    super(message);
    this.name = "UsageError";
  }
}

const optionDefs = {
  url: { type: "string" },
  header: { type: "string", multiple: true },
  json: { type: "boolean" },
  help: { type: "boolean", short: "h" },
  org: { type: "string" },
  machine: { type: "string" },
  name: { type: "string" },
  email: { type: "string" },
  role: { type: "string" },
  "max-workspace-mib": { type: "string" },
  "memory-mib": { type: "string" },
  cpus: { type: "string" },
  trust: { type: "string" },
  "policy-file": { type: "string" },
  command: { type: "string" },
  cwd: { type: "string" },
  env: { type: "string", multiple: true },
  "stdin-file": { type: "string" },
  "timeout-ms": { type: "string" },
  "timeout-s": { type: "string" },
  input: { type: "string" },
  "input-file": { type: "string" },
  wait: { type: "boolean" },
  out: { type: "string" },
  "limit-memory-mib": { type: "string" },
  "limit-pids": { type: "string" },
} as const;

export type OptionName = keyof typeof optionDefs;
const GLOBAL_OPTIONS: readonly OptionName[] = ["url", "header", "json", "help"];

/** The placeholder of each option's value in help texts; flags have none. */
export const optionValue: Partial<Record<OptionName, string>> = {
  url: "<url>",
  header: '<"Name: value">',
  org: "<org>",
  machine: "<machine>",
  name: "<name>",
  email: "<email>",
  role: "<role>",
  "max-workspace-mib": "<mib>",
  "memory-mib": "<mib>",
  cpus: "<n>",
  trust: "<trust>",
  "policy-file": "<file>",
  command: "<text>",
  cwd: "<dir>",
  env: "<NAME=value>",
  "stdin-file": "<file>",
  "timeout-ms": "<ms>",
  "timeout-s": "<s>",
  input: "<text>",
  "input-file": "<file>",
  out: "<file>",
  "limit-memory-mib": "<mib>",
  "limit-pids": "<n>",
};

export const optionHelp: Record<OptionName, string> = {
  url: "the server (default $WARREN_URL, else http://127.0.0.1:8080)",
  header: '"Name: value" sent with every request; repeatable (also $WARREN_HEADERS, one a line)',
  json: "print the server's answer as JSON, for scripts",
  help: "show help",
  org: "the organisation id (org_...)",
  machine: "the machine id (mch_...)",
  name: "a new name",
  email: "the member's email",
  role: "owner, admin, editor, viewer or auditor",
  "max-workspace-mib": "the disk cap, in MiB",
  "memory-mib": "the box's memory, in MiB",
  cpus: "the box's CPUs (0.1-64)",
  trust: "isolated (default) or shared",
  "policy-file": "a JSON file holding the sandbox policy",
  command: "shell text to run instead of the argv after --",
  cwd: "the working folder (default: the agent's home)",
  env: "NAME=value for the command; repeatable",
  "stdin-file": "a file fed to the command's stdin (- for this terminal's stdin)",
  "timeout-ms": "give up after this many milliseconds",
  "timeout-s": "the run's time limit, in seconds",
  input: "text that becomes /agent/input in the run",
  "input-file": "a file that becomes /agent/input in the run (- for stdin)",
  wait: "wait for the run to end, print its output and exit with its code",
  out: "write the file here instead of to stdout",
  "limit-memory-mib": "the command's own memory limit, in MiB (at least 16; never above its machine's)",
  "limit-pids": "the command's own limit on processes (1-4096)",
};

/** What to run: argv after `--`, or `--command` shell text. */
export type Target = { argv: string[] } | { command: string };

export type Command =
  | { kind: "help"; topic: string | undefined }
  | { kind: "serve" }
  | { kind: "orgs.create"; name: string }
  | { kind: "orgs.list" }
  | { kind: "orgs.get"; id: string }
  | { kind: "orgs.delete"; id: string }
  | { kind: "orgs.members"; id: string }
  | { kind: "orgs.set-member"; id: string; email: string; role: Role }
  | { kind: "orgs.remove-member"; id: string; userId: string }
  | { kind: "machines.create"; body: MachineCreateRequest }
  | { kind: "machines.list"; orgId: string | undefined }
  | { kind: "machines.get"; id: string }
  | { kind: "machines.update"; id: string; body: MachineUpdateRequest }
  | { kind: "machines.stop"; id: string }
  | { kind: "machines.delete"; id: string }
  | { kind: "agents.create"; body: AgentCreateRequest }
  | { kind: "agents.list"; orgId: string | undefined; machineId: string | undefined }
  | { kind: "agents.get"; id: string }
  | { kind: "agents.update"; id: string; body: AgentUpdateRequest; policyFile: string | undefined }
  | { kind: "agents.delete"; id: string }
  | { kind: "guilds.create"; body: GuildCreateRequest }
  | { kind: "guilds.list"; orgId: string | undefined }
  | { kind: "guilds.get"; id: string }
  | { kind: "guilds.delete"; id: string }
  | { kind: "guilds.add-agent"; id: string; agentId: string }
  | { kind: "guilds.remove-agent"; id: string; agentId: string }
  | {
      kind: "exec";
      agentId: string;
      target: Target;
      cwd: string | undefined;
      env: Record<string, string> | undefined;
      stdinFile: string | undefined;
      timeoutMs: number | undefined;
      limits: CommandLimits | undefined;
    }
  | {
      kind: "runs.start";
      agentId: string;
      target: Target;
      input: { text: string } | { file: string } | undefined;
      timeoutS: number | undefined;
      limits: CommandLimits | undefined;
      wait: boolean;
    }
  | { kind: "runs.get"; id: string }
  | { kind: "runs.events"; id: string }
  | { kind: "runs.cancel"; id: string }
  | { kind: "runs.list"; agentId: string }
  | { kind: "runs.wait"; id: string; timeoutMs: number | undefined }
  | { kind: "files.get"; agentId: string; path: string; out: string | undefined }
  | { kind: "files.put"; agentId: string; path: string; source: string | undefined }
  | { kind: "usage"; agentId: string };

/** --limit-memory-mib and --limit-pids, when given. */
function limitsOpt(i: Input, t: string): CommandLimits | undefined {
  const memory = parseWhole("limit-memory-mib", str(i, "limit-memory-mib"), t);
  const pids = parseWhole("limit-pids", str(i, "limit-pids"), t);
  if (memory === undefined && pids === undefined) return undefined;
  return { ...(memory !== undefined ? { memory_mib: memory } : {}), ...(pids !== undefined ? { pids } : {}) };
}

export interface Cli {
  url: string;
  headers: Record<string, string>;
  json: boolean;
  command: Command;
}

interface Input {
  args: Record<string, string | undefined>;
  opts: Record<string, string | boolean | string[] | undefined>;
  rest: string[];
}

export interface CommandSpec {
  /** Positional names; a trailing `?` marks an optional one. */
  args: readonly string[];
  options: readonly OptionName[];
  /** Options the command cannot do without (shown in its usage line). */
  required?: readonly OptionName[];
  /** Takes argv after `--`. */
  rest?: true;
  summary: string;
  build(input: Input): Command;
}

const str = (i: Input, name: OptionName): string | undefined => {
  const v = i.opts[name];
  return typeof v === "string" ? v : undefined;
};
const need = (i: Input, name: OptionName, topic: string): string => {
  const v = str(i, name);
  if (v === undefined || v === "") throw new UsageError(`--${name} is required`, topic);
  return v;
};
const arg = (i: Input, name: string): string => i.args[name] ?? "";

export function parseWhole(name: string, value: string | undefined, topic?: string): number | undefined {
  if (value === undefined) return undefined;
  if (!/^\d+$/.test(value.trim()) || !Number.isSafeInteger(Number(value))) {
    throw new UsageError(`--${name} must be a whole number, not "${value}"`, topic);
  }
  return Number(value);
}

export function parseDecimal(name: string, value: string | undefined, topic?: string): number | undefined {
  if (value === undefined) return undefined;
  if (!/^\d+(\.\d+)?$/.test(value.trim()))
    throw new UsageError(`--${name} must be a number, not "${value}"`, topic);
  return Number(value);
}

const ROLES: readonly Role[] = ["owner", "admin", "editor", "viewer", "auditor"];

function parseRole(value: string, topic: string): Role {
  const role = ROLES.find((r) => r === value);
  if (!role) throw new UsageError(`--role must be one of ${ROLES.join(", ")}, not "${value}"`, topic);
  return role;
}

function parseTrust(value: string | undefined, topic: string): "isolated" | "shared" | undefined {
  if (value === undefined) return undefined;
  if (value !== "isolated" && value !== "shared")
    throw new UsageError(`--trust must be isolated or shared, not "${value}"`, topic);
  return value;
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

function target(i: Input, topic: string): Target {
  const command = str(i, "command");
  if (command !== undefined && i.rest.length > 0)
    throw new UsageError("give the command after -- or as --command, not both", topic);
  if (command !== undefined) {
    if (command === "") throw new UsageError("--command must not be empty", topic);
    return { command };
  }
  if (i.rest.length === 0)
    throw new UsageError('give the command after --, e.g. -- ls -la, or as --command "ls -la"', topic);
  return { argv: i.rest };
}

export const commands: Record<string, CommandSpec> = {
  serve: {
    args: [],
    options: [],
    summary: "run the control plane in the foreground (configured by the environment)",
    build: () => ({ kind: "serve" }),
  },

  "orgs create": {
    args: ["name"],
    options: [],
    summary: "create an organisation; you become its owner",
    build: (i) => ({ kind: "orgs.create", name: arg(i, "name") }),
  },
  "orgs list": {
    args: [],
    options: [],
    summary: "list your organisations",
    build: () => ({ kind: "orgs.list" }),
  },
  "orgs get": {
    args: ["org"],
    options: [],
    summary: "show an organisation",
    build: (i) => ({ kind: "orgs.get", id: arg(i, "org") }),
  },
  "orgs delete": {
    args: ["org"],
    options: [],
    summary: "delete an empty organisation",
    build: (i) => ({ kind: "orgs.delete", id: arg(i, "org") }),
  },
  "orgs members": {
    args: ["org"],
    options: [],
    summary: "list an organisation's members",
    build: (i) => ({ kind: "orgs.members", id: arg(i, "org") }),
  },
  "orgs set-member": {
    args: ["org"],
    options: ["email", "role"],
    required: ["email", "role"],
    summary: "add a member or change a member's role",
    build: (i) => ({
      kind: "orgs.set-member",
      id: arg(i, "org"),
      email: need(i, "email", "orgs set-member"),
      role: parseRole(need(i, "role", "orgs set-member"), "orgs set-member"),
    }),
  },
  "orgs remove-member": {
    args: ["org", "user"],
    options: [],
    summary: "remove a member (by user id, usr_...)",
    build: (i) => ({ kind: "orgs.remove-member", id: arg(i, "org"), userId: arg(i, "user") }),
  },

  "machines create": {
    args: ["name"],
    options: ["org", "max-workspace-mib", "memory-mib", "cpus", "trust"],
    required: ["org"],
    summary: "create a machine: a place where agents live, with one box",
    build: (i) => {
      const t = "machines create";
      const body: MachineCreateRequest = { org_id: need(i, "org", t), name: arg(i, "name") };
      const max = parseWhole("max-workspace-mib", str(i, "max-workspace-mib"), t);
      const memory = parseWhole("memory-mib", str(i, "memory-mib"), t);
      const cpus = parseDecimal("cpus", str(i, "cpus"), t);
      const trust = parseTrust(str(i, "trust"), t);
      if (max !== undefined) body.max_workspace_mib = max;
      if (memory !== undefined) body.memory_mib = memory;
      if (cpus !== undefined) body.cpus = cpus;
      if (trust !== undefined) body.trust = trust;
      return { kind: "machines.create", body };
    },
  },
  "machines list": {
    args: [],
    options: ["org"],
    summary: "list machines (of one organisation with --org)",
    build: (i) => ({ kind: "machines.list", orgId: str(i, "org") }),
  },
  "machines get": {
    args: ["machine"],
    options: [],
    summary: "show a machine and its box's state",
    build: (i) => ({ kind: "machines.get", id: arg(i, "machine") }),
  },
  "machines update": {
    args: ["machine"],
    options: ["name", "max-workspace-mib", "memory-mib", "cpus"],
    summary: "rename or resize a machine (limits reach the next box start)",
    build: (i) => {
      const t = "machines update";
      const body: MachineUpdateRequest = {};
      const name = str(i, "name");
      const max = parseWhole("max-workspace-mib", str(i, "max-workspace-mib"), t);
      const memory = parseWhole("memory-mib", str(i, "memory-mib"), t);
      const cpus = parseDecimal("cpus", str(i, "cpus"), t);
      if (name !== undefined) body.name = name;
      if (max !== undefined) body.max_workspace_mib = max;
      if (memory !== undefined) body.memory_mib = memory;
      if (cpus !== undefined) body.cpus = cpus;
      if (Object.keys(body).length === 0)
        throw new UsageError("say what to change: --name, --max-workspace-mib, --memory-mib or --cpus", t);
      return { kind: "machines.update", id: arg(i, "machine"), body };
    },
  },
  "machines stop": {
    args: ["machine"],
    options: [],
    summary: "stop a machine's box; its files stay",
    build: (i) => ({ kind: "machines.stop", id: arg(i, "machine") }),
  },
  "machines delete": {
    args: ["machine"],
    options: [],
    summary: "delete a machine that has no agents",
    build: (i) => ({ kind: "machines.delete", id: arg(i, "machine") }),
  },

  "agents create": {
    args: ["name"],
    options: ["org", "machine", "max-workspace-mib"],
    required: ["org", "machine"],
    summary: "create an agent on a machine",
    build: (i) => {
      const t = "agents create";
      const body: AgentCreateRequest = {
        org_id: need(i, "org", t),
        machine_id: need(i, "machine", t),
        name: arg(i, "name"),
      };
      const max = parseWhole("max-workspace-mib", str(i, "max-workspace-mib"), t);
      if (max !== undefined) body.max_workspace_mib = max;
      return { kind: "agents.create", body };
    },
  },
  "agents list": {
    args: [],
    options: ["org", "machine"],
    summary: "list agents (of one organisation or machine)",
    build: (i) => ({ kind: "agents.list", orgId: str(i, "org"), machineId: str(i, "machine") }),
  },
  "agents get": {
    args: ["agent"],
    options: [],
    summary: "show an agent",
    build: (i) => ({ kind: "agents.get", id: arg(i, "agent") }),
  },
  "agents update": {
    args: ["agent"],
    options: ["name", "max-workspace-mib", "policy-file"],
    summary: "rename an agent, change its disk cap or its sandbox policy",
    build: (i) => {
      const t = "agents update";
      const body: AgentUpdateRequest = {};
      const name = str(i, "name");
      const max = parseWhole("max-workspace-mib", str(i, "max-workspace-mib"), t);
      const policyFile = str(i, "policy-file");
      if (name !== undefined) body.name = name;
      if (max !== undefined) body.max_workspace_mib = max;
      if (Object.keys(body).length === 0 && policyFile === undefined) {
        throw new UsageError("say what to change: --name, --max-workspace-mib or --policy-file", t);
      }
      return { kind: "agents.update", id: arg(i, "agent"), body, policyFile };
    },
  },
  "agents delete": {
    args: ["agent"],
    options: [],
    summary: "delete an agent and its home",
    build: (i) => ({ kind: "agents.delete", id: arg(i, "agent") }),
  },

  "guilds create": {
    args: ["name"],
    options: ["org"],
    required: ["org"],
    summary: "create a guild: a named group of agents",
    build: (i) => ({
      kind: "guilds.create",
      body: { org_id: need(i, "org", "guilds create"), name: arg(i, "name") },
    }),
  },
  "guilds list": {
    args: [],
    options: ["org"],
    summary: "list guilds (of one organisation with --org)",
    build: (i) => ({ kind: "guilds.list", orgId: str(i, "org") }),
  },
  "guilds get": {
    args: ["guild"],
    options: [],
    summary: "show a guild and its agents",
    build: (i) => ({ kind: "guilds.get", id: arg(i, "guild") }),
  },
  "guilds delete": {
    args: ["guild"],
    options: [],
    summary: "delete a guild (its agents stay)",
    build: (i) => ({ kind: "guilds.delete", id: arg(i, "guild") }),
  },
  "guilds add-agent": {
    args: ["guild", "agent"],
    options: [],
    summary: "add an agent to a guild",
    build: (i) => ({ kind: "guilds.add-agent", id: arg(i, "guild"), agentId: arg(i, "agent") }),
  },
  "guilds remove-agent": {
    args: ["guild", "agent"],
    options: [],
    summary: "take an agent out of a guild",
    build: (i) => ({ kind: "guilds.remove-agent", id: arg(i, "guild"), agentId: arg(i, "agent") }),
  },

  exec: {
    args: ["agent"],
    options: ["command", "cwd", "env", "stdin-file", "timeout-ms", "limit-memory-mib", "limit-pids"],
    rest: true,
    summary: "run a command in the agent's box, streaming its output; exits with its code",
    build: (i) => ({
      kind: "exec",
      agentId: arg(i, "agent"),
      target: target(i, "exec"),
      cwd: str(i, "cwd"),
      env: parseEnvPairs(i.opts.env as string[] | undefined, "exec"),
      stdinFile: str(i, "stdin-file"),
      timeoutMs: parseWhole("timeout-ms", str(i, "timeout-ms"), "exec"),
      limits: limitsOpt(i, "exec"),
    }),
  },

  "runs start": {
    args: ["agent"],
    options: ["command", "input", "input-file", "timeout-s", "limit-memory-mib", "limit-pids", "wait"],
    rest: true,
    summary: "start a recorded run of a command",
    build: (i) => {
      const t = "runs start";
      const text = str(i, "input");
      const file = str(i, "input-file");
      if (text !== undefined && file !== undefined)
        throw new UsageError("give --input or --input-file, not both", t);
      return {
        kind: "runs.start",
        agentId: arg(i, "agent"),
        target: target(i, t),
        input: text !== undefined ? { text } : file !== undefined ? { file } : undefined,
        timeoutS: parseWhole("timeout-s", str(i, "timeout-s"), t),
        limits: limitsOpt(i, t),
        wait: i.opts.wait === true,
      };
    },
  },
  "runs get": {
    args: ["run"],
    options: [],
    summary: "show a run and its output",
    build: (i) => ({ kind: "runs.get", id: arg(i, "run") }),
  },
  "runs events": {
    args: ["run"],
    options: [],
    summary: "list a run's events",
    build: (i) => ({ kind: "runs.events", id: arg(i, "run") }),
  },
  "runs cancel": {
    args: ["run"],
    options: [],
    summary: "stop a run",
    build: (i) => ({ kind: "runs.cancel", id: arg(i, "run") }),
  },
  "runs list": {
    args: ["agent"],
    options: [],
    summary: "list an agent's runs",
    build: (i) => ({ kind: "runs.list", agentId: arg(i, "agent") }),
  },
  "runs wait": {
    args: ["run"],
    options: ["timeout-ms"],
    summary: "wait until a run ends, then show it",
    build: (i) => ({
      kind: "runs.wait",
      id: arg(i, "run"),
      timeoutMs: parseWhole("timeout-ms", str(i, "timeout-ms"), "runs wait"),
    }),
  },

  "files get": {
    args: ["agent", "path"],
    options: ["out"],
    summary: "print a file of the agent's home (or save it with --out)",
    build: (i) => ({ kind: "files.get", agentId: arg(i, "agent"), path: arg(i, "path"), out: str(i, "out") }),
  },
  "files put": {
    args: ["agent", "path", "local-file?"],
    options: [],
    summary: "write a file of the agent's home from a local file (or stdin)",
    build: (i) => ({
      kind: "files.put",
      agentId: arg(i, "agent"),
      path: arg(i, "path"),
      source: i.args["local-file"],
    }),
  },

  usage: {
    args: ["agent"],
    options: [],
    summary: "show the disk an agent's home and machine use",
    build: (i) => ({ kind: "usage", agentId: arg(i, "agent") }),
  },
};

/** The first words of every command: `orgs`, `exec`, ... */
export const groups: readonly string[] = [...new Set(Object.keys(commands).map((k) => k.split(" ")[0] ?? k))];

/** Commands whose name is a single word (`serve`, `exec`, `usage`). */
const isSingle = (group: string): boolean => commands[group] !== undefined;

/** The usage line of one command, e.g. `warren machines create <name> [options]`. */
export function usageLine(key: string): string {
  const spec = commands[key];
  if (!spec) return `warren ${key}`;
  const args = spec.args.map((a) => (a.endsWith("?") ? `[${a.slice(0, -1)}]` : `<${a}>`));
  const required = spec.required ?? [];
  const named = required.map((o) => `--${o} ${optionValue[o] ?? ""}`.trimEnd());
  const opts = spec.options.some((o) => !required.includes(o)) ? ["[options]"] : [];
  const rest = spec.rest ? ["[-- argv...]"] : [];
  return ["warren", key, ...args, ...named, ...opts, ...rest].join(" ");
}

/** Reads argv (without `node` and the script) and the environment into a command. */
export function parseCli(argv: readonly string[], env: Record<string, string | undefined> = {}): Cli {
  let parsed;
  try {
    parsed = parseArgs({
      args: [...argv],
      options: optionDefs,
      allowPositionals: true,
      strict: true,
      tokens: true,
    });
  } catch (err) {
    const topic = topicOf(argv);
    let message = err instanceof Error ? (err.message.split(". To specify")[0] ?? err.message) : String(err);
    if (
      topic !== undefined &&
      commands[topic]?.rest &&
      (err as { code?: string }).code === "ERR_PARSE_ARGS_UNKNOWN_OPTION"
    ) {
      message += `; put the command after --, e.g. warren ${topic} <agent> -- ls -la`;
    }
    throw new UsageError(message, topic);
  }
  const { values, tokens } = parsed;
  const terminator = tokens.find((t) => t.kind === "option-terminator")?.index ?? Infinity;
  const words: string[] = [];
  const rest: string[] = [];
  for (const t of tokens) if (t.kind === "positional") (t.index > terminator ? rest : words).push(t.value);

  const urlText = values.url ?? env.WARREN_URL ?? DEFAULT_URL;
  if (!URL.canParse(urlText) || !/^https?:$/.test(new URL(urlText).protocol)) {
    throw new UsageError(`the server URL must be like http://127.0.0.1:8080, not "${urlText}"`);
  }
  const base = {
    url: urlText,
    headers: parseHeaders(env.WARREN_HEADERS, values.header),
    json: values.json === true,
  };

  const [first, second, ...others] = words;
  let more = others;
  if (first === "help") {
    const topic = [second, ...more].join(" ");
    return { ...base, command: { kind: "help", topic: topic === "" ? undefined : topic } };
  }
  if (first === undefined) {
    if (values.help) return { ...base, command: { kind: "help", topic: undefined } };
    throw new UsageError("say what to do");
  }
  if (!groups.includes(first)) throw new UsageError(`unknown command "${first}"`);
  let key = first;
  if (!isSingle(first)) {
    if (second === undefined || commands[`${first} ${second}`] === undefined) {
      if (values.help && second === undefined) return { ...base, command: { kind: "help", topic: first } };
      throw new UsageError(
        second === undefined ? `${first} needs a command` : `unknown command "${first} ${second}"`,
        first,
      );
    }
    key = `${first} ${second}`;
  } else if (second !== undefined) {
    more = [second, ...more];
  }
  const spec = commands[key];
  if (!spec) throw new UsageError(`unknown command "${key}"`);
  if (values.help) return { ...base, command: { kind: "help", topic: key } };

  for (const name of Object.keys(values) as OptionName[]) {
    if (!GLOBAL_OPTIONS.includes(name) && !spec.options.includes(name)) {
      throw new UsageError(`--${name} does not apply to "warren ${key}"`, key);
    }
  }
  const args: Record<string, string | undefined> = {};
  const positional = [...more];
  for (const name of spec.args) {
    const optional = name.endsWith("?");
    const value = positional.shift();
    if (value === undefined && !optional) throw new UsageError(`<${name}> is missing`, key);
    args[optional ? name.slice(0, -1) : name] = value;
  }
  if (positional.length > 0) {
    throw new UsageError(
      spec.rest
        ? `put the command after --, e.g. ${usageLine(key).replace("[-- argv...]", "-- " + positional.join(" "))}`
        : `unexpected argument "${positional[0]}"`,
      key,
    );
  }
  if (rest.length > 0 && !spec.rest) throw new UsageError(`"warren ${key}" takes nothing after --`, key);
  return { ...base, command: spec.build({ args, opts: values, rest }) };
}

/** The group or command a (possibly malformed) argv was about, for the help after an error. */
function topicOf(argv: readonly string[]): string | undefined {
  const words = argv.filter((a) => !a.startsWith("-"));
  const [first, second] = words;
  if (first === undefined || !groups.includes(first)) return undefined;
  if (isSingle(first)) return first;
  return second !== undefined && commands[`${first} ${second}`] ? `${first} ${second}` : first;
}
