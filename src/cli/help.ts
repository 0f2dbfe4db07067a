// Help texts, made from the command table so that they cannot drift from what is parsed.
import { commands, groups, optionHelp, optionValue, usageLine, type OptionName } from "./args.js";

const GROUP_SUMMARY: Record<string, string> = {
  serve: "run the control plane",
  orgs: "organisations and their members",
  machines: "machines: where agents live, one box each",
  agents: "agents: a home, a slot and a port block on a machine",
  guilds: "named groups of agents",
  exec: "run a command in an agent's box",
  runs: "recorded runs of commands",
  files: "files of an agent's home",
  usage: "disk use of an agent's home",
};

const GLOBAL: readonly OptionName[] = ["url", "header", "json", "help"];

function optionLines(names: readonly OptionName[]): string[] {
  const flag = (n: OptionName) => `--${n} ${optionValue[n] ?? ""}`.trimEnd();
  const width = Math.max(...names.map((n) => flag(n).length));
  return names.map((n) => `  ${flag(n).padEnd(width)}  ${optionHelp[n]}`);
}

function keysOf(group: string): string[] {
  return Object.keys(commands).filter((k) => k === group || k.startsWith(`${group} `));
}

/** The full help for nothing (the overview), a group or one command. */
export function helpText(topic?: string): string {
  if (topic !== undefined && commands[topic]) {
    const spec = commands[topic];
    const lines = [`usage: ${usageLine(topic)}`, "", spec.summary];
    if (spec.options.length > 0) lines.push("", "options:", ...optionLines(spec.options));
    lines.push("", "global options:", ...optionLines(GLOBAL));
    return `${lines.join("\n")}\n`;
  }
  if (topic !== undefined && groups.includes(topic)) {
    const keys = keysOf(topic);
    const width = Math.max(...keys.map((k) => usageLine(k).length));
    const lines = [`warren ${topic}: ${GROUP_SUMMARY[topic] ?? ""}`, "", "commands:"];
    for (const k of keys) lines.push(`  ${usageLine(k).padEnd(width)}  ${commands[k]?.summary ?? ""}`);
    lines.push("", `Run "warren ${topic} <command> --help" for a command's options.`);
    return `${lines.join("\n")}\n`;
  }
  const width = Math.max(...groups.map((g) => g.length));
  const lines = [
    "usage: warren <command> [options]",
    "",
    "commands:",
    ...groups.map((g) => `  ${g.padEnd(width)}  ${GROUP_SUMMARY[g] ?? ""}`),
    "",
    "global options:",
    ...optionLines(GLOBAL),
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
  if (topic !== undefined && groups.includes(topic)) {
    return `${keysOf(topic)
      .map((k) => `usage: ${usageLine(k)}`)
      .join("\n")}\n`;
  }
  return `usage: warren <command> [options]   (commands: ${groups.join(", ")})\nRun "warren --help" for more.\n`;
}
