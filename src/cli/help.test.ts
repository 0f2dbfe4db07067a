import assert from "node:assert/strict";
import { test } from "node:test";
import { commands, groups, usageLine } from "./args.js";
import { helpText, shortHelp } from "./help.js";

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
