// What a command is: its words, options and help, how it reads its input and what it does.
// Each command group lives in its own module under commands/ and is built from these pieces.
import type { Context } from "./context.js";

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

/** One `--name` option. */
export interface OptionDef {
  readonly name: string;
  /** The placeholder of its value in help texts, e.g. `<mib>`; a flag has none. */
  readonly value?: string;
  readonly help: string;
  /** May be given more than once; its values are kept in order. */
  readonly repeatable?: true;
  /** A one-letter alias, e.g. `h` for `-h`. */
  readonly short?: string;
}

/** An option's value as parsed: text, a flag, or the texts of a repeatable option. */
export type OptionValue = string | boolean | string[];

/** What one command was given, with helpers whose mistakes are usage errors about that command. */
export class Input {
  constructor(
    /** The command's words, e.g. `machines create`. */
    readonly topic: string,
    private readonly args: Readonly<Record<string, string | undefined>>,
    private readonly opts: ReadonlyMap<string, OptionValue>,
    /** The argv after `--`. */
    readonly rest: readonly string[],
  ) {}

  /** A usage error about this command. */
  error(message: string): UsageError {
    return new UsageError(message, this.topic);
  }

  /** A positional argument (`""` for an optional one that was left out). */
  arg(name: string): string {
    return this.args[name] ?? "";
  }

  /** An optional positional argument. */
  optionalArg(name: string): string | undefined {
    return this.args[name];
  }

  str(name: string): string | undefined {
    const v = this.opts.get(name);
    return typeof v === "string" ? v : undefined;
  }

  /** An option the command cannot do without. */
  need(name: string): string {
    const v = this.str(name);
    if (v === undefined || v === "") throw this.error(`--${name} is required`);
    return v;
  }

  flag(name: string): boolean {
    return this.opts.get(name) === true;
  }

  /** The values of a repeatable option, in order. */
  list(name: string): string[] | undefined {
    const v = this.opts.get(name);
    return Array.isArray(v) ? v : undefined;
  }

  /** A whole number option, e.g. `--memory-mib 512`. */
  whole(name: string): number | undefined {
    return parseWhole(name, this.str(name), this.topic);
  }

  /** A decimal option, e.g. `--cpus 0.5`. */
  decimal(name: string): number | undefined {
    return parseDecimal(name, this.str(name), this.topic);
  }
}

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

/** How one command is declared in its module; `P` is what `parse` makes of the input for `run`. */
export interface CommandSpec<P> {
  /** One line for the help texts. */
  summary: string;
  /** Positional names; a trailing `?` marks an optional one. */
  args?: readonly string[];
  options?: readonly OptionDef[];
  /** Options the command cannot do without (shown in its usage line). */
  required?: readonly string[];
  /** Takes argv after `--`. */
  rest?: true;
  /** Checks and reads the input; no I/O here, so every rule has a unit test. */
  parse(input: Input): P;
  /** Carries the command out: the SDK call and the output. Answers the exit code. */
  run(ctx: Context, params: P): Promise<number>;
}

/** A declared command, as the parser, the help and the runner see it. */
export interface Command {
  readonly summary: string;
  readonly args: readonly string[];
  readonly options: readonly OptionDef[];
  readonly required: readonly string[];
  readonly rest: boolean;
  parse(input: Input): unknown;
  run(ctx: Context, params: unknown): Promise<number>;
}

export function defineCommand<P>(spec: CommandSpec<P>): Command {
  return {
    summary: spec.summary,
    args: spec.args ?? [],
    options: spec.options ?? [],
    required: spec.required ?? [],
    rest: spec.rest === true,
    parse: (input) => spec.parse(input),
    // `params` is always what this command's own `parse` answered.
    run: (ctx, params) => spec.run(ctx, params as P),
  };
}

/** The first word of a command line: a group of commands (`orgs ...`) or one command (`exec`). */
export type Group =
  | { readonly name: string; readonly summary: string; readonly commands: Readonly<Record<string, Command>> }
  | { readonly name: string; readonly summary: string; readonly command: Command };

export function defineGroup(name: string, summary: string, commands: Record<string, Command>): Group {
  return { name, summary, commands };
}

/** A command that is a word of its own, like `exec`. */
export function defineSingle(name: string, summary: string, command: Command): Group {
  return { name, summary, command };
}
