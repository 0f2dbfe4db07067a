// The command groups of commands/, as one table: `orgs create`, `exec`, ... and every option any of them takes.
import type { Command, Group, OptionDef } from "./command.js";
import { groups } from "./commands/index.js";
import { GLOBAL_OPTIONS } from "./options.js";

export { groups };

/** Every command by its words, e.g. `machines create` or `exec`, in the help's order. */
export const commands: Readonly<Record<string, Command>> = Object.fromEntries(
  groups.flatMap((g): [string, Command][] =>
    "command" in g
      ? [[g.name, g.command]]
      : Object.entries(g.commands).map(([n, c]) => [`${g.name} ${n}`, c]),
  ),
);

/** The first words of every command: `serve`, `orgs`, `exec`, ... */
export const groupNames: readonly string[] = groups.map((g) => g.name);

export function findGroup(name: string): Group | undefined {
  return groups.find((g) => g.name === name);
}

/** The command keys of a group (`orgs create`, ...), or `[name]` for a single command. */
export function keysOf(group: string): string[] {
  return Object.keys(commands).filter((k) => k === group || k.startsWith(`${group} `));
}

/**
 * Every option by name, the global ones first. Options may stand anywhere before `--`, so one
 * name means one kind of option throughout: a flag in one command and a value in another is refused.
 */
export function optionTable(all: readonly Group[] = groups): ReadonlyMap<string, OptionDef> {
  const table = new Map<string, OptionDef>();
  const add = (def: OptionDef, where: string) => {
    const seen = table.get(def.name);
    if (!seen) return void table.set(def.name, def);
    if ((seen.value === undefined) !== (def.value === undefined) || seen.repeatable !== def.repeatable)
      throw new Error(`--${def.name} of "warren ${where}" is not the same kind of option as elsewhere`);
  };
  for (const def of GLOBAL_OPTIONS) add(def, "");
  for (const g of all) {
    const entries = "command" in g ? [[g.name, g.command] as const] : Object.entries(g.commands);
    for (const [name, c] of entries)
      for (const def of c.options) add(def, name === g.name ? name : `${g.name} ${name}`);
  }
  return table;
}
