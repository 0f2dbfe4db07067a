// The command line, read with commander into one command and its checked input; no I/O here.
//
// Options may stand anywhere before `--` (`warren --org o machines list` as well as
// `warren machines list --org o`), so every option is declared once on the top command and
// each command says which of them apply to it. commander's own help and messages are turned
// off: the help texts are help.ts's, and its errors become the messages below.
import { Command as Program, CommanderError, Option } from "commander";
import { commands, groups, keysOf, optionTable } from "./catalog.js";
import { Input, UsageError, type Command, type OptionDef, type OptionValue } from "./command.js";
import type { Globals } from "./context.js";
import { usageLine } from "./help.js";
import { storedToken } from "./credentials.js";
import { GLOBAL_OPTIONS, parseHeaders, parseUrl } from "./options.js";

export type Parsed =
  | { kind: "help"; topic: string | undefined }
  | { kind: "command"; key: string; command: Command; params: unknown };

export interface Cli extends Globals {
  command: Parsed;
}

/** Ends the parse early: help was asked for. */
class Answered extends Error {
  constructor(readonly parsed: Parsed) {
    super("answered");
  }
}

const GLOBAL_NAMES = new Set(GLOBAL_OPTIONS.map((d) => d.name));

/** Reads argv (without `node` and the script) and the environment into a command. */
export function parseCli(argv: readonly string[], env: Record<string, string | undefined> = {}): Cli {
  return new CliParser(argv, env).parse();
}

class CliParser {
  private readonly options = optionTable();
  private readonly head: string[];
  private readonly rest: string[];
  private readonly program = new Program("warren");
  private globals: Globals | undefined;
  private parsed: Parsed | undefined;

  constructor(
    private readonly argv: readonly string[],
    private readonly env: Record<string, string | undefined>,
  ) {
    [this.head, this.rest] = this.split();
  }

  parse(): Cli {
    this.build();
    try {
      this.program.parse(this.head, { from: "user" });
    } catch (err) {
      if (!(err instanceof Answered)) throw err;
      this.parsed = err.parsed;
    }
    // Every path through the program ends in an action or a thrown mistake.
    if (!this.parsed) throw new Error(`the command line ${JSON.stringify(this.argv)} led to no command`);
    return { ...this.readGlobals(), command: this.parsed };
  }

  /** argv before and after the first `--` that is not an option's value. */
  private split(): [string[], string[]] {
    const argv = this.argv;
    for (let i = 0; i < argv.length; i++) {
      const arg = argv[i] ?? "";
      if (arg === "--") return [argv.slice(0, i), argv.slice(i + 1)];
      if (arg.startsWith("--") && !arg.includes("=") && this.options.get(arg.slice(2))?.value !== undefined) {
        const next = argv[i + 1];
        if (next !== undefined && next.length > 1 && next.startsWith("-")) {
          throw new UsageError(
            `Option '${arg}' argument is ambiguous.\nDid you forget to specify the option argument for '${arg}'?\n` +
              `To specify an option argument starting with a dash use '${arg}=-XYZ'.`,
            this.topicOf(),
          );
        }
        i++;
      }
    }
    return [[...argv], []];
  }

  private build(): void {
    const program = this.program;
    this.quiet(program);
    for (const def of this.options.values()) program.addOption(toOption(def));
    program.exitOverride((err) => {
      throw this.translate(err, undefined);
    });
    program.argument("[words...]").action((words: string[]) => this.topLevel(words));
    program.hook("preSubcommand", (_program, sub) => {
      this.rejectUnknownOptions();
      this.readGlobals();
      if (sub.name() !== "help" && commands[sub.name()]) this.beforeCommand(sub.name());
    });

    program
      .command("help")
      .argument("[topic...]")
      .action((words: string[]) => {
        const topic = words.join(" ");
        this.parsed = { kind: "help", topic: topic === "" ? undefined : topic };
      });

    for (const group of groups) {
      if ("command" in group) {
        this.leaf(program, group.name, group.name, group.command);
        continue;
      }
      const node = this.quiet(program.command(group.name));
      node.exitOverride((err) => {
        throw this.translate(err, group.name);
      });
      node.argument("[words...]").action((words: string[]) => {
        const [second] = words;
        if (second === undefined && this.flag("help")) this.answer({ kind: "help", topic: group.name });
        throw new UsageError(
          second === undefined
            ? `${group.name} needs a command`
            : `unknown command "${group.name} ${second}"`,
          group.name,
        );
      });
      node.hook("preSubcommand", (_node, sub) => this.beforeCommand(`${group.name} ${sub.name()}`));
      for (const [name, command] of Object.entries(group.commands))
        this.leaf(node, name, `${group.name} ${name}`, command);
    }
  }

  /** A command that does something: its positional arguments, then its own checks and `parse`. */
  private leaf(parent: Program, name: string, key: string, command: Command): void {
    const node = this.quiet(parent.command(name));
    for (const a of command.args) node.argument(a.endsWith("?") ? `[${a.slice(0, -1)}]` : `<${a}>`);
    node.exitOverride((err) => {
      throw this.translate(err, key, node);
    });
    node.action(() => {
      if (this.rest.length > 0 && !command.rest)
        throw new UsageError(`"warren ${key}" takes nothing after --`, key);
      const args: Record<string, string | undefined> = {};
      command.args.forEach((a, n) => (args[a.endsWith("?") ? a.slice(0, -1) : a] = node.args[n]));
      const input = new Input(key, args, this.given(), this.rest);
      this.parsed = { kind: "command", key, command, params: command.parse(input) };
    });
  }

  /** commander prints nothing and exits nowhere: every mistake is thrown, and help is ours. */
  private quiet(node: Program): Program {
    return node
      .helpOption(false)
      .helpCommand(false)
      .showSuggestionAfterError(false)
      .configureOutput({ writeOut: () => {}, writeErr: () => {}, outputError: () => {} });
  }

  /** `warren` alone, `warren --help`, or a first word that is no command. */
  private topLevel(words: readonly string[]): void {
    this.readGlobals();
    const [first] = words;
    if (first === undefined) {
      if (this.flag("help")) this.answer({ kind: "help", topic: undefined });
      throw new UsageError("say what to do");
    }
    throw new UsageError(`unknown command "${first}"`);
  }

  /** Before a command reads its arguments: --help wins, then options that are not its own are refused. */
  private beforeCommand(key: string): void {
    const command = commands[key];
    if (!command) return;
    if (this.flag("help")) this.answer({ kind: "help", topic: key });
    for (const name of this.given().keys()) {
      if (!GLOBAL_NAMES.has(name) && !command.options.some((d) => d.name === name))
        throw new UsageError(`--${name} does not apply to "warren ${key}"`, key);
    }
  }

  private answer(parsed: Parsed): never {
    throw new Answered(parsed);
  }

  /** The options given on the command line, in the order they first appear. */
  private given(): Map<string, OptionValue> {
    const position = (def: OptionDef) =>
      this.head.findIndex(
        (a) =>
          a === `--${def.name}` ||
          a.startsWith(`--${def.name}=`) ||
          (def.short !== undefined && /^-[^-]/.test(a) && a.includes(def.short)),
      );
    const defs = [...this.options.values()].filter(
      (d) => this.program.getOptionValueSource(attribute(d)) === "cli",
    );
    defs.sort((a, b) => position(a) - position(b));
    return new Map(defs.map((d) => [d.name, this.program.getOptionValue(attribute(d)) as OptionValue]));
  }

  private flag(name: string): boolean {
    return this.given().get(name) === true;
  }

  /** The global options, read once; a bad URL or header is a usage error. */
  private readGlobals(): Globals {
    if (!this.globals) {
      const opts = this.given();
      const url = opts.get("url");
      const headers = opts.get("header");
      const server = parseUrl(typeof url === "string" ? url : undefined, this.env.WARREN_URL);
      const sent = parseHeaders(this.env.WARREN_HEADERS, Array.isArray(headers) ? headers : undefined);
      // the personal token `warren login` stored for this server, unless an Authorization is given
      const token = sent.authorization === undefined ? storedToken(this.env, server) : undefined;
      this.globals = {
        url: server,
        headers: token ? { ...sent, authorization: `Bearer ${token}` } : sent,
        json: opts.get("json") === true,
        ...(opts.get("quiet") === true ? { quiet: true } : {}),
      };
    }
    return this.globals;
  }

  /** What commander left over that starts with `-` is an option no command knows. */
  private rejectUnknownOptions(): void {
    const unknown = this.program.args.find((a) => a.length > 1 && a.startsWith("-"));
    if (unknown !== undefined) throw this.unknownOption(unknown);
  }

  private unknownOption(arg: string): UsageError {
    const topic = this.topicOf();
    let message: string;
    if (arg.startsWith("--")) {
      const eq = arg.indexOf("=");
      const name = arg.slice(2, eq === -1 ? undefined : eq);
      const def = this.options.get(name);
      if (def && def.value === undefined && eq !== -1) {
        const flags = def.short !== undefined ? `-${def.short}, --${name}` : `--${name}`;
        return new UsageError(`Option '${flags}' does not take an argument`, topic);
      }
      message = `Unknown option '--${name}'`;
    } else {
      // A group of one-letter options (`-la`): the first letter that is no option's.
      const shorts = new Set([...this.options.values()].map((d) => d.short));
      const letter = [...arg.slice(1)].find((c) => !shorts.has(c)) ?? arg.slice(1, 2);
      message = `Unknown option '-${letter}'`;
    }
    if (topic !== undefined && commands[topic]?.rest)
      message += `; put the command after --, e.g. warren ${topic} <agent> -- ls -la`;
    return new UsageError(message, topic);
  }

  /** One of commander's errors, in warren's words. */
  private translate(err: CommanderError, topic: string | undefined, node?: Program): Error {
    const text = err.message.replace(/^error: /, "");
    switch (err.code) {
      case "commander.unknownOption": {
        const arg =
          this.program.args.find((a) => a.length > 1 && a.startsWith("-")) ?? /'(.*)'/.exec(text)?.[1];
        return this.unknownOption(arg ?? text);
      }
      case "commander.optionMissingArgument":
        return new UsageError(text.charAt(0).toUpperCase() + text.slice(1), this.topicOf());
      case "commander.missingArgument":
        return new UsageError(`<${/'(.*)'/.exec(text)?.[1] ?? "argument"}> is missing`, topic);
      case "commander.excessArguments": {
        const extra = node ? node.args.slice(node.registeredArguments.length) : [];
        if (topic !== undefined && commands[topic]?.rest)
          return new UsageError(
            `put the command after --, e.g. ${usageLine(topic).replace("[-- argv...]", "-- " + extra.join(" "))}`,
            topic,
          );
        return new UsageError(`unexpected argument "${extra[0] ?? ""}"`, topic);
      }
      default:
        return new UsageError(text, topic);
    }
  }

  /** The group or command a (possibly malformed) argv was about, for the help after an error. */
  private topicOf(): string | undefined {
    const words = this.argv.filter((a) => !a.startsWith("-"));
    const [first, second] = words;
    if (first === undefined || keysOf(first).length === 0) return undefined;
    if (commands[first]) return first;
    return second !== undefined && commands[`${first} ${second}`] ? `${first} ${second}` : first;
  }
}

/** The commander option of a definition; a value-taking one reads `<value>` as Node's own parser did. */
function toOption(def: OptionDef): Option {
  const flags = `${def.short !== undefined ? `-${def.short}, ` : ""}--${def.name}${def.value !== undefined ? " <value>" : ""}`;
  const option = new Option(flags, def.help);
  if (def.repeatable)
    option.argParser((value: string, previous: string[] | undefined) => [...(previous ?? []), value]);
  return option;
}

function attribute(def: OptionDef): string {
  return new Option(`--${def.name}`).attributeName();
}
