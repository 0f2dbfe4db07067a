// Help texts, made from the command modules so that they cannot drift from what is parsed.
import type { OptionDef } from "./command.js";
import { commands, findGroup, groupNames, keysOf } from "./catalog.js";
import { GLOBAL_OPTIONS } from "./options.js";

function optionLines(defs: readonly OptionDef[]): string[] {
  const flag = (d: OptionDef) => `--${d.name} ${d.value ?? ""}`.trimEnd();
  const width = Math.max(...defs.map((d) => flag(d).length));
  return defs.map((d) => `  ${flag(d).padEnd(width)}  ${d.help}`);
}

/** The usage line of one command, e.g. `warren machines create <name> --org <org> [options]`. */
export function usageLine(key: string): string {
  const spec = commands[key];
  if (!spec) return `warren ${key}`;
  const args = spec.args.map((a) => (a.endsWith("?") ? `[${a.slice(0, -1)}]` : `<${a}>`));
  const named = spec.required.map((name) => {
    const value = spec.options.find((d) => d.name === name)?.value ?? "";
    return `--${name} ${value}`.trimEnd();
  });
  const opts = spec.options.some((d) => !spec.required.includes(d.name)) ? ["[options]"] : [];
  const rest = spec.rest ? ["[-- argv...]"] : [];
  return ["warren", key, ...args, ...named, ...opts, ...rest].join(" ");
}

/** The full help for nothing (the overview), a group or one command. */
export function helpText(topic?: string): string {
  const spec = topic === undefined ? undefined : commands[topic];
  if (topic !== undefined && spec) {
    const lines = [`usage: ${usageLine(topic)}`, "", spec.summary];
    if (spec.options.length > 0) lines.push("", "options:", ...optionLines(spec.options));
    lines.push("", "global options:", ...optionLines(GLOBAL_OPTIONS));
    return `${lines.join("\n")}\n`;
  }
  const group = topic === undefined ? undefined : findGroup(topic);
  if (topic !== undefined && group) {
    const keys = keysOf(topic);
    const width = Math.max(...keys.map((k) => usageLine(k).length));
    const lines = [`warren ${topic}: ${group.summary}`, "", "commands:"];
    for (const k of keys) lines.push(`  ${usageLine(k).padEnd(width)}  ${commands[k]?.summary ?? ""}`);
    lines.push("", `Run "warren ${topic} <command> --help" for a command's options.`);
    return `${lines.join("\n")}\n`;
  }
  const width = Math.max(...groupNames.map((g) => g.length));
  const lines = [
    "usage: warren <command> [options]",
    "",
    "commands:",
    ...groupNames.map((g) => `  ${g.padEnd(width)}  ${findGroup(g)?.summary ?? ""}`),
    "",
    "global options:",
    ...optionLines(GLOBAL_OPTIONS),
    "",
    'Run "warren <command> --help" for more. --json prints the server\'s answers for scripts.',
  ];
  return `${lines.join("\n")}\n`;
}

/** A few lines after a usage error: the usage of the command or group concerned. */
export function shortHelp(topic?: string): string {
  if (topic !== undefined && commands[topic]) {
    return `usage: ${usageLine(topic)}\nRun "warren ${topic} --help" for its options.\n`;
  }
  if (topic !== undefined && findGroup(topic)) {
    return `${keysOf(topic)
      .map((k) => `usage: ${usageLine(k)}`)
      .join("\n")}\n`;
  }
  return `usage: warren <command> [options]   (commands: ${groupNames.join(", ")})\nRun "warren --help" for more.\n`;
}
