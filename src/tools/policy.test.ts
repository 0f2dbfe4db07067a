import assert from "node:assert/strict";
import { test } from "node:test";
import { readFile } from "node:fs/promises";
import { TOOL_POLICY_SCHEMA, ToolPolicy, type ToolRequest, toolPolicyProblem } from "./policy.js";

function req(tool: string, args: unknown = {}, kind: ToolRequest["tool"]["kind"] = "builtin"): ToolRequest {
  const server = kind === "mcp" ? tool.split("__")[0] : undefined;
  return {
    agent: { id: "ag_1", orgId: "org_1" },
    tool: { name: tool, kind, ...(server ? { server } : {}) },
    run: { id: "run_1", via: "loop" },
    arguments: args,
  };
}

test("validation: empty text is valid, and so are policies that fit the schema", () => {
  assert.equal(toolPolicyProblem(""), null);
  assert.equal(toolPolicyProblem("  \n"), null);
  assert.equal(
    toolPolicyProblem(`
      @id("read notes")
      permit(principal, action == Action::"call", resource == Tool::"read_file")
        when { context.arguments has path && context.arguments.path like "notes/*" };
      forbid(principal, action, resource in Server::"github") when { context.run.via == "gateway" };
      permit(principal is Agent, action, resource) when { resource.kind == "http" && principal.org == "org_1" };
    `),
    null,
  );
});

test("validation: bad text answers Cedar's message", () => {
  const syntax = toolPolicyProblem("permit(principal, action, resource") ?? "";
  assert.match(syntax, /unexpected end of input|expected/i);
  const unknownAttr =
    toolPolicyProblem(`permit(principal, action, resource) when { context.nope == 1 };`) ?? "";
  assert.match(unknownAttr, /attribute `nope`/);
  const unknownType = toolPolicyProblem(`permit(principal == User::"x", action, resource);`) ?? "";
  assert.match(unknownType, /User/);
  const unguarded =
    toolPolicyProblem(`permit(principal, action, resource) when { context.arguments.path == "x" };`) ?? "";
  assert.match(unguarded, /path/);
  const dup = toolPolicyProblem(
    `@id("a") permit(principal, action, resource); @id("a") forbid(principal, action, resource);`,
  );
  assert.match(dup ?? "", /two policies have the id "a"/);
  const template = toolPolicyProblem(`permit(principal == ?principal, action, resource);`);
  assert.match(template ?? "", /templates are not supported/);
});

test("decisions: an empty policy denies every call", () => {
  const p = ToolPolicy.compile("");
  for (const t of ["read_file", "run_command", "gh__search"]) {
    const d = p.decide(req(t));
    assert.equal(d.decision, "deny");
    assert.deepEqual(d.policies, []);
  }
});

test("decisions: permit by tool name, with the deciding policy's id", () => {
  const p = ToolPolicy.compile(`
    @id("reads") permit(principal, action == Action::"call", resource == Tool::"read_file");
    permit(principal, action, resource == Tool::"list_files");
  `);
  assert.deepEqual(p.decide(req("read_file", { path: "a" })), {
    decision: "allow",
    policies: ["reads"],
    errors: [],
  });
  assert.deepEqual(p.decide(req("list_files")).policies, ["policy1"]);
  const denied = p.decide(req("write_file", { path: "a", content: "x" }));
  assert.equal(denied.decision, "deny");
  assert.deepEqual(denied.policies, []);
});

test("decisions: forbid by an argument in the context wins over a permit", () => {
  const p = ToolPolicy.compile(`
    @id("all") permit(principal, action, resource);
    @id("no-secrets") forbid(principal, action, resource == Tool::"read_file")
      when { context.arguments has path && context.arguments.path like "secrets/*" };
    @id("no-rm") forbid(principal, action, resource == Tool::"run_command")
      when { context.arguments_json like "*rm -rf*" };
  `);
  assert.equal(p.decide(req("read_file", { path: "notes/a" })).decision, "allow");
  assert.deepEqual(p.decide(req("read_file", { path: "secrets/key" })), {
    decision: "deny",
    policies: ["no-secrets"],
    errors: [],
  });
  assert.equal(p.decide(req("run_command", { command: "ls -la" })).decision, "allow");
  assert.deepEqual(p.decide(req("run_command", { command: "rm -rf /" })).policies, ["no-rm"]);
  // An argument of another type is not typed in the context, so the guarded forbid does not
  // match; it is still in arguments_json.
  assert.equal(p.decide(req("read_file", { path: 7 })).decision, "allow");
});

test("decisions: MCP tools are members of their server", () => {
  const p = ToolPolicy.compile(`
    permit(principal, action, resource in Server::"docs");
    forbid(principal, action, resource == Tool::"docs__delete");
  `);
  assert.equal(p.decide(req("docs__search", {}, "mcp")).decision, "allow");
  assert.equal(p.decide(req("docs__delete", {}, "mcp")).decision, "deny");
  assert.equal(p.decide(req("other__search", {}, "mcp")).decision, "deny");
});

test("decisions: a policy that does not validate denies every call and says why", () => {
  const p = ToolPolicy.compile("permit(principal, action, resource) when { context.nope };");
  assert.notEqual(p.problem, null);
  const d = p.decide(req("read_file"));
  assert.equal(d.decision, "deny");
  assert.equal(d.errors.length, 1);
});

test("decisions stay right when more policies are open than Cedar holds preparsed", () => {
  const policies = Array.from({ length: 300 }, (_, i) =>
    ToolPolicy.compile(`permit(principal, action, resource == Tool::"t${i}");`),
  );
  for (const [i, p] of policies.entries()) assert.equal(p.decide(req(`t${i}`)).decision, "allow");
  // the first ones' ids were taken over meanwhile: each decides by its own text still
  for (const [i, p] of policies.entries()) {
    assert.equal(p.decide(req(`t${i}`)).decision, "allow", `t${i}`);
    assert.equal(p.decide(req(`t${i + 1}`)).decision, "deny", `t${i + 1}`);
  }
});

test("docs/agents.md: the schema shown is the schema used, and the worked example decides as it says", async () => {
  const md = await readFile(new URL("../../docs/agents.md", import.meta.url), "utf8");
  const blocks = [...md.matchAll(/```cedar\n([\s\S]*?)```/g)].map((m) => m[1] ?? "");
  const norm = (s: string) =>
    s
      .replace(/\/\/.*$/gm, "")
      .replace(/\s+/g, "")
      .replace(/,([}\]])/g, "$1");
  assert.equal(norm(blocks[0] ?? ""), norm(TOOL_POLICY_SCHEMA));
  const example = blocks[1] ?? "";
  assert.equal(toolPolicyProblem(example), null);
  const p = ToolPolicy.compile(example);
  const decide = (tool: string, args: unknown) =>
    p.decide(req(tool, args, tool.includes("__") ? "mcp" : "builtin"));
  assert.deepEqual(decide("write_file", { path: "src/main.ts" }).decision, "deny");
  assert.deepEqual(decide("write_file", { path: "notes/a.md" }).policies, ["write-notes"]);
  assert.deepEqual(decide("run_command", { command: "rm -rf build" }).policies, ["no-rm"]);
  assert.deepEqual(decide("run_command", { command: "make" }).policies, ["commands"]);
  assert.deepEqual(decide("read_file", { path: "secrets/key" }).policies, ["no-secrets"]);
  assert.deepEqual(decide("list_files", {}).policies, ["read"]);
  assert.deepEqual(decide("docs__search", {}).policies, ["docs"]);
  assert.deepEqual(decide("docs__delete", {}).policies, ["no-delete"]);
});
