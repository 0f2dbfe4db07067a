// Shell completion for bash and zsh, written from the command catalog: the first words, each
// group's commands and each command's options (and the global ones), so it cannot drift.
import type { Command } from "./command.js";
import { commands, groupNames } from "./catalog.js";
import { GLOBAL_OPTIONS } from "./options.js";

const optionWords = (c: Command | undefined): string =>
  [...(c?.options ?? []), ...GLOBAL_OPTIONS]
    .map((d) => `--${d.name}`)
    .filter((w, i, all) => all.indexOf(w) === i)
    .join(" ");

/** `group` → its commands, for the groups that have more than one word. */
function subcommands(): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const key of Object.keys(commands)) {
    const [group, sub] = key.split(" ");
    if (group === undefined || sub === undefined) continue;
    out.set(group, [...(out.get(group) ?? []), sub]);
  }
  return out;
}

/** The cases of a shell `case` on the command's words: `"orgs create") ...;;`. */
function optionCases(action: (words: string) => string): string {
  return Object.entries(commands)
    .map(([key, c]) => `    "${key}") ${action(optionWords(c))} ;;`)
    .join("\n");
}

function bash(): string {
  const subs = subcommands();
  return `# warren completion for bash: source it, e.g. warren completion bash > /etc/bash_completion.d/warren
_warren() {
  local cur="\${COMP_WORDS[COMP_CWORD]}" key
  if [[ $COMP_CWORD -eq 1 ]]; then
    COMPREPLY=($(compgen -W "${["help", ...groupNames].join(" ")} ${optionWords(undefined)} --version" -- "$cur"))
    return
  fi
  case "\${COMP_WORDS[1]}" in
${[...subs.keys()].map((g) => `    ${g}) key="\${COMP_WORDS[1]} \${COMP_WORDS[2]}" ;;`).join("\n")}
    *) key="\${COMP_WORDS[1]}" ;;
  esac
  if [[ $COMP_CWORD -eq 2 && "$cur" != -* ]]; then
    case "\${COMP_WORDS[1]}" in
${[...subs].map(([g, s]) => `    ${g}) COMPREPLY=($(compgen -W "${s.join(" ")}" -- "$cur")); return ;;`).join("\n")}
    esac
  fi
  if [[ "$cur" == -* ]]; then
    local words="${optionWords(undefined)}"
    case "$key" in
${optionCases((w) => `words="${w}"`)}
    esac
    COMPREPLY=($(compgen -W "$words" -- "$cur"))
    return
  fi
  COMPREPLY=($(compgen -f -- "$cur"))
}
complete -F _warren warren
`;
}

function zsh(): string {
  const subs = subcommands();
  return `#compdef warren
# warren completion for zsh: save it as _warren in a folder of $fpath, or source it after compinit
_warren() {
  local key
  if (( CURRENT == 2 )); then
    compadd -- ${["help", ...groupNames].join(" ")} ${optionWords(undefined)} --version
    return
  fi
  case "$words[2]" in
${[...subs.keys()].map((g) => `    ${g}) key="$words[2] $words[3]" ;;`).join("\n")}
    *) key="$words[2]" ;;
  esac
  if (( CURRENT == 3 )) && [[ "$words[CURRENT]" != -* ]]; then
    case "$words[2]" in
${[...subs].map(([g, s]) => `    ${g}) compadd -- ${s.join(" ")}; return ;;`).join("\n")}
    esac
  fi
  if [[ "$words[CURRENT]" == -* ]]; then
    case "$key" in
${optionCases((w) => `compadd -- ${w}`)}
    *) compadd -- ${optionWords(undefined)} ;;
    esac
    return
  fi
  _files
}
if [[ "$funcstack[1]" == _warren ]]; then _warren "$@"; else compdef _warren warren; fi
`;
}

/** The completion script of `shell`. */
export function completionScript(shell: "bash" | "zsh"): string {
  return shell === "bash" ? bash() : zsh();
}
