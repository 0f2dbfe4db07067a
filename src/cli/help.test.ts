import assert from "node:assert/strict";
import { test } from "node:test";
import { commands, groupNames as groups } from "./catalog.js";
import { helpText, shortHelp, usageLine } from "./help.js";

/** The global options as every help text ends them, word for word. */
const GLOBAL_OPTIONS =
  "global options:\n" +
  "  --url <url>               the server (default $WARREN_URL, else http://127.0.0.1:8080)\n" +
  '  --header <"Name: value">  "Name: value" sent with every request; repeatable (also $WARREN_HEADERS, one a line)\n' +
  "  --json                    print the server's answer as JSON, for scripts\n" +
  "  --quiet                   print only the ids of what a list or create answers, one a line\n" +
  "  --help                    show help\n";

test("the overview names every group and the global options", () => {
  const text = helpText();
  for (const g of groups) assert.match(text, new RegExp(`^  ${g} `, "m"));
  for (const o of ["--url", "--header", "--json", "--help"]) assert.ok(text.includes(o));
});

test("a group's help lists each of its commands' usage", () => {
  const text = helpText("machines");
  for (const key of Object.keys(commands).filter((k) => k.startsWith("machines ")))
    assert.ok(text.includes(usageLine(key)), key);
  assert.ok(!text.includes("warren orgs"));
});

test("a command's help has its usage and its options", () => {
  const text = helpText("runs start");
  assert.ok(text.startsWith("usage: warren runs start <agent> [options] [-- argv...]\n"));
  for (const o of ["--input <text>", "--input-file <file>", "--timeout-s <s>", "--wait", "--command <text>"])
    assert.ok(text.includes(o), o);
});

test("short help after a mistake", () => {
  assert.match(shortHelp("orgs get"), /^usage: warren orgs get <org>\n/);
  assert.match(shortHelp("guilds"), /usage: warren guilds add-agent <guild> <agent>/);
  assert.match(shortHelp(undefined), /warren --help/);
});

test("the texts themselves: the overview and a command's help, word for word", () => {
  assert.equal(
    helpText(),
    "usage: warren <command> [options]\n" +
      "\n" +
      "commands:\n" +
      "  serve          run the control plane\n" +
      "  init           write STATE_ROOT, made absolute, to .env\n" +
      "  doctor         check this host and the server the CLI is pointed at\n" +
      "  login          store a personal token for the server\n" +
      "  orgs           organisations and their members\n" +
      "  areas          an organisation's areas: named folders that fence members\n" +
      "  machines       machines: where agents live, one box each\n" +
      "  agents         agents: a home, a slot and a port block on a machine\n" +
      "  guilds         named groups of agents\n" +
      "  exec           run a command in an agent's box\n" +
      "  shell          a terminal in an agent's box\n" +
      "  runs           recorded runs of commands\n" +
      "  schedules      standing orders to run an agent (cron or every N seconds)\n" +
      "  chat           talk with an agent\n" +
      "  conversations  an agent's conversations (talk with `warren chat`)\n" +
      "  versions       an agent's versions: list, read, make current\n" +
      "  canary         an agent's canary: a share of runs sent to another version\n" +
      "  flows          flows of agents and their instances (a shared /workspace each)\n" +
      "  evals          an agent's evaluation suites and runs\n" +
      "  approvals      tool calls that wait for a person's decision\n" +
      "  evidence       evidence packs: the governance record of a period\n" +
      "  files          files of an agent's home\n" +
      "  artifacts      notes, memories, scripts and collection records\n" +
      "  usage          disk use of an agent's home\n" +
      "  egress         an agent's connections out of its box\n" +
      "  secrets        secrets: values commands get as variables\n" +
      "  completion     print the shell completion script (bash or zsh)\n" +
      "  mcp            serve warren's tools to an MCP client on stdio\n" +
      "\n" +
      GLOBAL_OPTIONS +
      "\n" +
      'Run "warren <command> --help" for more. --json prints the server\'s answers for scripts.\n',
  );
  assert.equal(
    helpText("exec"),
    "usage: warren exec <agent> [options] [-- argv...]\n" +
      "\n" +
      "run a command in the agent's box, streaming its output; exits with its code\n" +
      "\n" +
      "options:\n" +
      "  --org <org>               the organisation: its id (org_...) or its name; agents and machines named are looked up in it (default $WARREN_ORG)\n" +
      "  --command <text>          shell text to run instead of the argv after --\n" +
      "  --cwd <dir>               the working folder (default: the agent's home)\n" +
      "  --env <NAME=value>        NAME=value for the command; repeatable\n" +
      "  --stdin-file <file>       a file fed to the command's stdin (- for this terminal's stdin)\n" +
      "  --timeout-ms <ms>         give up after this many milliseconds\n" +
      "  --limit-memory-mib <mib>  the command's own memory limit, in MiB (at least 16; never above its machine's)\n" +
      "  --limit-pids <n>          the command's own limit on processes (1-4096)\n" +
      "\n" +
      GLOBAL_OPTIONS,
  );
});

test("secrets create's help, word for word: the value never comes from an argument", () => {
  assert.equal(
    helpText("secrets create"),
    "usage: warren secrets create <name> --org <org> [options]\n" +
      "\n" +
      "create a secret; its value comes from stdin or --value-file, never an argument\n" +
      "\n" +
      "options:\n" +
      "  --org <org>             the organisation: its id (org_...) or its name; agents and machines named are looked up in it (default $WARREN_ORG)\n" +
      "  --description <text>    what it is for (members read this)\n" +
      "  --value-file <file>     read the value from this file (default: stdin; one trailing newline is dropped)\n" +
      "  --alias-of <secret>     make the name an alias of another secret's value\n" +
      "  --use <env|model|tool>  env (default): commands get it as a variable; model: a model's key, only the model gateway reads it; tool: a tool header's value, only the tool gateway reads it\n" +
      "  --grant <id>            who it reaches: an org_, gld_ or agt_ id; repeatable\n" +
      "  --host <host[:port]>    use model: a host its value may be sent to (default: the provider's official API host); repeatable\n" +
      "\n" +
      GLOBAL_OPTIONS,
  );
  const group = helpText("secrets");
  for (const c of ["create", "list", "get", "update", "delete", "grant", "revoke", "hosts", "rotate-key"])
    assert.ok(group.includes(`warren secrets ${c}`), c);
});
